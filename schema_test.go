package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/jsontext"
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
	for _, s := range []error{ErrUnknownHandle, ErrNoPath, ErrBadRef, ErrTooComplex} {
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
	// Deeper than encoding/json decodes: a violation, not a crash.
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	err := s.Validate([]byte(deep))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || !errors.Is(err, ErrTooComplex) {
		t.Errorf("Validate(deep) = %v, want one violation wrapping ErrTooComplex", err)
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

// nested returns the JSON value v inside n arrays, and the JSON pointer of
// the array at depth d (1 is the outermost).
func nested(n int, v string) string {
	return strings.Repeat("[", n) + v + strings.Repeat("]", n)
}

func zeros(depth int) string { return strings.Repeat("/0", depth) }

// Arguments within the limits are checked without allocating: every
// call's arguments are.
func TestCheckLimitsAllocs(t *testing.T) {
	args := []byte(`{"path":"src/main.go","rows":[1,2.5,-3e2,{"id":"x","ok":true}],"deep":` + nested(20, "null") + `}`)
	if n := testing.AllocsPerRun(10, func() {
		if vs, more, shape := checkLimits(args); len(vs) != 0 || more != 0 || shape != (argsShape{values: 30, depth: 21}) {
			t.Fatalf("checkLimits = %v, %d, %+v", vs, more, shape)
		}
	}); n != 0 {
		t.Errorf("checkLimits allocated %v times, want 0", n)
	}
}

// Arguments past a limit of validation are reported, each number and each
// container past it by pointer, and not validated: no schema violation is
// reported with them.
func TestValidateLimits(t *testing.T) {
	intArray := `{"properties":{"xs":{"type":"array","items":{"type":"integer"}}}}`
	recursive := `{"type":"array","items":{"$ref":"#"}}`
	many := func(n int, v string) string {
		return `{"xs":[` + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + `]}`
	}
	digits := func(n int) string { return "0." + strings.Repeat("3", n-1) }
	tests := []struct {
		name, schema, args string
		want               []string // pointers of the violations, all wrapping ErrTooComplex
		omitted            int
	}{
		{"the review's numbers", intArray, many(60, "1e999999"), pointers("/xs/", 60), 0},
		{"the review's nesting", recursive, nested(1600, "1"), []string{zeros(maxArgsDepth)}, 0},
		{"exponent at the limit", intArray, many(4, "1e400"), nil, 0},
		{"largest at the limit", intArray, `{"xs":[9.99e400,-9E+400,100e398,-0.5e401]}`, nil, 0},
		{"smallest at the limit", `{}`, `[1e-400,-1.5E-400,0.001e-397,100e-402]`, nil, 0},
		{"too large", intArray, `{"xs":[1e401,-1E+401,1000e399,0.1e402,` + "1" + strings.Repeat("0", 401) + `]}`, pointers("/xs/", 5), 0},
		{"too small", `{}`, `[1e-401,-1.5E-401,0.0001e-397,10e-402]`, pointers("/", 4), 0},
		{"zero with a huge exponent", `{}`, `[0e400,-0.0e-400,0e401,0.000E-401,0e99999999999999999999]`, []string{"/2", "/3", "/4"}, 0},
		{"digits at the limit", `{}`, `[` + digits(maxNumberDigits) + `]`, nil, 0},
		{"too many digits", `{}`, `{"a":[` + digits(maxNumberDigits+1) + `]}`, []string{"/a/0"}, 0},
		{"exponent digits count", `{}`, `[1e` + strings.Repeat("0", maxNumberDigits-1) + `1]`, []string{"/0"}, 0},
		{"depth at the limit", recursive, nested(maxArgsDepth, ""), nil, 0},
		{"depth at the limit, failing", recursive, nested(maxArgsDepth-1, "1"), []string{}, 0},
		{"one level too deep", recursive, nested(maxArgsDepth+1, ""), []string{zeros(maxArgsDepth)}, 0},
		{"objects too deep", `{}`, strings.Repeat(`{"k~/":`, maxArgsDepth+1) + "1" + strings.Repeat("}", maxArgsDepth+1),
			[]string{strings.Repeat("/k~0~1", maxArgsDepth)}, 0},
		{"pointers count items and keys", `{}`, `{"a":[1,{"b":"x","c":[{},[],"d",` + nested(maxArgsDepth-3, "") + `]}],"e":1e999}`,
			[]string{"/a/1/c/3" + zeros(maxArgsDepth-4), "/e"}, 0},
		{"inside a too deep value is not looked at", `{}`, nested(maxArgsDepth+1, "1e999"), []string{zeros(maxArgsDepth)}, 0},
		{"numbers in strings and keys are text", intArray, `{"xs":[1],"1e999":"1e999","s":"[[[[-1e999"}`, nil, 0},
		{"many", `{}`, many(1000, "1e999"), pointers("/xs/", maxViolations), 1000 - maxViolations},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sch := mustCompile(t, tt.schema)
			err := sch.Validate([]byte(tt.args))
			if tt.want != nil && len(tt.want) == 0 { // a schema violation, not a limit
				if vs := violationsOf(t, err); len(vs) == 0 || errors.Is(err, ErrTooComplex) {
					t.Errorf("Validate = %v, want schema violations only", err)
				}
				return
			}
			var got []string
			for _, v := range violationsOf(t, err) {
				got = append(got, v.Pointer)
				if !errors.Is(v.Err, ErrTooComplex) || v.Message != strings.TrimPrefix(v.Err.Error(), "values: ") {
					t.Errorf("%s: message %q, error %v", v.Pointer, v.Message, v.Err)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pointers (-want +got):\n%s", diff)
			}
			var ve *ValidationError
			if errors.As(err, &ve) && ve.Omitted != tt.omitted {
				t.Errorf("%d omitted, want %d", ve.Omitted, tt.omitted)
			}
			// Prepare checks the same arguments the same way.
			_, _, perr := New().Prepare(sch, []byte(tt.args))
			if diff := cmp.Diff(violationsOf(t, err), violationsOf(t, perr), ignoreErr); diff != "" {
				t.Errorf("Prepare differs from Validate (-Validate +Prepare):\n%s", diff)
			}
		})
	}
}

func pointers(prefix string, n int) []string {
	var p []string
	for i := range n {
		p = append(p, prefix+strconv.Itoa(i))
	}
	return p
}

// The messages a model reads about arguments past a limit.
func TestValidateLimitMessages(t *testing.T) {
	sch := mustCompile(t, `{}`)
	long := "1." + strings.Repeat("2", 1000) + "3"
	tests := []struct{ args, want string }{
		{`1e999999`, "too complex to validate: the number 1e999999 is too large to validate; magnitudes below 1e401 can be"},
		{`-2.5E-401`, "too complex to validate: the number -2.5E-401 is too close to zero to validate; write 0, or a magnitude of at least 1e-400"},
		{`0e401`, "too complex to validate: the number 0e401 has an exponent beyond ±400; write it as 0"},
		{long, "too complex to validate: the number 1.2222222222…222222222223 has 1002 digits, more than the 1000 that can be validated"},
		{nested(maxArgsDepth+1, ""), "too complex to validate: nested more than 128 levels deep; pass a flatter value"},
	}
	for _, tt := range tests {
		vs := violationsOf(t, sch.Validate([]byte(tt.args)))
		if len(vs) != 1 || vs[0].Message != tt.want {
			t.Errorf("Validate(%.20s…) = %+v\nwant message %s", tt.args, vs, tt.want)
		}
	}
}

// A reference that supplies a value past a limit is named, and the
// violation is reported beside unresolved references.
func TestPrepareLimits(t *testing.T) {
	vals := New()
	deep, _ := vals.Put(json.RawMessage(nested(maxArgsDepth, "")))
	sch := mustCompile(t, `{"type":"object"}`)
	_, _, err := vals.Prepare(sch, []byte(`{"a":"$`+deep+`","b":"$r9","c":[1e400,1e401]}`))
	want := []Violation{
		{Pointer: "/a" + zeros(maxArgsDepth-1), Message: "too complex to validate: nested more than 128 levels deep; pass a flatter value", Ref: "$" + deep, Err: ErrTooComplex},
		{Pointer: "/b", Message: `"$r9" is not a stored value; stored: r1`, Ref: "$r9", Err: ErrUnknownHandle},
		{Pointer: "/c/1", Message: "too complex to validate: the number 1e401 is too large to validate; magnitudes below 1e401 can be", Err: ErrTooComplex},
	}
	if diff := cmp.Diff(want, violationsOf(t, err), ignoreErr); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	if !errors.Is(err, ErrTooComplex) || !errors.Is(err, ErrUnknownHandle) {
		t.Errorf("errors.Is does not see both causes: %v", err)
	}
	if text := err.Error(); !strings.Contains(text, "pass a flatter value (from $"+deep+")") || strings.Contains(text, "(from $r9)") {
		t.Errorf("error text:\n%s", text)
	}
	// Without a schema nothing is validated, so no limit applies.
	if _, _, err := vals.Prepare(nil, []byte(`{"a":"$`+deep+`","c":[1e401]}`)); err != nil {
		t.Errorf("Prepare(nil) = %v", err)
	}
}

// Malformed references are reported as unresolved ones are, with or
// without a schema; escaped ones pass as written.
func TestPrepareBadRefs(t *testing.T) {
	vals := prepareStore(t)
	sch := mustCompile(t, `{}`)
	for _, args := range []string{`{"a":"$r1.rows."}`, `{"a":"$r1..rows"}`, `{"a":"$r1.rows.0.id\\x"}`, `{"a":"$r1rows"}`} {
		for _, s := range []*Schema{sch, nil} {
			got, _, err := vals.Prepare(s, []byte(args))
			vs := violationsOf(t, err)
			if len(vs) != 1 || vs[0].Pointer != "/a" || !errors.Is(vs[0].Err, ErrBadRef) || !errors.Is(err, ErrBadRef) {
				t.Errorf("Prepare(%v, %s) = %v, want one violation at /a wrapping ErrBadRef", s != nil, args, err)
			}
			if string(got) != args {
				t.Errorf("Prepare(%v, %s) returned %s, want the arguments as written", s != nil, args, got)
			}
		}
	}
	got, _, err := vals.Prepare(sch, []byte(`{"a":"$$r1..x","b":"$$r1.rows."}`))
	if err != nil || string(got) != `{"a":"$r1..x","b":"$r1.rows."}` {
		t.Errorf("escaped: %s, %v", got, err)
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

// FuzzCheckLimits checks the limits pass against a model over the token
// stream of encoding/json: the same pointers, in document order, duplicate
// keys included.
func FuzzCheckLimits(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,{"b":"x","c":[{},[],"d",1e401]}],"e":1e999}`, `[1e400,1e-401,0e401,0.0001e-397,-9.9E+400]`,
		`{"k":{"k":[[[1e999]]]},"k":2e999}`, nested(maxArgsDepth+1, "1"), `[{},{"a":[]},1e999,{"b":{}},2e999]`,
		`"1e999"`, `1e999`, `[` + strings.Repeat("3", maxNumberDigits+1) + `]`, `{"a~/\u00e9":1e999}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if err := jsontext.Valid(args); err != nil {
			return
		}
		vs, more, shape := checkLimits(args)
		if want := modelShape(t, args); len(vs) == 0 && shape != want {
			t.Fatalf("checkLimits(%q) measured %+v, want %+v", args, shape, want)
		}
		var got []string
		for _, v := range vs {
			if !errors.Is(v.Err, ErrTooComplex) {
				t.Fatalf("%s: %v does not wrap ErrTooComplex", v.Pointer, v.Err)
			}
			got = append(got, v.Pointer)
		}
		want := modelLimits(t, args)
		if len(want) > maxViolations {
			want, more = want[:maxViolations], more-(len(want)-maxViolations)
		}
		if diff := cmp.Diff(want, got); diff != "" || more != 0 {
			t.Fatalf("checkLimits(%q) (-model +got):\n%s\nmore %d off", args, diff, more)
		}
	})
}

// modelShape counts the values in the valid JSON args, every token of
// encoding/json but keys and closing delimiters, and finds their deepest
// nesting.
func modelShape(t *testing.T, args []byte) argsShape {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	type frame struct{ object, wantKey bool }
	var stack []frame
	var shape argsShape
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return shape
		}
		if err != nil {
			t.Fatalf("Token: %v", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if k := len(stack) - 1; k >= 0 && stack[k].object {
			stack[k].wantKey = !stack[k].wantKey
			if !stack[k].wantKey {
				continue // tok was a key
			}
		}
		shape.values++
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
			shape.depth = max(shape.depth, len(stack))
		}
	}
}

// modelLimits returns the pointers of the numbers and containers past the
// limits of validation in the valid JSON args, in document order.
func modelLimits(t *testing.T, args []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	type frame struct {
		object bool
		key    string // the current key of an object
		index  int    // the index of the next item of an array
		named  bool   // the next token is a key
	}
	var stack []frame
	pointer := func() string {
		var b strings.Builder
		for _, f := range stack {
			b.WriteByte('/')
			if f.object {
				b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(f.key))
			} else {
				b.WriteString(strconv.Itoa(f.index - 1))
			}
		}
		return b.String()
	}
	var out []string
	skip := 0 // depth inside a container past the limit
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Token: %v", err)
		}
		if skip > 0 {
			if d, ok := tok.(json.Delim); ok {
				if d == '[' || d == '{' {
					skip++
				} else {
					skip--
				}
			}
			continue
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 {
			f := &stack[n-1]
			if f.object && f.named {
				f.key, f.named = tok.(string), false
				continue
			}
			if f.object {
				f.named = true
			} else {
				f.index++
			}
		}
		switch tok := tok.(type) {
		case json.Delim:
			if len(stack) == maxArgsDepth {
				out = append(out, pointer())
				skip = 1
				continue
			}
			stack = append(stack, frame{object: tok == '{', named: tok == '{'})
		case json.Number:
			if modelNumberPast(string(tok)) {
				out = append(out, pointer())
			}
		}
	}
}

// modelNumberPast reports whether the JSON number s has more than
// maxNumberDigits digits or a normalized exponent beyond maxNumberExponent.
func modelNumberPast(s string) bool {
	s = strings.TrimPrefix(s, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if len(intPart)+len(frac)+len(strings.TrimLeft(exp, "+-")) > maxNumberDigits {
		return true
	}
	e := new(big.Int)
	if exp != "" {
		e.SetString(strings.TrimPrefix(exp, "+"), 10)
	}
	digits := intPart + frac
	if trimmed := strings.TrimLeft(digits, "0"); trimmed != "" {
		// The first nonzero digit is at position len(digits)-len(trimmed);
		// the point after position len(intPart).
		e.Add(e, big.NewInt(int64(len(intPart)-(len(digits)-len(trimmed))-1)))
	}
	return e.CmpAbs(big.NewInt(maxNumberExponent)) > 0
}

// filterTreeSchema is a filter tree: a node is an "and", an "or" or a
// leaf, tried in turn by "oneOf". The "and" and "or" branches both accept
// the shape of an object with "args" and recurse into it before "const"
// decides, so validating a tree d levels deep applies the schema about 2^d
// times. The proxy's hostile-server test offers the same schema.
const filterTreeSchema = `{"type":"object","properties":{"filter":{"$ref":"#/$defs/node"}},"required":["filter"],"$defs":{` +
	`"node":{"oneOf":[{"$ref":"#/$defs/and"},{"$ref":"#/$defs/or"},{"$ref":"#/$defs/leaf"}]},` +
	`"and":{"type":"object","properties":{"op":{"const":"and"},"args":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["op","args"]},` +
	`"or":{"type":"object","properties":{"op":{"const":"or"},"args":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["op","args"]},` +
	`"leaf":{"type":"object","properties":{"field":{"type":"string"},"eq":{"type":["string","number"]}},"required":["field","eq"]}}}`

// filterTree returns filter arguments depth levels deep, alternating "and"
// and "or" around a leaf whose "eq" is leaf.
func filterTree(depth int, leaf string) string {
	node := `{"field":"x","eq":` + leaf + `}`
	for i := range depth {
		op := "and"
		if i%2 == 1 {
			op = "or"
		}
		node = `{"op":"` + op + `","args":[` + node + `]}`
	}
	return `{"filter":` + node + `}`
}

// Validation that would take exponential time stops within its budget
// of steps with ErrTooComplex at the root, whatever the depth; shallow
// trees are validated as before, and the schema validates normally
// afterwards. The budget is counted, not timed: with the wall-clock
// backstop out of reach, the outcome is the same on any machine.
func TestValidateBudget(t *testing.T) {
	sch := mustCompile(t, filterTreeSchema)
	sch.backstop = 24 * time.Hour
	tests := []struct {
		name string
		args string
		want string // "" for valid, "schema" for schema violations only, "steps" for the budget
	}{
		{"shallow, valid", filterTree(3, "1"), ""},
		{"shallow, invalid leaf", filterTree(3, "true"), "schema"},
		{"the review's 16 levels", filterTree(16, "1"), "steps"},
		{"the review's 20 levels", filterTree(20, "true"), "steps"},
		{"deep: each application counts more", filterTree(60, "1"), "steps"},
		{"again shallow, valid", filterTree(5, `"y"`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sch.Validate([]byte(tt.args))
			switch tt.want {
			case "":
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
			case "schema":
				if vs := violationsOf(t, err); len(vs) == 0 || errors.Is(err, ErrTooComplex) {
					t.Fatalf("Validate = %v, want schema violations", err)
				}
			default:
				want := []Violation{{Message: "too complex to validate: checking the arguments against the schema took too many steps; pass a shallower or smaller value", Err: ErrTooComplex}}
				if diff := cmp.Diff(want, violationsOf(t, err), ignoreErr); diff != "" {
					t.Fatalf("violations (-want +got):\n%s", diff)
				}
				if !strings.Contains(err.Error(), "\n(root): too complex to validate") {
					t.Errorf("Error() = %s", err)
				}
			}
			_, _, perr := New().Prepare(sch, []byte(tt.args))
			if diff := cmp.Diff(violationsOf(t, err), violationsOf(t, perr), ignoreErr); diff != "" {
				t.Errorf("Prepare differs from Validate (-Validate +Prepare):\n%s", diff)
			}
		})
	}
}

// An application of a subschema counts as more steps in deeply nested
// arguments, where the validator's cost per application grows: the same
// schema applied to the same number of values nested deeper takes
// stepCost of the depth per application.
func TestValidateStepCost(t *testing.T) {
	sch := mustCompile(t, `{"type":"array","items":{"$ref":"#"}}`)
	sch.backstop = 24 * time.Hour
	steps := func(depth int) int {
		t.Helper()
		args := []byte(nested(depth, ""))
		_, _, shape := checkLimits(args)
		if shape.depth != depth {
			t.Fatalf("depth of %s = %d", args, shape.depth)
		}
		vs, n, err := sch.violations(args, shape)
		if vs != nil || err != nil {
			t.Fatalf("violations of %d nested arrays: %v, %v", depth, vs, err)
		}
		return n
	}
	// Up to 31 levels an application is one step: steps grow by the same
	// number a level.
	perLevel := steps(11) - steps(10)
	base := steps(10) - 10*perLevel
	if perLevel <= 0 || steps(31) != base+31*perLevel {
		t.Fatalf("steps: %d a level from %d, %d at 31 levels", perLevel, base, steps(31))
	}
	for _, tt := range []struct{ depth, cost int }{{32, 2}, {64, 5}, {100, 10}, {maxArgsDepth, 17}} { // 1 + depth²/1024
		if got, want := steps(tt.depth), (base+tt.depth*perLevel)*tt.cost; got != want {
			t.Errorf("%d levels: %d steps, want %d applications of %d steps", tt.depth, got, base+tt.depth*perLevel, tt.cost)
		}
	}
}

// The step budget grows with the arguments: a schema applying a few
// subschemas to each of many values is not refused, though it takes more
// steps than a validation of small arguments may.
func TestValidateBudgetGrowsWithArgs(t *testing.T) {
	sch := mustCompile(t, `{"type":"object","properties":{"rows":{"type":"array","items":{"oneOf":[`+
		`{"type":"object","properties":{"id":{"type":"integer"},"kind":{"const":"a"}},"required":["kind"]},`+
		`{"type":"object","properties":{"id":{"type":"integer"},"kind":{"const":"b"}},"required":["kind"]}]}}}}`)
	sch.backstop = 24 * time.Hour
	var b strings.Builder
	b.WriteString(`{"rows":[`)
	const n = 10_000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"kind":"b"}`, i)
	}
	b.WriteString(`]}`)
	args := []byte(b.String())
	if err := sch.Validate(args); err != nil {
		t.Fatalf("Validate of %d rows: %.300v", n, err)
	}
	_, _, shape := checkLimits(args)
	if _, steps, err := sch.violations(args, shape); err != nil || steps <= validationSteps || steps > stepBudget(shape.values) {
		t.Errorf("validating %d rows took %d steps (%v); want more than %d, at most %d", n, steps, err, validationSteps, stepBudget(shape.values))
	}
}

// The wall-clock backstop stops a validation that is still running when
// it is reached, whatever its steps: read every 64 applications.
func TestValidateBackstop(t *testing.T) {
	sch := mustCompile(t, filterTreeSchema)
	args := []byte(filterTree(4, "1")) // valid, in 341 applications
	if err := sch.Validate(args); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	sch.backstop = -time.Hour // reached before the validation starts
	want := []Violation{{Message: "too complex to validate: checking the arguments against the schema took too long; pass a shallower or smaller value", Err: ErrTooComplex}}
	if diff := cmp.Diff(want, violationsOf(t, sch.Validate(args)), ignoreErr); diff != "" {
		t.Errorf("violations past the backstop (-want +got):\n%s", diff)
	}
	if err := sch.Validate([]byte(filterTree(1, "1"))); err != nil {
		t.Errorf("Validate of fewer than 64 applications past the backstop = %v", err)
	}
}

// Concurrent validations are each held to their own budget: one that
// spends it does not make the others fail.
func TestValidateBudgetConcurrent(t *testing.T) {
	sch := mustCompile(t, filterTreeSchema)
	sch.backstop = 24 * time.Hour
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			for range 2 {
				deep := i%2 == 0
				args := filterTree(4, "1")
				if deep {
					args = filterTree(14, "1")
				}
				err := sch.Validate([]byte(args))
				if deep != errors.Is(err, ErrTooComplex) || !deep && err != nil {
					t.Errorf("deep=%v: Validate = %v", deep, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
