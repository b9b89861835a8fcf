package values_test

import (
	"fmt"
	"strings"

	"github.com/agentvalues/values"
)

// An agent loop stores every tool result and puts what Observe returns in
// the transcript: small results whole, large ones as a bounded preview with
// the line that says how to reach the rest.
func Example() {
	vals := values.New()

	// A tool printed a 100-row table as JSON.
	var out strings.Builder
	out.WriteString("[")
	for i := range 100 {
		if i > 0 {
			out.WriteString(",")
		}
		fmt.Fprintf(&out, `{"id":%d,"name":"user%d"}`, i, i)
	}
	out.WriteString("]")

	obs := vals.Observe([]byte(out.String()))
	fmt.Println(obs.Text)

	// Every row is still there.
	v, _ := vals.Get(obs.Handle)
	fmt.Println(v.Kind(), v.Len(), v.Size())
	// Output:
	// r1 = array(len=100, bytes=2.5 KiB, items={id: number 0..99, name: text}, [:3]=[{id: 0, name: "user0"}, {id: 1, name: "user1"}, {id: 2, name: "user2"}], [-2:]=[{id: 98, name: "user98"}, {id: 99, name: "user99"}])
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.0" for an item ("$r1.-1" is the last); read_value {"ref":"r1"} pages its bytes]
	// array 100 2581
}

// A preview states the kind and true size of a value and shows as much of
// it as its bound allows; here the bound is set small.
func ExampleRenderPreview() {
	vals := values.New(values.WithMaxPreview(160))
	for _, out := range []string{
		`{"content": "` + strings.Repeat(`line\n`, 3000) + `", "path": "./big.txt", "size_bytes": 15000}`,
		"FIRST LINE\n" + strings.Repeat("x", 5000) + "\nLAST LINE",
		"42",
	} {
		h := vals.PutOutput([]byte(out))
		v, _ := vals.Get(h)
		fmt.Println(values.RenderPreview(h, v))
	}
	// Output:
	// r1 = json(keys=3, bytes=18 KiB, content: text(len=15 KiB, lines=3000, head="line\nline\nline\nli…", tail="…\nline\n"), path: "./big.txt", size_bytes: 15000)
	// r2 = text(len=4.9 KiB, lines=3, head="FIRST LINE\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…", tail="…xxxxxxxxxxxxxxxxxxxxxxx\nLAST LINE")
	// r3 = text(len=2 B, lines=1) "42"
}

// The README's example: a tool result becomes a preview, and one field of
// one row is passed to the next tool by reference, checked by its schema.
func Example_readme() {
	vals := values.New()

	// A tool returned 100 rows: the transcript gets a preview, the store keeps them all.
	out := []byte(`{"rows":[`)
	for i := range 100 {
		if i > 0 {
			out = append(out, ',')
		}
		out = fmt.Appendf(out, `{"id":%d,"email":"user%d@example.com"}`, i, i)
	}
	out = append(out, "]}"...)
	fmt.Println(vals.Observe(out).Text)

	// The model passes one row's email by reference; the schema checks the real value.
	schema, _ := values.CompileSchema([]byte(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`))
	args, refs, err := vals.Prepare(schema, []byte(`{"to":"$r1.rows.57.email"}`))
	fmt.Println(string(args), refs, err)
	_, _, err = vals.Prepare(schema, []byte(`{"to":"$r1.rows.57"}`))
	fmt.Println(err)
	// Output:
	// r1 = json(keys=1, bytes=3.8 KiB, rows: array(len=100, bytes=3.8 KiB, items={id: number 0..99, email: text}, [:3]=[{id: 0, email: "user0@example.com"}, {id: 1, email: "user1@example.com"}, {id: 2, email: "user2@example.com"}], [-2:]=[{id: 98, email: "user98@example.com"}, {id: 99, email: "user99@example.com"}]))
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.<field>" for a part; read_value {"ref":"r1"} pages its bytes]
	// {"to":"user57@example.com"} [$r1.rows.57.email] <nil>
	// values: arguments do not match the tool's input schema (1 violation)
	// /to: want string, got object (from $r1.rows.57)
}
