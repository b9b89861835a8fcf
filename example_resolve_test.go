package values_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentvalues/values"
)

// A dispatcher stores a tool's result, shows the model a preview, and when
// the model passes the result by reference to another tool, resolves the
// reference and validates the real value against that tool's schema.
func ExampleSessionValues_Prepare() {
	vals := values.New()

	// list_users returned 100 rows; the transcript gets a preview.
	var out strings.Builder
	out.WriteString(`{"users":[`)
	for i := range 100 {
		if i > 0 {
			out.WriteString(",")
		}
		fmt.Fprintf(&out, `{"id":%d,"name":"user%d"}`, i, i)
	}
	out.WriteString(`],"next":null}`)
	obs := vals.Observe([]byte(out.String()))
	fmt.Println(obs.Text)

	// The model calls send_report with the rows by reference.
	schema, err := values.CompileSchema([]byte(`{
		"type": "object",
		"properties": {
			"rows": {"type": "array", "items": {"type": "object", "required": ["id"]}},
			"title": {"type": "string"}
		},
		"required": ["rows"]
	}`))
	if err != nil {
		panic(err)
	}
	args, refs, err := vals.Prepare(schema, []byte(`{"rows":"$r1.users","title":"$r1.users.-1.name"}`))
	fmt.Println(refs, err)
	fmt.Println(len(args), "bytes, ending", string(args[len(args)-44:]))

	// A mistaken reference: the error names the reference and the fix.
	_, _, err = vals.Prepare(schema, []byte(`{"rows":"$r1","title":"$r2"}`))
	fmt.Println(err)
	var ve *values.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Violations[0].Pointer, ve.Violations[0].Ref)
	}

	// Output:
	// r1 = json(keys=2, bytes=2.5 KiB, users: array(len=100, bytes=2.5 KiB, items={id: number 0..99, name: text}, [:3]=[{id: 0, name: "user0"}, {id: 1, name: "user1"}, {id: 2, name: "user2"}], [-2:]=[{id: 98, name: "user98"}, {id: 99, name: "user99"}]), next: null)
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.<field>" for a part; read_value {"ref":"r1"} pages its bytes]
	// [$r1.users $r1.users.-1.name] <nil>
	// 2607 bytes, ending {"id":99,"name":"user99"}],"title":"user99"}
	// values: arguments do not match the tool's input schema (2 violations)
	// /rows: want array, got object (from $r1)
	// /title: "$r2" is not a stored value; stored: r1
	// /rows $r1
}
