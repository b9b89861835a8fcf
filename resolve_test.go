package values

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/google/go-cmp/cmp"
)

// resolveStore returns the store the resolution tests share:
//
//	r1  [1,2,3]
//	r2  {"content":"the payload","path":"./f.txt"}
//	r3  [{"id":1},{"id":2},{"id":3}]
//	r4  text hello
//	r5  text with characters JSON escapes
//	r6  binary
//	r7  an object with awkward keys
//	r8  the number 42
//	r9  null
//	r10 the text "$r1"
//	r11 a JSON object holding "$r2"
//	r12 the text "42" (PutOutput keeps a command's output as text)
//	r13 a JSON string that is valid UTF-8 only as decoded
func resolveStore(t testing.TB, opts ...Option) *SessionValues {
	t.Helper()
	s := New(opts...)
	for i, v := range []any{
		json.RawMessage(`[1,2,3]`),
		json.RawMessage(`{"content":"the payload","path":"./f.txt"}`),
		json.RawMessage(`[{"id":1},{"id":2},{"id":3}]`),
		"hello",
		"a\"b\\c\n\t\x01<&>€",
		[]byte{0, 1, 2, 0xff},
		json.RawMessage(`{"a.b":1,"*?#|@!":2,"k\\x":3,"a":{"b":4},"n":null,"big":12345678901234567890123,` +
			`"s":"x","dup":1,"dup":2,"~/":5,"":6,"a\u00e9":7,"nested":{"rows":[{"id":"x"},{"id":"y"}]},"f":-1.5e300}`),
		42,
		nil,
		"$r1",
		json.RawMessage(`{"x":"$r2"}`),
	} {
		h, err := s.Put(v)
		if err != nil {
			t.Fatalf("Put #%d: %v", i, err)
		}
		if want := "r" + strconv.Itoa(i+1); h != want {
			t.Fatalf("Put #%d = %s, want %s", i, h, want)
		}
	}
	s.PutOutput([]byte("42"))
	if _, err := s.Put(json.RawMessage(`"\u00e9t\u00e9"`)); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestResolve(t *testing.T) {
	s := resolveStore(t)
	tests := []struct {
		name     string
		args     string
		want     string // "" means args unchanged
		resolved []string
	}{
		{"whole array", `{"rows":"$r1","limit":10}`, `{"rows":[1,2,3],"limit":10}`, []string{"$r1"}},
		{"field of an envelope", `{"content":"$r2.content"}`, `{"content":"the payload"}`, []string{"$r2.content"}},
		{"index then field", `{"row":"$r3.1.id"}`, `{"row":2}`, []string{"$r3.1.id"}},
		{"last item", `{"row":"$r3.-1"}`, `{"row":{"id":3}}`, []string{"$r3.-1"}},
		{"negative index then field", `["$r3.-3.id"]`, `[1]`, []string{"$r3.-3.id"}},
		{"negative index out of range", `["$r3.-4"]`, "", nil},
		{"index out of range", `["$r3.3"]`, "", nil},
		{"leading zero is not an index", `["$r3.01"]`, "", nil},
		{"minus zero is not an index", `["$r3.-0"]`, "", nil},
		{"missing key stays literal", `{"x":"$r2.nope"}`, "", nil},
		{"unknown handle stays literal", `{"rows":"$r99"}`, "", nil},
		{"handle too large for an int", `{"rows":"$r18446744073709551617"}`, "", nil},
		{"nested in objects and arrays", `{"outer":{"inner":["$r4"]}}`, `{"outer":{"inner":["hello"]}}`, []string{"$r4"}},
		{"top-level string", `"$r1"`, `[1,2,3]`, []string{"$r1"}},
		{"whitespace kept", " {\n \"a\" : \"$r4\" ,\"b\":[ \"$r8\" ] }\t", " {\n \"a\" : \"hello\" ,\"b\":[ 42 ] }\t", []string{"$r4", "$r8"}},
		{"partial matches untouched", `{"cmd":"echo $r4 > out.txt","re":"^\\$r1$","t":"$r1 "}`, "", nil},
		{"object keys are not references", `{"$r1":"x","y":{"$r2":1}}`, "", nil},
		{"malformed or not references stay literal", `["$r0","$r01","$R1","$r","$","$r1a","r1","$ r1","$r1.","$r1..a","$r1.a\\x"]`, "", nil},
		{"repeats all resolve", `["$r4","$r4",{"k":"$r4"}]`, `["hello","hello",{"k":"hello"}]`, []string{"$r4", "$r4", "$r4"}},
		{"escape", `["$$r1"]`, `["$r1"]`, nil},
		{"escape keeps a path", `{"a":"$$r1.x.-1"}`, `{"a":"$r1.x.-1"}`, nil},
		{"escape drops one dollar", `["$$$r1"]`, `["$$r1"]`, nil},
		{"escape of an unknown handle", `["$$r99"]`, `["$r99"]`, nil},
		{"not an escape", `["$$hello","$$","$$r0","$$r"]`, "", nil},
		{"escape of a malformed reference", `["$$r1.","$$r2d2","$$$r1..x"]`, `["$r1.","$r2d2","$$r1..x"]`, nil},
		{"escape written with \\u", `["\u0024$r1"]`, `["$r1"]`, nil},
		{"escape with \\u after the first dollar", `["$\u0024r1"]`, `["\u0024r1"]`, nil},
		{"reference written with escapes", `["\u0024r4","$\u0072\u0034"]`, `["hello","hello"]`, []string{"$r4", "$r4"}},
		{"no re-expansion of text", `{"a":"$r10"}`, `{"a":"$r1"}`, []string{"$r10"}},
		{"no re-expansion of JSON", `{"a":"$r11"}`, `{"a":{"x":"$r2"}}`, []string{"$r11"}},
		{"no re-expansion of a part", `{"a":"$r11.x"}`, `{"a":"$r2"}`, []string{"$r11.x"}},
		{"text is JSON-escaped, HTML left alone", `["$r5"]`, `["a\"b\\c\n\t\u0001<&>€"]`, []string{"$r5"}},
		{"non-ASCII text", `["$r13"]`, `["été"]`, []string{"$r13"}},
		{"binary is base64", `["$r6"]`, `["AAEC/w=="]`, []string{"$r6"}},
		{"path into text", `["$r4.0"]`, "", nil},
		{"path into binary", `["$r6.0"]`, "", nil},
		{"path into a number", `["$r8.x"]`, "", nil},
		{"path into a string field", `["$r2.content.x"]`, "", nil},
		{"path into null", `["$r7.n.x"]`, "", nil},
		{"number stays a number", `{"n":"$r8"}`, `{"n":42}`, []string{"$r8"}},
		{"output text stays a string", `{"n":"$r12"}`, `{"n":"42"}`, []string{"$r12"}},
		{"null", `{"n":"$r9","m":"$r7.n"}`, `{"n":null,"m":null}`, []string{"$r9", "$r7.n"}},
		{"big number exact", `["$r7.big","$r7.f"]`, `[12345678901234567890123,-1.5e300]`, []string{"$r7.big", "$r7.f"}},
		{"string part spliced as is", `["$r7.s"]`, `["x"]`, []string{"$r7.s"}},
		{"escaped dot in a key", `["$r7.a\\.b"]`, `[1]`, []string{`$r7.a\.b`}},
		{"dot walks into an object", `["$r7.a.b"]`, `[4]`, []string{"$r7.a.b"}},
		{"gjson characters are plain", `["$r7.*?#|@!"]`, `[2]`, []string{"$r7.*?#|@!"}},
		{"escaped backslash in a key", `["$r7.k\\\\x"]`, `[3]`, []string{`$r7.k\\x`}},
		{"pointer characters in a key", `["$r7.~/"]`, `[5]`, []string{"$r7.~/"}},
		{"non-ASCII key", `["$r7.aé"]`, `[7]`, []string{"$r7.aé"}},
		{"last duplicate key wins", `["$r7.dup"]`, `[2]`, []string{"$r7.dup"}},
		{"deep path", `["$r7.nested.rows.-1.id"]`, `["y"]`, []string{"$r7.nested.rows.-1.id"}},
		{"gjson query is not a query", `["$r3.#.id","$r3.#","$r7.a|@reverse","$r3.0|id"]`, "", nil},
		{"empty containers", `{"a":[],"b":{},"c":[{}]}`, "", nil},
		{"scalars", `[true,false,null,-0.5e-3,0,"",""]`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, resolved, err := s.Resolve([]byte(tt.args))
			if err != nil {
				t.Fatalf("Resolve(%s): %v", tt.args, err)
			}
			want := tt.want
			if want == "" {
				want = tt.args
			}
			if string(got) != want {
				t.Errorf("Resolve(%s)\n got %s\nwant %s", tt.args, got, want)
			}
			if diff := cmp.Diff(tt.resolved, resolved); diff != "" {
				t.Errorf("resolved (-want +got):\n%s", diff)
			}
			if !json.Valid(got) {
				t.Errorf("output is not valid JSON: %s", got)
			}
		})
	}
}

// The resolution tests of the reference implementation (seed 001), in Go.

func TestSeedDottedPathsAddressAFieldOfARetainedValue(t *testing.T) {
	s := New()
	h, _ := s.Put(json.RawMessage(`{"content": "the payload", "path": "./f.txt"}`))
	got, resolved, err := s.Resolve([]byte(`{"content":"$` + h + `.content"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"$" + h + ".content"}, resolved); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
	if want := `{"content":"the payload"}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}

	// Numeric segments index arrays.
	rows, _ := s.Put(json.RawMessage(`[{"id": 1}, {"id": 2}, {"id": 3}]`))
	got, _, err = s.Resolve([]byte(`{"row":"$` + rows + `.1.id"}`))
	if err != nil || string(got) != `{"row":2}` {
		t.Errorf("row: got %s, %v; want {\"row\":2}", got, err)
	}

	// A path that does not exist stays literal rather than becoming null.
	args := `{"x":"$` + h + `.nope"}`
	got, resolved, err = s.Resolve([]byte(args))
	if err != nil || len(resolved) != 0 || string(got) != args {
		t.Errorf("missing path: got %s, %v, %v; want it literal and unresolved", got, resolved, err)
	}
}

func TestSeedWholeStringReferencesResolve(t *testing.T) {
	s := New()
	h, _ := s.Put(json.RawMessage(`[1, 2, 3]`))
	got, resolved, err := s.Resolve([]byte(`{"rows":"$` + h + `","limit":10}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"$" + h}, resolved); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
	var params struct {
		Rows  []int `json:"rows"`
		Limit int   `json:"limit"`
	}
	if err := json.Unmarshal(got, &params); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, params.Rows); diff != "" || params.Limit != 10 {
		t.Errorf("got %s", got)
	}
}

func TestSeedNestedReferencesResolve(t *testing.T) {
	s := New()
	h, _ := s.Put("hello")
	got, _, err := s.Resolve([]byte(`{"outer":{"inner":["$` + h + `"]}}`))
	if err != nil || string(got) != `{"outer":{"inner":["hello"]}}` {
		t.Errorf("got %s, %v", got, err)
	}
}

func TestSeedPartialMatchesAreLeftAlone(t *testing.T) {
	s := New()
	h, _ := s.Put("VALUE")
	args := `{"cmd":"echo $` + h + ` > out.txt","re":"^\\$r1$"}`
	got, resolved, err := s.Resolve([]byte(args))
	if err != nil || len(resolved) != 0 || string(got) != args {
		t.Errorf("got %s, %v, %v; want the arguments unchanged", got, resolved, err)
	}
}

func TestSeedUnknownHandlesAreLeftUntouched(t *testing.T) {
	s := New()
	args := `{"rows":"$r99"}`
	got, resolved, err := s.Resolve([]byte(args))
	if err != nil || len(resolved) != 0 || string(got) != args {
		t.Errorf("got %s, %v, %v; want the arguments unchanged", got, resolved, err)
	}
}

func TestResolveDetail(t *testing.T) {
	s := resolveStore(t)
	type ref struct {
		Ref, Pointer string
		Sentinel     error
	}
	tests := []struct {
		name string
		args string
		want []ref
	}{
		{"none", `{"a":1}`, nil},
		{"top level", `"$r1"`, []ref{{"$r1", "", nil}}},
		{"locations", `{"a":[1,"$r99",{"b/c~":"$r2.nope"}],"x":"$r1","e":"$$r1"}`, []ref{
			{"$r99", "/a/1", ErrUnknownHandle},
			{"$r2.nope", "/a/2/b~1c~0", ErrNoPath},
			{"$r1", "/x", nil},
		}},
		{"escaped keys", `{"k\"\u00e9\\":["$r4"],"":"$r4"}`, []ref{{"$r4", `/k"é\/0`, nil}, {"$r4", "/", nil}}},
		{"indexes count", `[[],{},"a",["x","$r4"],"$r4"]`, []ref{{"$r4", "/3/1", nil}, {"$r4", "/4", nil}}},
		{"each error", `["$r1.x","$r1.5","$r2.content.x","$r8.x","$r3.0.x"]`, []ref{
			{"$r1.x", "/0", ErrNoPath}, {"$r1.5", "/1", ErrNoPath}, {"$r2.content.x", "/2", ErrNoPath},
			{"$r8.x", "/3", ErrNoPath}, {"$r3.0.x", "/4", ErrNoPath},
		}},
		{"malformed", `{"a":"$r1.rows.","b":"$r1..rows","c":"$r1.rows.0.id\\x","d":"$r1a","e":"$r2.a\\","f":"$r1.","g":"$r1.rows.","h":"$r1.0"}`, []ref{
			{"$r1.rows.", "/a", ErrBadRef}, {"$r1..rows", "/b", ErrBadRef}, {`$r1.rows.0.id\x`, "/c", ErrBadRef},
			{"$r1a", "/d", ErrBadRef}, {`$r2.a\`, "/e", ErrBadRef}, {"$r1.", "/f", ErrBadRef}, {"$r1.rows.", "/g", ErrBadRef},
			{"$r1.0", "/h", nil},
		}},
		{"not reference-shaped, or escaped", `["$r0.","$R1..x","$r..x","$$r1..x","$$$r1.","$$r1a","r1..x","$ r1..x"]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.ResolveDetail([]byte(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			var got []ref
			for _, r := range res.Refs {
				var sentinel error
				for _, e := range []error{ErrUnknownHandle, ErrNoPath, ErrBadRef} {
					if errors.Is(r.Err, e) {
						sentinel = e
					}
				}
				if (r.Err == nil) != (sentinel == nil) {
					t.Errorf("%s: error %v wraps no sentinel", r.Ref, r.Err)
				}
				got = append(got, ref{r.Ref, r.Pointer, sentinel})
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("Refs (-want +got):\n%s", diff)
			}
			plain, resolved, err := s.Resolve([]byte(tt.args))
			if err != nil || !bytes.Equal(plain, res.Args) {
				t.Errorf("Resolve = %s, %v; ResolveDetail.Args = %s", plain, err, res.Args)
			}
			if diff := cmp.Diff(resolved, res.Resolved()); diff != "" {
				t.Errorf("Resolved() differs from Resolve (-Resolve +Resolved()):\n%s", diff)
			}
			for _, u := range res.Unresolved() {
				if u.Err == nil {
					t.Errorf("Unresolved() holds resolved %s", u.Ref)
				}
			}
		})
	}
}

// The explanations of unresolved references are what the model reads.
func TestLookupErrorsExplain(t *testing.T) {
	s := resolveStore(t)
	tests := []struct {
		ref, want string
	}{
		{"$r99", `values: "$r99" is not a stored value; stored: r1…r13`},
		{"$r2.nope", `values: "$r2.nope": no such path: $r2 has no key "nope"; its keys: content, path`},
		{"$r7.nested.nope", `values: "$r7.nested.nope": no such path: $r7.nested has no key "nope"; its keys: rows`},
		{"$r3.7", `values: "$r3.7": no such path: index 7 is out of range for $r3, an array of 3 items`},
		{"$r7.nested.rows.-3", `values: "$r7.nested.rows.-3": no such path: index -3 is out of range for $r7.nested.rows, an array of 2 items`},
		{"$r3.x", `values: "$r3.x": no such path: $r3 is an array; "x" is not an index (0, 1, … or -1 for the last item)`},
		{"$r4.x", `values: "$r4.x": no such path: $r4 is text, which has no fields or items`},
		{"$r2.path.x", `values: "$r2.path.x": no such path: $r2.path is text, which has no fields or items (it does not hold a JSON array or object)`},
		{"$r1.", `values: "$r1.": malformed reference: empty path after "$r1."; write "$r1" for the whole value, or a key or index after the dot`},
		{"$r3.rows.", `values: "$r3.rows.": malformed reference: empty segment after "$r3.rows."; separate segments with one dot, and write a dot that is part of a key as "\\."`},
		{"$r3..rows", `values: "$r3..rows": malformed reference: empty segment after "$r3."; separate segments with one dot, and write a dot that is part of a key as "\\."`},
		{`$r3.rows.0.id\x`, `values: "$r3.rows.0.id\\x": malformed reference: "\\x" after "$r3.rows.0.id" is not an escape; in a path only "\\." (a dot in a key) and "\\\\" (a backslash) are`},
		{`$r3.a\`, `values: "$r3.a\\": malformed reference: the path ends with a lone backslash; write a backslash that is part of a key as "\\\\" and a dot as "\\."`},
		{"$r12rows.0", `values: "$r12rows.0": malformed reference: the handle r12 is followed by "rows"; a path starts with a dot, as in "$r12.rows.0"`},
		{"$r99..x", `values: "$r99..x": malformed reference: empty segment after "$r99."; separate segments with one dot, and write a dot that is part of a key as "\\."`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			res, err := s.ResolveDetail([]byte(strconv.Quote(tt.ref)))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Refs) != 1 || res.Refs[0].Err == nil {
				t.Fatalf("Refs = %v, want one unresolved", res.Refs)
			}
			if got := res.Refs[0].Err.Error(); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	empty := New()
	res, _ := empty.ResolveDetail([]byte(`"$r1"`))
	if got, want := res.Refs[0].Err.Error(), `values: "$r1" is not a stored value; no values are stored yet`; got != want {
		t.Errorf("empty store:\n got %s\nwant %s", got, want)
	}
	many := New()
	for i := range 20 {
		many.Put(json.RawMessage(`{"k` + strconv.Itoa(i) + `":1}`))
	}
	obj := `{`
	for i := range 20 {
		obj += fmt.Sprintf(`"key%d":%d,`, i, i)
	}
	h, _ := many.Put(json.RawMessage(strings.TrimSuffix(obj, ",") + `}`))
	res, _ = many.ResolveDetail([]byte(`"$` + h + `.x"`))
	if got := res.Refs[0].Err.Error(); !strings.HasSuffix(got, "its keys: key0, key1, key2, key3, key4, key5, key6, key7, …") {
		t.Errorf("a long key list is not clipped: %s", got)
	}
}

// A long reference that does not resolve is shown clipped in its error:
// the message stays short whatever the model wrote.
func TestLookupErrorsAreClipped(t *testing.T) {
	s := resolveStore(t)
	long := strings.Repeat("é", 5000)
	// head is how a message shows prefix + long: 80 bytes, "…" included.
	head := func(prefix string) string {
		return prefix + strings.Repeat("é", (80-len(prefix)-len("…"))/2) + "…"
	}
	tests := []struct{ ref, want string }{
		{"$r99." + long, `values: "` + head("$r99.") + `" is not a stored value; stored: r1…r13`},
		{"$r2." + long, `values: "` + head("$r2.") + `": no such path: $r2 has no key "` + head("") + `"; its keys: content, path`},
		{"$r2.path." + long, `values: "` + head("$r2.path.") + `": no such path: $r2.path is text, which has no fields or items (it does not hold a JSON array or object)`},
		{"$r3." + long, `values: "` + head("$r3.") + `": no such path: $r3 is an array; "` + head("") + `" is not an index (0, 1, … or -1 for the last item)`},
		{"$r3." + long + "..x", `values: "` + head("$r3.") + `": malformed reference: empty segment after "…` + strings.Repeat("é", 39) + `."; separate segments with one dot, and write a dot that is part of a key as "\\."`},
		{"$r1" + long, `values: "` + head("$r1") + `": malformed reference: the handle r1 is followed by "` + head("") + `"; a path starts with a dot, as in "` + head("$r1.") + `"`},
	}
	for _, tt := range tests {
		res, err := s.ResolveDetail([]byte(strconv.Quote(tt.ref)))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Refs) != 1 || res.Refs[0].Err == nil {
			t.Fatalf("Refs = %v, want one unresolved", res.Refs)
		}
		if got := res.Refs[0].Err.Error(); got != tt.want {
			t.Errorf("\n got %s\nwant %s", got, tt.want)
		}
	}
}

// References that do not resolve are held to the bound too: 60 MB of
// arguments holding 20 references of 3 MB each to unknown handles fail
// with ErrTooLarge under a 1 MiB bound, allocating next to nothing
// (Prepare used to allocate 400–480 MB).
func TestResolveUnresolvedRefsAreBounded(t *testing.T) {
	s := New(WithMaxResolved(1 << 20))
	s.PutOutput([]byte(`{"a":1}`))
	ref := `"$r99.` + strings.Repeat("k", 3<<20) + `"`
	args := []byte("[" + strings.Repeat(ref+",", 19) + ref + "]")
	sch := mustCompile(t, `{"type":"array"}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := s.Prepare(sch, args)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "references written in the arguments exceed the bound of 1.0 MiB") {
		t.Fatalf("Prepare: %.300v, want ErrTooLarge", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("Prepare allocated %d bytes for %d bytes of arguments", got, len(args))
	}
	// Under the default bound they resolve to nothing, and every error is short.
	res, err := New().ResolveDetail([]byte(ref))
	if err != nil || len(res.Refs) != 1 || !errors.Is(res.Refs[0].Err, ErrUnknownHandle) || len(res.Refs[0].Err.Error()) > 200 {
		t.Fatalf("ResolveDetail: %v, %.300v", err, res.Refs)
	}
}

func TestResolveInvalidJSON(t *testing.T) {
	s := resolveStore(t)
	for _, args := range []string{
		"", " ", "{", "[", `{"a":}`, `{"a" 1}`, `["$r1"`, `["$r1",]`, `{,}`, `[1,]`, `{"a":1,}`,
		`"\x"`, `"\u12"`, `{"a":1}x`, `"$r1" "$r1"`, "\"a\x01\"", "\"\xff\"", `tru`, `01`, `-`, `1.`, `1e`,
		`{"a":"$r1"}}`, `[[[["$r1"]]]`, `{1:2}`, `'a'`, `NaN`,
	} {
		t.Run(args, func(t *testing.T) {
			got, _, err := s.Resolve([]byte(args))
			if !errors.Is(err, ErrInvalidJSON) {
				t.Errorf("Resolve(%q) = %s, %v; want ErrInvalidJSON", args, got, err)
			}
			if _, err := s.ResolveDetail([]byte(args)); !errors.Is(err, ErrInvalidJSON) {
				t.Errorf("ResolveDetail(%q) = %v; want ErrInvalidJSON", args, err)
			}
		})
	}
}

func TestResolveNeverModifiesArgs(t *testing.T) {
	s := resolveStore(t)
	args := []byte(`{"a":"$r1","b":"$$r1","c":"x"}`)
	before := bytes.Clone(args)
	out, _, err := s.Resolve(args)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(args, before) {
		t.Errorf("args modified: %s", args)
	}
	out[0] = 'X'
	if !bytes.Equal(args, before) {
		t.Errorf("the result shares args' bytes")
	}
	plain := []byte(`{"c":"x"}`)
	out, _, _ = s.Resolve(plain)
	if &out[0] != &plain[0] {
		t.Errorf("arguments without references were copied")
	}
}

// The bound is exact: the result may be as large as it, and not larger.
func TestResolveBound(t *testing.T) {
	newline := strings.Repeat("\n", 50) // quoted: 102 bytes
	tests := []struct {
		name  string
		value any
		args  string
		size  int // of the result
	}{
		{"json", json.RawMessage(`[` + strings.Repeat(`1,`, 49) + `1]`), `"$r1"`, 101},
		{"text with escapes", newline, `"$r1"`, 102},
		{"binary", make([]byte, 30), `"$r1"`, 42},
		{"part", json.RawMessage(`{"a":"` + strings.Repeat("x", 98) + `"}`), `"$r1.a"`, 100},
		{"repeated", json.RawMessage(`[1,2,3,4,5,6,7,8,9]`), `["$r1","$r1","$r1","$r1","$r1"]`, 2 + 5*19 + 4},
		{"escape shrinks", json.RawMessage(`[1,2,3,4,5,6,7,8,9]`), `["$r1","$$r1"]`, 1 + 19 + 1 + 5 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, bound := range []int{tt.size, tt.size - 1} {
				s := New(WithMaxResolved(bound))
				if _, err := s.Put(tt.value); err != nil {
					t.Fatal(err)
				}
				out, _, err := s.Resolve([]byte(tt.args))
				switch {
				case bound == tt.size && (err != nil || len(out) != tt.size):
					t.Errorf("bound %d: got %d bytes, %v; want %d bytes", bound, len(out), err, tt.size)
				case bound < tt.size && !errors.Is(err, ErrTooLarge):
					t.Errorf("bound %d: got %d bytes, %v; want ErrTooLarge", bound, len(out), err)
				}
				if _, err := s.ResolveDetail([]byte(tt.args)); (err != nil) != (bound < tt.size) {
					t.Errorf("bound %d: ResolveDetail error %v", bound, err)
				}
			}
		})
	}
	// Arguments that need no change come back whatever their size.
	s := New(WithMaxResolved(10))
	big := []byte(`{"text":"` + strings.Repeat("x", 100) + `"}`)
	if out, _, err := s.Resolve(big); err != nil || !bytes.Equal(out, big) {
		t.Errorf("unchanged arguments over the bound: %v", err)
	}
	// The default.
	if got := New().maxResolved(); got != DefaultMaxResolved || DefaultMaxResolved != 64<<20 {
		t.Errorf("default bound %d", got)
	}
	if got := New(WithMaxResolved(-1)).maxResolved(); got != DefaultMaxResolved {
		t.Errorf("negative bound gives %d, want the default", got)
	}
}

// One 1 MB value referenced 10,000 times asks for 10 GB: Resolve must
// refuse after about 64 references, with little memory and few allocations.
func TestResolveAmplificationFailsFast(t *testing.T) {
	mb := 1 << 20
	for _, tt := range []struct {
		name  string
		value any
		ref   string
	}{
		{"json", json.RawMessage(`"` + strings.Repeat("x", mb) + `"`), "$r1"}, // stored as text
		{"json array", json.RawMessage(`[` + strings.Repeat(`"xxxxxxxxx",`, mb/12) + `0]`), "$r1"},
		{"part", json.RawMessage(`{"a":[` + strings.Repeat(`"xxxxxxxxx",`, mb/12) + `0]}`), "$r1.a"},
		{"text needing escapes", strings.Repeat("\n", mb), "$r1"},
		{"binary", make([]byte, mb), "$r1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			if _, err := s.Put(tt.value); err != nil {
				t.Fatal(err)
			}
			args := []byte("[" + strings.Repeat(`"`+tt.ref+`",`, 9999) + `"` + tt.ref + `"]`)
			var err error
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			allocs := testing.AllocsPerRun(3, func() {
				_, _, err = s.Resolve(args)
			})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			// 4 runs (AllocsPerRun warms up once).
			if perRun := (after.TotalAlloc - before.TotalAlloc) / 4; perRun > 256<<10 {
				t.Errorf("allocated %d bytes per call, want under 256 KiB", perRun)
			}
			if allocs > 40 {
				t.Errorf("%v allocations per call, want at most 40", allocs)
			}
			if _, err := s.ResolveDetail(args); !errors.Is(err, ErrTooLarge) {
				t.Errorf("ResolveDetail: %v, want ErrTooLarge", err)
			}
		})
	}
}

// Looking up the same reference many times costs one lookup: 10,000
// references to the last key of a 1 MB object scan it once.
func TestResolveRepeatedLookupsAreMemoized(t *testing.T) {
	s := New()
	obj := `{` + strings.Repeat(`"k":"xxxxxxxxxxxxxxxxxxxxxxxx",`, 1<<15) + `"last":1}`
	h, err := s.Put(json.RawMessage(obj))
	if err != nil {
		t.Fatal(err)
	}
	args := []byte("[" + strings.Repeat(`"$`+h+`.last",`, 9999) + `"$` + h + `.last"]`)
	allocs := testing.AllocsPerRun(2, func() {
		out, refs, err := s.Resolve(args)
		if err != nil || len(refs) != 10000 || !json.Valid(out) {
			t.Fatalf("Resolve: %d refs, %v", len(refs), err)
		}
	})
	// The result, the lists, one reference string, the memo map.
	if allocs > 60 {
		t.Errorf("%v allocations, want at most 60", allocs)
	}
	var r resolver
	r.s, r.args = s, args
	if err := r.run(); err != nil || len(r.hits) != 1 {
		t.Errorf("%d lookups for one distinct reference, err %v", len(r.hits), err)
	}
	// Many distinct references switch to the map and stay correct.
	var b strings.Builder
	b.WriteString("[")
	for i := range 100 {
		fmt.Fprintf(&b, `"$r1.-%d","$r1.%d",`, i%3+1, i%3)
	}
	b.WriteString(`0]`)
	s2 := New()
	s2.Put(json.RawMessage(`[10,11,12]`))
	out, refs, err := s2.Resolve([]byte(b.String()))
	if err != nil || len(refs) != 200 {
		t.Fatalf("%d refs, %v", len(refs), err)
	}
	want := "["
	for i := range 100 {
		want += fmt.Sprintf("%d,%d,", 12-i%3, 10+i%3)
	}
	if want += "0]"; string(out) != want {
		t.Errorf("got %s\nwant %s", out, want)
	}
}

func TestResolveHugeValues(t *testing.T) {
	s := New()
	text := strings.Repeat("line with \"quotes\" and \\ and tabs\t\n", 1<<18) // ~9 MB
	ht, _ := s.Put(text)
	arr := `[` + strings.Repeat(`{"id":12345,"name":"abcdefghij"},`, 1<<18) + `null]` // ~8.5 MB
	ha, _ := s.Put(json.RawMessage(arr))
	bin := bytes.Repeat([]byte{0xff, 0, 7}, 1<<20)
	hb, _ := s.Put(bin)
	out, refs, err := s.Resolve([]byte(`{"t":"$` + ht + `","a":"$` + ha + `","b":"$` + hb + `","last":"$` + ha + `.-1","mid":"$` + ha + `.131072.name"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 5 {
		t.Errorf("refs %v", refs)
	}
	var got struct {
		T    string
		A    []json.RawMessage
		B    []byte
		Last json.RawMessage
		Mid  string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.T != text || len(got.A) != 1<<18+1 || !bytes.Equal(got.B, bin) || string(got.Last) != "null" || got.Mid != "abcdefghij" {
		t.Errorf("huge values not spliced intact (text %v, %d items, binary %v, last %s, mid %q)",
			got.T == text, len(got.A), bytes.Equal(got.B, bin), got.Last, got.Mid)
	}
	if want := jsontext.QuotedLen([]byte(text)) + len(arr) + base64.StdEncoding.EncodedLen(len(bin)) + 2; len(out) < want || cap(out) != len(out) {
		t.Errorf("result %d bytes (cap %d), want at least %d and an exact allocation", len(out), cap(out), want)
	}
}

// Nesting a million levels deep neither overflows the stack nor costs
// more than a byte or two per level.
func TestResolveDeepNesting(t *testing.T) {
	s := resolveStore(t)
	const depth = 1_000_000
	for _, tt := range []struct {
		name, open, close string
		pointerToken      string
	}{
		{"arrays", "[", "]", "/0"},
		{"objects", `{"k":`, "}", "/k"},
		{"mixed", `[{"a~":`, "}]", "/0/a~0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := depth / len(tt.open)
			args := []byte(strings.Repeat(tt.open, n) + `"$r4"` + strings.Repeat(tt.close, n))
			want := strings.Repeat(tt.open, n) + `"hello"` + strings.Repeat(tt.close, n)
			out, refs, err := s.Resolve(args)
			if err != nil || string(out) != want || len(refs) != 1 {
				t.Fatalf("Resolve: %v, %d refs, output ok %v", err, len(refs), string(out) == want)
			}
			res, err := s.ResolveDetail(args)
			if err != nil || len(res.Refs) != 1 {
				t.Fatalf("ResolveDetail: %v", err)
			}
			if tokens := len(tt.pointerToken) / strings.Count(tt.pointerToken, "/"); len(res.Refs[0].Pointer) != n*len(tt.pointerToken) || tokens == 0 {
				t.Errorf("pointer has %d bytes, want %d", len(res.Refs[0].Pointer), n*len(tt.pointerToken))
			}
			if _, _, err := s.Resolve(args[:len(args)-1]); !errors.Is(err, ErrInvalidJSON) {
				t.Errorf("unclosed: %v, want ErrInvalidJSON", err)
			}
		})
	}
}

func TestResolveConcurrentWithPut(t *testing.T) {
	s := New()
	s.Put(json.RawMessage(`{"a":[1,2,3]}`))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				s.Put(json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)))
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				out, _, err := s.Resolve([]byte(`{"x":"$r1.a.-1","y":"$r2.i","z":"$r900"}`))
				if err != nil || !json.Valid(out) {
					t.Errorf("Resolve: %s, %v", out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// smallArgs is 1 KiB of tool arguments holding three references to small
// values, the common case of an agent's tool call.
func smallArgs(tb testing.TB) (*SessionValues, []byte) {
	tb.Helper()
	s := New()
	s.Put(json.RawMessage(`{"content":"the payload","path":"./f.txt","size":11}`))
	s.Put(json.RawMessage(`[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":3,"name":"c"}]`))
	s.Put("a short text result\n")
	var b strings.Builder
	b.WriteString(`{"path":"$r1.path","row":"$r2.-1","note":"$r3","flags":[true,false,null,1.5],"opts":{`)
	for i := 0; b.Len() < 1000; i++ {
		fmt.Fprintf(&b, `"option%d":"value with some text %d",`, i, i)
	}
	b.WriteString(`"end":0}}`)
	args := []byte(b.String())
	if len(args) < 1000 || len(args) > 1100 {
		tb.Fatalf("small args are %d bytes", len(args))
	}
	return s, args
}

// The allocation count documented on Resolve.
func TestResolveSmallAllocs(t *testing.T) {
	s, args := smallArgs(t)
	allocs := testing.AllocsPerRun(100, func() {
		if _, refs, err := s.Resolve(args); err != nil || len(refs) != 3 {
			t.Fatalf("Resolve: %v %v", refs, err)
		}
	})
	if allocs > 7 {
		t.Errorf("%v allocations, Resolve documents 7", allocs)
	}
}

func BenchmarkResolveSmall(b *testing.B) {
	s, args := smallArgs(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, _, err := s.Resolve(args); err != nil {
			b.Fatal(err)
		}
	}
}

// The baseline: decode the arguments, replace the strings, encode again,
// as a resolver over decoded values does.
func BenchmarkResolveSmallBaselineDecodeEncode(b *testing.B) {
	s, args := smallArgs(b)
	vals := map[string]any{}
	for _, ref := range []string{"$r1.path", "$r2.-1", "$r3"} {
		out, _, _ := s.Resolve([]byte(strconv.Quote(ref)))
		var v any
		json.Unmarshal(out, &v)
		vals[ref] = v
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil {
			b.Fatal(err)
		}
		for k, v := range m {
			if str, ok := v.(string); ok {
				if r, ok := vals[str]; ok {
					m[k] = r
				}
			}
		}
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}

const resolveBenchSize = 50 << 20

// resolveBenchJSON is a 50 MB JSON array of objects.
var resolveBenchJSON = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	b.Grow(resolveBenchSize + 100)
	b.WriteByte('[')
	for i := 0; b.Len() < resolveBenchSize; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user %d","tags":["a","b"],"score":%d.5}`, i, i, i%1000)
	}
	b.WriteByte(']')
	return b.Bytes()
})

// resolveBenchText is 50 MB of log text with quotes, backslashes, tabs and
// newlines for the JSON encoding to escape.
var resolveBenchText = sync.OnceValue(func() string {
	var b strings.Builder
	b.Grow(resolveBenchSize + 100)
	for i := 0; b.Len() < resolveBenchSize; i++ {
		fmt.Fprintf(&b, "2026-11-01T12:00:%02d level=info msg=\"request served\" path=C:\\tmp\\x\tstatus=200 bytes=%d\n", i%60, i)
	}
	return b.String()
})

func BenchmarkResolve50MBJSON(b *testing.B) {
	s := New()
	if _, err := s.Put(json.RawMessage(resolveBenchJSON())); err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"rows":"$r1"}`)
	b.ReportAllocs()
	b.SetBytes(resolveBenchSize)
	for b.Loop() {
		if _, _, err := s.Resolve(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve50MBJSONBaselineClone(b *testing.B) {
	v := resolveBenchJSON()
	b.ReportAllocs()
	b.SetBytes(resolveBenchSize)
	for b.Loop() {
		_ = bytes.Clone(v)
	}
}

func BenchmarkResolve50MBText(b *testing.B) {
	s := New()
	if _, err := s.Put(resolveBenchText()); err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"rows":"$r1"}`)
	b.ReportAllocs()
	b.SetBytes(resolveBenchSize)
	for b.Loop() {
		if _, _, err := s.Resolve(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve50MBTextBaselineMarshal(b *testing.B) {
	text := resolveBenchText()
	b.ReportAllocs()
	b.SetBytes(resolveBenchSize)
	for b.Loop() {
		if _, err := json.Marshal(text); err != nil {
			b.Fatal(err)
		}
	}
}

// fuzzStore holds values of every kind for FuzzResolve: r1 an object with
// awkward keys, r2 text, r3 binary, r4 a mixed array, r5 a number, r6 text
// that looks like a reference, r7 JSON with escapes in its keys, r8 an
// object large enough for lookups to remember what they scan in it, r9 an
// object whose keys Put indexes in blocks, with duplicate keys, and r10 an
// array whose items Put marks.
func fuzzStore(tb testing.TB, opts ...Option) *SessionValues {
	tb.Helper()
	s := New(opts...)
	for _, v := range []any{
		json.RawMessage(`{"a":{"b":[1,{"c":"d"}]},"x.y":1,"*?#|@!":[true],"dup":1,"dup":[2],"":{"":0},"~/":null,"k\\":"v"}`),
		"text \"quoted\" \\ \n\t\x00 é <&>",
		[]byte{0xff, 0xfe, 0, 1},
		json.RawMessage(` [ 1 , -2.5e10 , "s" , [ ] , { } , null , 123456789012345678901234567890 ] `),
		json.RawMessage(`-0.0`),
		"$r1",
		json.RawMessage(`{"\u00e9":1,"a\"b":2,"\ud800":3,"\/":4}`),
		json.RawMessage(fuzzLarge()),
		json.RawMessage(fuzzManyKeys()),
		json.RawMessage(fuzzLongArray()),
	} {
		if _, err := s.Put(v); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// fuzzLarge returns an object of about 12 KiB with rows to index, nested
// arrays, and a duplicate key whose last value holds more.
func fuzzLarge() string {
	var b strings.Builder
	b.WriteString(`{"dup":{"x":0},"rows":[`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"v":[%d,"a.b",[[]]]}`, i, i*i)
	}
	b.WriteString(`],"k":{"a.b":[[1,2],{"c":[3]}]},"dup":{"x":[1,{"y":2}]}}`)
	return b.String()
}

// fuzzManyKeys returns an object of about 20 KiB whose 300 keys, k0 to
// k149 twice (the second time far after the first, with another value),
// Put indexes in key blocks, and one of them holds an object of many keys.
func fuzzManyKeys() string {
	var b strings.Builder
	b.WriteString(`{"k\u0031":"escaped",`)
	for i := range 300 {
		fmt.Fprintf(&b, `"k%d":{"i":%d,"pad":"%s"},`, i%150, i, strings.Repeat("p", i%60))
	}
	b.WriteString(`"many":{`)
	for i := range 200 {
		fmt.Fprintf(&b, `"m%d":[%d,{"x":%d}],`, i%120, i, i)
	}
	b.WriteString(`"end":true},"a.b":1}`)
	return b.String()
}

// fuzzLongArray returns an array of 400 objects, about 24 KiB, whose items
// Put marks.
func fuzzLongArray() string {
	var b strings.Builder
	b.WriteString(`[`)
	for i := range 400 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"dir/file%d","size":%d,"tags":["%s"]}`, i, i*7, strings.Repeat("t", i%13))
	}
	b.WriteString(`]`)
	return b.String()
}

// FuzzResolve checks Resolve against a model that works on decoded values:
// it never panics, its output is valid JSON equal (decoded) to the model's,
// arguments without references come back unchanged, errors are the
// documented ones, and it agrees with ResolveDetail.
func FuzzResolve(f *testing.F) {
	for _, seed := range []struct{ args, ref string }{
		{`{"rows":"$r1","limit":10}`, "$r1.a.b.-1.c"},
		{`["$r2","$r3","$r4.-1","$r4.6","$r5","$r6"]`, "$r4.2"},
		{`{"a":["$$r1","$$hello","$r1.x\\.y","$r1.*?#|@!.0"]}`, `$r1.x\.y`},
		{`{"$r1":"$r1.dup","k":"$r1.k\\\\"}`, `$r1.k\\`},
		{`[[[[{"a":"$r7.é"}]]]]`, "$r7.\ufffd"},
		{`"\u0024r4"`, "$r99"},
		{` { "a" : "$r1.~/" } `, "$$r1"},
		{`[1,2,{"x":null,"y":true}]`, "$r1."},
		{`{"a":"$r1.a.b.01"}`, "$r4.-8"},
		{`["$r8.rows.3.id","$r8.rows.-1","$r8.rows.0.id","$r8.rows","$r8.rows.2.v.1","$r8.nope","$r8.rows.1.id","$r8.rows.300"]`, "$r8.rows.299.v.2.0"},
		{`{"a":["$r8.dup.x.1.y","$r8.k.a\\.b.1.c.-1","$r8.rows.-300.v","$r8.rows.5","$r8.rows.4.id"],"b":"$r8.rows.7.v.-1"}`, "$r8.dup.x"},
		{`["$r1..a","$r1.a.","$r8.rows.\\x","$$r8..x"]`, "$r8.rows.1\\"},
		{`["$r9.k1","$r9.k149.i","$r9.k0.pad","$r9.many.m7.1.x","$r9.many.m119","$r9.nope","$r9.a\\.b"]`, "$r9.many.end"},
		{`["$r10.399.path","$r10.200.size","$r10.-400.tags.0","$r10.7.path","$r10.400","$r10.-401"]`, "$r10.123.tags.-1"},
	} {
		f.Add([]byte(seed.args), seed.ref)
	}
	s := fuzzStore(f)
	small := fuzzStore(f, WithMaxResolved(256))
	f.Fuzz(func(t *testing.T, args []byte, ref string) {
		quoted, _ := json.Marshal(ref)
		for _, in := range [][]byte{args, []byte(`{"arg":` + string(quoted) + `,"n":[1,"` + "$$r1" + `"]}`)} {
			checkResolve(t, s, small, in)
		}
	})
}

func checkResolve(t *testing.T, s, small *SessionValues, args []byte) {
	t.Helper()
	orig := bytes.Clone(args)
	out, resolved, err := s.Resolve(args)
	if !bytes.Equal(args, orig) {
		t.Fatalf("Resolve modified its arguments")
	}
	if err != nil {
		if !errors.Is(err, ErrInvalidJSON) {
			t.Fatalf("Resolve(%q): unexpected error %v", args, err)
		}
		if serr := jsontext.Valid(args); serr == nil {
			t.Fatalf("Resolve(%q) rejects JSON that scanJSON accepts: %v", args, err)
		}
		return
	}
	if serr := jsontext.Valid(args); serr != nil {
		t.Fatalf("Resolve(%q) accepts JSON that scanJSON rejects: %v", args, serr)
	}
	if !json.Valid(out) {
		t.Fatalf("Resolve(%q) = %q, not valid JSON", args, out)
	}
	if serr := jsontext.Valid(out); serr != nil {
		t.Fatalf("Resolve(%q) = %q, rejected by scanJSON: %v", args, out, serr)
	}
	if len(resolved) == 0 && !bytes.Contains(args, []byte("$$")) && !bytes.Contains(args, []byte(`\u0024`)) && !bytes.Equal(out, args) {
		t.Fatalf("Resolve(%q) changed arguments without references: %q", args, out)
	}
	// Determinism, and agreement with ResolveDetail.
	out2, resolved2, err := s.Resolve(args)
	if err != nil || !bytes.Equal(out, out2) || !cmp.Equal(resolved, resolved2) {
		t.Fatalf("Resolve(%q) is not deterministic", args)
	}
	res, err := s.ResolveDetail(args)
	if err != nil || !bytes.Equal(res.Args, out) || !cmp.Equal(res.Resolved(), resolved) {
		t.Fatalf("ResolveDetail(%q) = %q, %v, %v; Resolve = %q, %v", args, res.Args, res.Resolved(), err, out, resolved)
	}
	for _, r := range res.Refs {
		if r.Err != nil && !errors.Is(r.Err, ErrUnknownHandle) && !errors.Is(r.Err, ErrNoPath) && !errors.Is(r.Err, ErrBadRef) {
			t.Fatalf("%s: error %v wraps no sentinel", r.Ref, r.Err)
		}
		// A malformed reference is exactly a reference-shaped string that
		// breaks the grammar.
		_, ok := modelParse(r.Ref[1:])
		shaped := len(r.Ref) >= 3 && r.Ref[0] == '$' && r.Ref[1] == 'r' && '1' <= r.Ref[2] && r.Ref[2] <= '9'
		if errors.Is(r.Err, ErrBadRef) == ok || !shaped {
			t.Fatalf("%s: parses %v, reference-shaped %v, error %v", r.Ref, ok, shaped, r.Err)
		}
	}
	// The bound: a small store fails exactly when the result is larger, or
	// the path lookups scan more than its budget.
	r := resolver{s: s, args: args}
	if err := r.run(); err != nil {
		t.Fatal(err)
	}
	overBudget := r.scan > scanBudget(256)
	sout, _, err := small.Resolve(args)
	switch {
	case errors.Is(err, ErrTooLarge):
		if !overBudget && (len(out) <= 256 || bytes.Equal(out, args)) {
			t.Fatalf("ErrTooLarge for a %d-byte result, %d bytes scanned", len(out), r.scan)
		}
	case overBudget:
		t.Fatalf("small store: %v after scanning %d bytes, want ErrTooLarge", err, r.scan)
	case err != nil || !bytes.Equal(sout, out):
		t.Fatalf("small store: %q, %v; want %q", sout, err, out)
	}
	// The model, over decoded values.
	want, ok := decodeNumbers(args)
	if !ok {
		return // deeper than encoding/json decodes
	}
	var wantResolved []string
	want = modelResolve(s, want, &wantResolved)
	got, ok := decodeNumbers(out)
	if !ok {
		t.Fatalf("output %q does not decode", out)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Resolve(%q) = %q (-model +got):\n%s", args, out, diff)
	}
	// encoding/json forgets the order of keys, so compare as multisets; it
	// also keeps only the last of duplicate keys, whose earlier values
	// Resolve does resolve, so then the model's list is only a part.
	if hasDuplicateKeys(args) {
		return
	}
	sorted := slices.Clone(resolved)
	slices.Sort(sorted)
	slices.Sort(wantResolved)
	if diff := cmp.Diff(wantResolved, sorted); diff != "" {
		t.Fatalf("Resolve(%q) resolved (-model +got):\n%s", args, diff)
	}
}

// hasDuplicateKeys reports whether some object in the valid JSON b has a
// key twice.
func hasDuplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys   map[string]bool
		object bool
		isKey  bool // the next string token of an object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		switch tok {
		case json.Delim('{'):
			if top >= 0 && stack[top].object {
				stack[top].isKey = true
			}
			stack = append(stack, frame{keys: map[string]bool{}, object: true, isKey: true})
			continue
		case json.Delim('['):
			if top >= 0 && stack[top].object {
				stack[top].isKey = true
			}
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			continue
		}
		if top < 0 || !stack[top].object {
			continue
		}
		if stack[top].isKey {
			k, _ := tok.(string)
			if stack[top].keys[k] {
				return true
			}
			stack[top].keys[k] = true
			stack[top].isKey = false
		} else {
			stack[top].isKey = true
		}
	}
}

func decodeNumbers(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v) == nil
}

// modelResolve is the design's rule over decoded values, written
// independently of resolve.go.
func modelResolve(s *SessionValues, v any, resolved *[]string) any {
	switch v := v.(type) {
	case string:
		n := len(v) - len(strings.TrimLeft(v, "$"))
		if n == 0 {
			return v
		}
		if rest := v[n:]; n > 1 && len(rest) >= 2 && rest[0] == 'r' && '1' <= rest[1] && rest[1] <= '9' {
			return v[1:] // the escape covers anything that starts like a reference
		}
		segs, ok := modelParse(v[n:])
		if !ok || n > 1 {
			return v
		}
		if got, ok := modelLookup(s, segs); ok {
			*resolved = append(*resolved, v)
			return got
		}
		return v
	case []any:
		for i := range v {
			v[i] = modelResolve(s, v[i], resolved)
		}
	case map[string]any:
		for k := range v {
			v[k] = modelResolve(s, v[k], resolved)
		}
	}
	return v
}

// modelParse splits "r3.a\.b.0" into ["r3", "a.b", "0"].
func modelParse(s string) ([]string, bool) {
	var segs []string
	var cur []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '.':
			if len(cur) == 0 {
				return nil, false
			}
			segs = append(segs, string(cur))
			cur = cur[:0]
		case '\\':
			if i+1 == len(s) || (s[i+1] != '.' && s[i+1] != '\\') {
				return nil, false
			}
			i++
			cur = append(cur, s[i])
		default:
			cur = append(cur, c)
		}
	}
	if len(cur) == 0 {
		return nil, false
	}
	segs = append(segs, string(cur))
	h := segs[0]
	if len(h) < 2 || h[0] != 'r' || h[1] == '0' || strings.Trim(h[1:], "0123456789") != "" {
		return nil, false
	}
	return segs, true
}

func modelLookup(s *SessionValues, segs []string) (any, bool) {
	if len(segs[0]) > 10 {
		return nil, false
	}
	v, ok := s.Get(segs[0])
	if !ok {
		return nil, false
	}
	switch v.Kind() {
	case KindText:
		if len(segs) > 1 {
			return nil, false
		}
		return string(v.Bytes()), true
	case KindBinary:
		if len(segs) > 1 {
			return nil, false
		}
		return base64.StdEncoding.EncodeToString(v.Bytes()), true
	}
	cur, _ := decodeNumbers(v.JSON())
	for _, seg := range segs[1:] {
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[seg]; !ok {
				return nil, false
			}
		case []any:
			d := strings.TrimPrefix(seg, "-")
			if d == "" || len(d) > 18 || strings.Trim(d, "0123456789") != "" || d[0] == '0' && (len(d) > 1 || d != seg) {
				return nil, false
			}
			i, _ := strconv.Atoi(d)
			if d != seg {
				i = len(c) - i
			}
			if i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Distinct paths into an object that Put did not index each scan it
// (one too small for the call to remember); their total is bounded too,
// at scanFactor times the bound.
func TestResolveBoundsLookupWork(t *testing.T) {
	s := New(WithMaxResolved(1000))
	obj := `{` + strings.Repeat(`"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",`, 40)
	for i := range 20 {
		obj += fmt.Sprintf(`"k%d":%d,`, i, i)
	}
	obj = strings.TrimSuffix(obj, ",") + `}`
	h, _ := s.Put(json.RawMessage(`[` + obj + `,1,2,3,4,5]`)) // the object is a head item
	fits := scanFactor * 1000 / len(obj)
	args := func(n int) []byte {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprintf(`"$%s.0.k%d"`, h, i), fmt.Sprintf(`"$%s.0.k%d"`, h, i)) // repeats are free
		}
		return []byte("[" + strings.Join(b, ",") + "]")
	}
	if _, refs, err := s.Resolve(args(fits)); err != nil || len(refs) != 2*fits {
		t.Errorf("%d distinct paths: %d refs, %v", fits, len(refs), err)
	}
	if _, _, err := s.Resolve(args(fits + 1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%d distinct paths: %v, want ErrTooLarge", fits+1, err)
	}
}

// rowsResult returns a JSON object of about size bytes, {"rows":[{"id":0,
// "name":…},…]}, and its number of rows.
func rowsResult(size int) ([]byte, int) {
	var b bytes.Buffer
	b.WriteString(`{"rows":[`)
	n := 0
	for ; b.Len() < size; n++ {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"row %d with some padding to make it longer"}`, n, n)
	}
	b.WriteString(`]}`)
	return b.Bytes(), n
}

// idRefs returns arguments {"ids":["$r1.rows.<i>.id",…]} for the indexes.
func idRefs(h string, indexes ...int) []byte {
	var refs []string
	for _, i := range indexes {
		refs = append(refs, fmt.Sprintf(`"$%s.rows.%d.id"`, h, i))
	}
	return []byte(`{"ids":[` + strings.Join(refs, ",") + `]}`)
}

// A path is charged the bytes its lookup scans, not the value's size, and a
// large container on the way is scanned once per call: row ids from a
// result far larger than the bound resolve.
func TestResolvePathsChargeWhatTheyScan(t *testing.T) {
	s := New(WithMaxResolved(1 << 20))
	result, rows := rowsResult(2 << 20)
	h, err := s.Put(json.RawMessage(result))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		indexes []int
	}{
		{"nine ids", []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"a hundred ids, the last ones too", append(seq(0, 90), seq(rows-10, rows)...)},
		{"the same rows in another order", []int{8, 3, 8, 0, rows - 1, 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, refs, err := s.Resolve(idRefs(h, tt.indexes...))
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			var got struct{ IDs []int }
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.indexes, got.IDs); diff != "" || len(refs) != len(tt.indexes) {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
	// The rows array dominates the value, so Put indexed it: a path into
	// it is charged the walk from the mark before its item (less than
	// jsontext.MarkGap bytes) and its row, in any order. Every fourth row,
	// in descending order, costs less than the budget of 4 MiB.
	some := []int{}
	for i := rows - 1; i >= 0; i -= 4 {
		some = append(some, i)
	}
	if _, refs, err := s.Resolve(idRefs(h, some...)); err != nil || len(refs) != len(some) {
		t.Errorf("%d rows in descending order: %d refs, %v", len(some), len(refs), err)
	}
	for _, i := range []int{rows - 1, rows / 2, 12345, 3} {
		row := fmt.Sprintf(`{"id":%d,"name":"row %d with some padding to make it longer"}`, i, i)
		p, _ := parseRef(fmt.Sprintf("r1.rows.%d.id", i))
		if _, part, scanned, err := s.lookupPath(p, nil, math.MaxInt); err != nil || string(part) != strconv.Itoa(i) || scanned >= jsontext.MarkGap+len(row) {
			t.Errorf("row %d: %s, %v, scanned %d bytes; want less than %d", i, part, err, scanned, jsontext.MarkGap+len(row))
		}
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// lookupPath reports the bytes it scans: an object whole, an array up to
// the end of the item taken (after the whole of it when it must count its
// items first); a child of the value itself that Put indexed costs nothing.
func TestLookupPathScanned(t *testing.T) {
	s := New()
	obj := `{"a":[10,20,{"b":[1,2,3]}],"pad":"xxxxxxxxxx","a":[30,40,{"b":[4,5,6]}]}`
	h, _ := s.Put(json.RawMessage(obj))
	arr := `[{"k":1},{"k":2},[3,4]]`
	ha, _ := s.Put(json.RawMessage(arr))
	tests := []struct {
		ref     string
		part    string
		scanned int
	}{
		{"$" + h, "", 0},
		{"$" + h + ".pad", `"xxxxxxxxxx"`, 0},
		{"$" + h + ".a.0", `30`, len(`[30`)}, // the last "a" wins
		{"$" + h + ".a.2.b.-1", `6`, len(`[30,40,`) + len(`{"b":[4,5,6]}`) + len(`[4,5,6`) + len(`[4,5,6`)}, // counted, then walked
		{"$" + ha + ".0.k", `1`, len(`{"k":1}`)},
		{"$" + ha + ".-1.1", `4`, len(`[3,4`)},
		{"$" + ha + ".1.x", "", len(`{"k":2}`)},
		{"$" + ha + ".5", "", 0},   // its length is known
		{"$" + h + ".nope", "", 0}, // every key is indexed
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			p, ok := parseRef(tt.ref[1:])
			if !ok {
				t.Fatalf("parseRef(%q) failed", tt.ref)
			}
			_, part, scanned, err := s.lookupPath(p, nil, math.MaxInt)
			if (err != nil) != (tt.part == "" && p.segs != "") || string(part) != tt.part {
				t.Errorf("part %s, err %v; want %s", part, err, tt.part)
			}
			if scanned != tt.scanned {
				t.Errorf("scanned %d bytes, want %d", scanned, tt.scanned)
			}
			if tt.scanned > 0 {
				if _, _, _, err := s.lookupPath(p, nil, tt.scanned-1); !errors.Is(err, errScanBudget) {
					t.Errorf("limit %d: %v, want errScanBudget", tt.scanned-1, err)
				}
				if _, _, _, err := s.lookupPath(p, nil, tt.scanned); errors.Is(err, errScanBudget) {
					t.Errorf("limit %d: %v", tt.scanned, err)
				}
			}
		})
	}
}

// The largest bound works: the budget of path lookups saturates rather
// than overflows.
func TestResolveLargestBound(t *testing.T) {
	s := resolveStore(t, WithMaxResolved(math.MaxInt))
	out, refs, err := s.Resolve([]byte(`["$r3.1.id","$r7.nested.rows.-1.id","$r1"]`))
	if want := `[2,"y",[1,2,3]]`; err != nil || string(out) != want || len(refs) != 3 {
		t.Errorf("Resolve = %s, %v, %v; want %s", out, refs, err, want)
	}
	if got := scanBudget(math.MaxInt); got != math.MaxInt {
		t.Errorf("scanBudget(MaxInt) = %d", got)
	}
	if got := scanBudget(DefaultMaxResolved); got != 256<<20 {
		t.Errorf("scanBudget(DefaultMaxResolved) = %d, want 256 MiB", got)
	}
}

// memDurable is a Durable in memory that counts reads.
type memDurable struct {
	mu      sync.Mutex
	bodies  map[string][]byte
	records map[string][]Record
	reads   int
}

func (m *memDurable) PutBody(session string, body []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := strconv.Itoa(len(m.bodies))
	m.bodies[key] = bytes.Clone(body)
	return key, nil
}

func (m *memDurable) Body(session, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	b, ok := m.bodies[key]
	if !ok {
		return nil, errors.New("no such body")
	}
	return bytes.Clone(b), nil
}

func (m *memDurable) AppendRecord(session string, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[session] = append(m.records[session], r)
	return nil
}

func (m *memDurable) Records(session string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.records[session]), nil
}

// A value kept only in the durable store is charged whole when a path
// reads it back, once per call however many paths go into it.
func TestResolveDurablePathsChargeOneReadBack(t *testing.T) {
	d := &memDurable{bodies: map[string][]byte{}, records: map[string][]Record{}}
	obj, _ := rowsResult(64 << 10)
	result := obj[len(`{"rows":`) : len(obj)-1] // a top-level array
	// 16 times the bound holds the value once, not twice.
	bound := (len(result) + len(result)/2) / scanFactor
	s, err := Open(d, "s", WithMemoryLimit(1024), WithMaxResolved(bound))
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Put(json.RawMessage(result))
	if err != nil {
		t.Fatal(err)
	}
	if d.reads != 0 {
		t.Fatalf("%d reads before Resolve", d.reads)
	}
	// Short steps, not remembered by themselves: each path would read the
	// value back but for the first.
	var refs []string
	for i := range 20 {
		refs = append(refs, fmt.Sprintf(`"$%s.%d.id"`, h, i), fmt.Sprintf(`"$%s.%d"`, h, 19-i))
	}
	out, resolved, err := s.Resolve([]byte("[" + strings.Join(refs, ",") + "]"))
	if err != nil || len(resolved) != 40 || !json.Valid(out) {
		t.Fatalf("Resolve: %d refs, %v", len(resolved), err)
	}
	if d.reads == 0 {
		t.Errorf("the value was not read back: it was in memory")
	}
	// Twice the value is over the budget.
	s2, err := Open(d, "s2", WithMemoryLimit(1024), WithMaxResolved(len(result)/scanFactor))
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := s2.Put(json.RawMessage(result))
	if _, _, err := s2.Resolve([]byte(`["$` + h2 + `.0"]`)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a read back larger than the budget: %v, want ErrTooLarge", err)
	}
}
