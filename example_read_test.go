package values_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentvalues/values"
)

// A tool result too large for the transcript is shown as a preview and a
// hint; the model then reads the part it needs with read_value, one bounded
// page at a time, each page ending with the call for the next one.
func ExampleSessionValues_HandleReadValue() {
	vals := values.New()
	tool := values.ReadValueTool() // register tool.Name, tool.Description, tool.InputSchema with the model

	// A read_file tool returned a 100-line log inside a JSON object.
	var log strings.Builder
	for i := range 100 {
		fmt.Fprintf(&log, "12:00:%02d GET /items/%d 200\n", i%60, i)
	}
	out, _ := json.Marshal(map[string]any{"path": "app.log", "content": log.String()})

	fmt.Println("tool result:")
	fmt.Println(vals.Observe(out).Text)

	// The model asks for the log's text, in small pages.
	for _, args := range []string{
		`{"ref":"$r1.content","limit":200}`,
		`{"ref":"$r1.content","offset":104,"limit":200}`,
		`{"ref":"$r1.content","offset":99999}`,
	} {
		fmt.Printf("\ncall: %s %s\n", tool.Name, args)
		page, err := vals.HandleReadValue([]byte(args))
		if err != nil {
			fmt.Println("tool error:", err)
			continue
		}
		fmt.Print(page, "\n")
	}
	// Output:
	// tool result:
	// r1 = json(keys=2, bytes=2.8 KiB, content: text(len=2.6 KiB, lines=100, head="12:00:00 GET /items/0 200\n12:00:01 GET /items/1 200\n12:00:02 GET /items/2 200\n12:00:03 GET /items/3 200\n12:00:04 GET /items/4 200\n12:00:05 GET /items/5 200\n12:00:06 GET /items/6 200\n12:00:07 GET /items/7 200\n12:00:08 GET /items/8 200\n12:00:09 GET /items/9 200\n12:00:10 GET /items/10 200\n12:00:11 GET /items/11 200\n12:00:12 GET /items/12 200\n12:00:13 GET /items/13 200\n12:00:14 GET …", tail="…2:00:33 GET /items/93 200\n12:00:34 GET /items/94 200\n12:00:35 GET /items/95 200\n12:00:36 GET /items/96 200\n12:00:37 GET /items/97 200\n12:00:38 GET /items/98 200\n12:00:39 GET /items/99 200\n"), path: "app.log")
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.<field>" for a part; read_value {"ref":"r1"} pages its bytes]
	//
	// call: read_value {"ref":"$r1.content","limit":200}
	// 12:00:00 GET /items/0 200
	// 12:00:01 GET /items/1 200
	// 12:00:02 GET /items/2 200
	// 12:00:03 GET /items/3 200
	// [shown: bytes 0-103 of 2690; next page: read_value {"ref":"$r1.content","offset":104}]
	//
	// call: read_value {"ref":"$r1.content","offset":104,"limit":200}
	// 12:00:04 GET /items/4 200
	// 12:00:05 GET /items/5 200
	// 12:00:06 GET /items/6 200
	// 12:00:07 GET /items/7 200
	// [shown: bytes 104-207 of 2690; next page: read_value {"ref":"$r1.content","offset":208}]
	//
	// call: read_value {"ref":"$r1.content","offset":99999}
	// [end of "$r1.content": 2690 bytes in all, none at offset 99999]
}
