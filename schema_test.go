package values

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustCompile(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", schema, err)
	}
	return s
}

// violationsOf returns the violations of a *ValidationError, and fails the
// test for any other error.
func violationsOf(t testing.TB, err error) []Violation {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	return ve.Violations
}

// ignoreErr compares Violation.Err by the sentinel it wraps.
var ignoreErr = cmp.Comparer(func(a, b error) bool {
	for _, s := range []error{ErrUnknownHandle, ErrNoPath} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return (a == nil) == (b == nil)
})

func TestValidateDrafts(t *testing.T) {
	tests := []struct {
		name, schema string
		valid        []string
		invalid      []string
	}{
		{"default is 2020-12", `{"prefixItems":[{"type":"integer"}],"items":false}`,
			[]string{`[1]`, `[]`}, []string{`["x"]`, `[1,2]`}},
		{"2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"integer"}]}`,
			[]string{`[1,"x"]`}, []string{`["x"]`}},
		{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","items":[{"type":"integer"}],"additionalItems":false}`,
			[]string{`[1]`}, []string{`[1,2]`, `["x"]`}},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","if":{"type":"string"},"then":{"minLength":2}}`,
			[]string{`"ab"`, `1`}, []string{`"a"`}},
		{"draft-07 asserts format", `{"$schema":"http://json-schema.org/draft-07/schema#","format":"email"}`,
			[]string{`"a@b.c"`}, []string{`"nope"`}},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#","exclusiveMinimum":5}`,
			[]string{`6`}, []string{`5`}},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","minimum":5,"exclusiveMinimum":true}`,
			[]string{`6`}, []string{`5`}},
		{"internal $ref", `{"$defs":{"row":{"type":"object","required":["id"]}},"type":"array","items":{"$ref":"#/$defs/row"}}`,
			[]string{`[{"id":1}]`}, []string{`[{"x":1}]`}},
		{"internal $ref by $id", `{"$id":"https://example.com/root.json","$defs":{"r":{"$id":"row.json","type":"integer"}},"items":{"$ref":"row.json"}}`,
			[]string{`[1]`}, []string{`["x"]`}},
		{"recursive $ref", `{"type":"object","properties":{"child":{"$ref":"#"},"n":{"type":"integer"}}}`,
			[]string{`{"child":{"child":{"n":1}}}`}, []string{`{"child":{"child":{"n":"x"}}}`}},
		{"big integers exactly", `{"type":"integer","maximum":12345678901234567890}`,
			[]string{`12345678901234567890`, `1e19`, `1.0`}, []string{`12345678901234567891`, `1.5`}},
		{"const beyond float64", `{"const":9007199254740993}`,
			[]string{`9007199254740993`, `9007199254740993.0`}, []string{`9007199254740992`}},
		{"enum of big numbers", `{"enum":[100000000000000000000000000001]}`,
			[]string{`100000000000000000000000000001`}, []string{`100000000000000000000000000000`, `1e29`}},
		{"numbers are not strings", `{"type":"number"}`, []string{`1`, `-0.5e-300`}, []string{`"1"`, `null`}},
		{"strings are not numbers", `{"type":"string"}`, []string{`"1"`}, []string{`1`}},
		{"null", `{"type":"null"}`, []string{`null`}, []string{`"null"`, `0`, `false`}},
		{"true schema", `true`, []string{`1`, `{}`}, nil},
		{"false schema", `false`, nil, []string{`1`, `{}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			for _, v := range tt.valid {
				if err := s.Validate([]byte(v)); err != nil {
					t.Errorf("Validate(%s) = %v, want nil", v, err)
				}
			}
			for _, v := range tt.invalid {
				if len(violationsOf(t, s.Validate([]byte(v)))) == 0 {
					t.Errorf("Validate(%s) = nil, want a violation", v)
				}
			}
		})
	}
}

func TestCompileSchemaRefusesOutsideRefs(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "row.json")
	if err := os.WriteFile(local, []byte(`{"type":"integer"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"integer"}`))
	}))
	defer srv.Close()
	for _, schema := range []string{
		`{"$ref":"file://` + local + `"}`,
		`{"items":{"$ref":"file://` + local + `#/type"}}`,
		`{"$ref":"` + local + `"}`,
		`{"$ref":"row.json"}`,
		`{"$ref":"../../etc/passwd"}`,
		`{"$ref":"file:///etc/passwd"}`,
		`{"properties":{"a":{"$ref":"` + srv.URL + `/s.json"}}}`,
		`{"$ref":"http://example.com/schema.json"}`,
		`{"$ref":"https://example.com/x#/defs/a"}`,
		`{"$id":"http://example.com/root.json","$ref":"other.json"}`,
		`{"$schema":"` + srv.URL + `/meta"}`,
		`{"$schema":"file://` + local + `"}`,
	} {
		t.Run(schema, func(t *testing.T) {
			s, err := CompileSchema([]byte(schema))
			if !errors.Is(err, ErrSchemaRef) {
				t.Errorf("CompileSchema = %v, %v; want ErrSchemaRef", s, err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "values: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the HTTP server was asked %d times", n)
	}
}

func TestCompileSchemaInvalid(t *testing.T) {
	for _, schema := range []string{``, `{`, `{"type":"nope"}`, `{"minLength":"x"}`, `{"required":"a"}`, `[1]`, `{"a":1} {}`, `{"pattern":"("}`} {
		t.Run(schema, func(t *testing.T) {
			if s, err := CompileSchema([]byte(schema)); err == nil {
				t.Errorf("CompileSchema(%s) = %v, want an error", schema, s)
			} else if !strings.HasPrefix(err.Error(), "values: invalid schema: ") {
				t.Errorf("error %q lacks the prefix", err)
			}
		})
	}
}

func TestValidateErrors(t *testing.T) {
	s := mustCompile(t, `{"type":"array"}`)
	for _, args := range []string{``, `[`, `[1,]`, "\"\xff\""} {
		if err := s.Validate([]byte(args)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("Validate(%q) = %v, want ErrInvalidJSON", args, err)
		}
	}
	// Deeper than encoding/json decodes: an error, not a crash.
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	err := s.Validate([]byte(deep))
	var ve *ValidationError
	if err == nil || errors.As(err, &ve) || !strings.HasPrefix(err.Error(), "values: ") {
		t.Errorf("Validate(deep) = %v, want a plain error", err)
	}
	// Exponents math/big refuses crash the validator; Validate reports them.
	for _, schema := range []string{`{"type":"integer"}`, `{"const":1}`, `{"enum":[1]}`, `{"maximum":5}`, `{"uniqueItems":true}`} {
		for _, args := range []string{`1e1000001`, `[1e1000001,1]`, `-1E-9999999`} {
			err := mustCompile(t, schema).Validate([]byte(args))
			if errors.As(err, &ve) && len(ve.Violations) > 0 {
				continue // rejected for another reason first
			}
			if err != nil && !strings.HasPrefix(err.Error(), "values: ") {
				t.Errorf("%s %s: %v", schema, args, err)
			}
		}
	}
}

// prepareStore holds r1 an object, r2 an array of rows, r3 text, r4 a
// number.
func prepareStore(t testing.TB) *SessionValues {
	t.Helper()
	s := New()
	for _, v := range []any{
		json.RawMessage(`{"rows":[{"id":1}],"next":null}`),
		json.RawMessage(`[{"id":1,"name":"a"},{"name":"b"},{"id":"3","name":"c"}]`),
		"some text",
		json.RawMessage(`42`),
	} {
		if _, err := s.Put(v); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

const rowsSchema = `{
	"type": "object",
	"properties": {
		"rows": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}},
		"note": {"type": "string"},
		"limit": {"type": "integer", "maximum": 100},
		"first": {"type": "object"}
	},
	"required": ["rows"],
	"additionalProperties": false
}`

func TestPrepare(t *testing.T) {
	vals := prepareStore(t)
	sch := mustCompile(t, rowsSchema)
	tests := []struct {
		name     string
		args     string
		want     string // resolved arguments, when valid
		resolved []string
		errs     []Violation
	}{
		{"valid", `{"rows":"$r1.rows","note":"$r3","limit":"$r4"}`, `{"rows":[{"id":1}],"note":"some text","limit":42}`,
			[]string{"$r1.rows", "$r3", "$r4"}, nil},
		{"literal arguments", `{"rows":[]}`, `{"rows":[]}`, nil, nil},
		{"escape passes the literal", `{"rows":[],"note":"$$r9"}`, `{"rows":[],"note":"$r9"}`, nil, nil},
		{"wrong kind from a reference", `{"rows":"$r1"}`, ``, []string{"$r1"}, []Violation{
			{Pointer: "/rows", Message: "want array, got object", Ref: "$r1"},
		}},
		{"violations inside a resolved value", `{"rows":"$r2"}`, ``, []string{"$r2"}, []Violation{
			{Pointer: "/rows/1", Message: "missing required property 'id'", Ref: "$r2"},
			{Pointer: "/rows/2/id", Message: "want integer, got string", Ref: "$r2"},
		}},
		{"text where a number is wanted", `{"rows":[],"limit":"$r3"}`, ``, []string{"$r3"}, []Violation{
			{Pointer: "/limit", Message: "want integer, got string", Ref: "$r3"},
		}},
		{"unknown handle", `{"rows":"$r9"}`, ``, nil, []Violation{
			{Pointer: "/rows", Message: `"$r9" is not a stored value; stored: r1…r4`, Ref: "$r9", Err: ErrUnknownHandle},
		}},
		{"missing path", `{"rows":"$r1.row"}`, ``, nil, []Violation{
			{Pointer: "/rows", Message: `"$r1.row": no such path: $r1 has no key "row"; its keys: rows, next`, Ref: "$r1.row", Err: ErrNoPath},
		}},
		{"unresolved even where a string is allowed", `{"rows":[],"note":"$r3.x"}`, ``, nil, []Violation{
			{Pointer: "/note", Message: `"$r3.x": no such path: $r3 is text, which has no fields or items`, Ref: "$r3.x", Err: ErrNoPath},
		}},
		{"written values", `{"rows":[{"id":1.5}],"limit":101,"extra":1}`, ``, nil, []Violation{
			{Pointer: "", Message: "properties not allowed by the schema: 'extra'"},
			{Pointer: "/limit", Message: "must be <= 100 but found 101"},
			{Pointer: "/rows/0/id", Message: "want integer, got number"},
		}},
		{"mixed", `{"first":"$r2.0","rows":["$r1",{"id":"$r2.-1.id"},"$r7"]}`, ``, []string{"$r2.0", "$r1", "$r2.-1.id"}, []Violation{
			{Pointer: "/rows/0", Message: "missing required property 'id'", Ref: "$r1"},
			{Pointer: "/rows/1/id", Message: "want integer, got string", Ref: "$r2.-1.id"},
			{Pointer: "/rows/2", Message: `"$r7" is not a stored value; stored: r1…r4`, Ref: "$r7", Err: ErrUnknownHandle},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, resolved, err := vals.Prepare(sch, []byte(tt.args))
			if diff := cmp.Diff(tt.errs, violationsOf(t, err), ignoreErr); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if tt.want != "" && string(got) != tt.want {
				t.Errorf("args = %s, want %s", got, tt.want)
			}
			if diff := cmp.Diff(tt.resolved, resolved); diff != "" {
				t.Errorf("resolved (-want +got):\n%s", diff)
			}
			if err != nil && got == nil {
				t.Errorf("a ValidationError came without the resolved arguments")
			}
		})
	}
}

// The text a model reads.
func TestValidationErrorText(t *testing.T) {
	vals := prepareStore(t)
	sch := mustCompile(t, rowsSchema)
	_, _, err := vals.Prepare(sch, []byte(`{"first":"$r9","rows":"$r1","limit":1}`))
	want := `values: arguments do not match the tool's input schema (2 violations)
/first: "$r9" is not a stored value; stored: r1…r4
/rows: want array, got object (from $r1)`
	if err == nil || err.Error() != want {
		t.Errorf("\n got %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrUnknownHandle) || errors.Is(err, ErrNoPath) {
		t.Errorf("errors.Is does not see the unresolved reference's cause")
	}
	_, _, err = vals.Prepare(sch, []byte(`{"rows":[],"extra":true}`))
	want = `values: arguments do not match the tool's input schema (1 violation)
(root): properties not allowed by the schema: 'extra'`
	if err == nil || err.Error() != want {
		t.Errorf("\n got %v\nwant %s", err, want)
	}
}

// A huge argument with a violation per item yields a bounded error.
func TestValidationErrorIsBounded(t *testing.T) {
	vals := New()
	items := strings.Repeat(`{"name":"`+strings.Repeat("x", 1000)+`"},`, 5000)
	vals.Put(json.RawMessage(`[` + items + `{}]`))
	sch := mustCompile(t, `{"properties":{"rows":{"items":{"required":["id"],"properties":{"name":{"maxLength":10}}}}}}`)
	_, _, err := vals.Prepare(sch, []byte(`{"rows":"$r1"}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if len(ve.Violations) != maxViolations || ve.Omitted != 2*5001-1-maxViolations {
		t.Errorf("%d violations kept, %d omitted", len(ve.Violations), ve.Omitted)
	}
	text := err.Error()
	if lines := strings.Count(text, "\n"); lines != maxViolationsListed+1 {
		t.Errorf("%d lines", lines)
	}
	if len(text) > 8<<10 || !strings.HasSuffix(text, fmt.Sprintf("… and %d more", 2*5001-1-maxViolationsListed)) {
		t.Errorf("error text is %d bytes, ends %q", len(text), text[max(0, len(text)-40):])
	}
	// Ordered by pointer, indexes by number.
	for i, want := range []string{"/rows/0", "/rows/0/name", "/rows/1", "/rows/1/name", "/rows/2"} {
		if ve.Violations[i].Pointer != want || ve.Violations[i].Ref != "$r1" {
			t.Errorf("violation %d at %s from %s, want %s from $r1", i, ve.Violations[i].Pointer, ve.Violations[i].Ref, want)
		}
	}
	if ve.Violations[20].Pointer != "/rows/10" {
		t.Errorf("violation 20 at %s, want /rows/10", ve.Violations[20].Pointer)
	}
}

// Keys that JSON pointers escape, or the validator URL-escapes, still map
// violations to their references.
func TestPrepareAwkwardKeys(t *testing.T) {
	vals := prepareStore(t)
	sch := mustCompile(t, `{"additionalProperties":{"type":"array"}}`)
	_, _, err := vals.Prepare(sch, []byte(`{"a b/c~%25é":"$r1","ok":[],"x\"":"$r4"}`))
	want := []Violation{
		{Pointer: "/a b~1c~0%25é", Message: "want array, got object", Ref: "$r1"},
		{Pointer: `/x"`, Message: "want array, got number", Ref: "$r4"},
	}
	if diff := cmp.Diff(want, violationsOf(t, err), ignoreErr); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

func TestPrepareWithoutSchema(t *testing.T) {
	vals := prepareStore(t)
	got, resolved, err := vals.Prepare(nil, []byte(`{"a":"$r4"}`))
	if err != nil || string(got) != `{"a":42}` || len(resolved) != 1 {
		t.Errorf("Prepare(nil) = %s, %v, %v", got, resolved, err)
	}
	_, _, err = vals.Prepare(nil, []byte(`{"a":"$r5"}`))
	if !errors.Is(err, ErrUnknownHandle) {
		t.Errorf("Prepare(nil) with an unknown handle = %v", err)
	}
}

func TestPrepareErrors(t *testing.T) {
	vals := New(WithMaxResolved(100))
	vals.Put(strings.Repeat("x", 200))
	sch := mustCompile(t, `{}`)
	if _, _, err := vals.Prepare(sch, []byte(`{"a":"$r1"}`)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if _, _, err := vals.Prepare(sch, []byte(`{"a":`)); !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("invalid: %v", err)
	}
}

func TestSchemaConcurrentUse(t *testing.T) {
	vals := prepareStore(t)
	sch := mustCompile(t, rowsSchema)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, _, err := vals.Prepare(sch, []byte(`{"rows":"$r2"}`)); len(violationsOf(t, err)) != 2 {
					t.Errorf("Prepare: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
