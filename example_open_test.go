package values_test

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// A session kept in a store directory outlives the process: Open starts
// it, and after a restart Open gives back its handles, and references to
// them mean what they meant. New handles go on after the last one.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "values-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The first run starts session "chat-42" and stores two tool results.
	st, err := store.OpenDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	vals, err := values.Open(st, "chat-42")
	if err != nil {
		log.Fatal(err)
	}
	vals.PutOutput([]byte(`{"files":["go.mod","main.go","main_test.go"]}`))
	vals.PutOutput([]byte("ok  \texample.com/app\t0.012s\n"))
	st.Close()

	// A later run opens the session.
	st, err = store.OpenDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	vals, err = values.Open(st, "chat-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(vals.Handles())
	v, _ := vals.Get("r1")
	fmt.Println(values.RenderPreview("r1", v)) // from the record: no body is read
	args, _, err := vals.Resolve([]byte(`{"path":"$r1.files.-1"}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(args))
	fmt.Println(vals.PutOutput([]byte("PASS")))

	// Another session in the same store starts empty.
	other, err := values.Open(st, "chat-43")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(other.Len())
	// Output:
	// [r1 r2]
	// r1 = json(keys=1, bytes=45 B, files: array(len=3, bytes=35 B, ["go.mod", "main.go", "main_test.go"]))
	// {"path":"main_test.go"}
	// r3
	// 0
}

// Read pages a stored value, or a part of it named by a reference, in
// pages of at most limit bytes (the continuation line included). Each page
// but the last ends with a line giving the read_value call for the next,
// which starts at the page's Next.
func ExampleSessionValues_Read() {
	vals := values.New()
	var lines strings.Builder
	for i := range 6 {
		fmt.Fprintf(&lines, "12:00:%02d GET /items/%d 200\n", i, i)
	}
	out, _ := json.Marshal(map[string]string{"path": "app.log", "content": lines.String()})
	h := vals.PutOutput(out) // a tool's result: JSON with a log inside

	for offset := 0; ; {
		p, err := vals.Read("$"+h+".content", offset, 150)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("-- bytes %d-%d of %d, more: %v\n", p.Offset, p.Next-1, p.Total, p.More)
		fmt.Println(p) // what the model is shown
		if !p.More {
			break
		}
		offset = p.Next
	}
	// Output:
	// -- bytes 0-51 of 156, more: true
	// 12:00:00 GET /items/0 200
	// 12:00:01 GET /items/1 200
	// [shown: bytes 0-51 of 156; next page: read_value {"ref":"$r1.content","offset":52}]
	// -- bytes 52-155 of 156, more: false
	// 12:00:02 GET /items/2 200
	// 12:00:03 GET /items/3 200
	// 12:00:04 GET /items/4 200
	// 12:00:05 GET /items/5 200
}
