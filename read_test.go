package values

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// expectedPaged returns the text Read pages for ref, computed without the
// pager: the text, the stored JSON, base64 of binary bytes, or the
// encoding/json decoding of a string part.
func expectedPaged(t testing.TB, s *SessionValues, ref string) []byte {
	t.Helper()
	r, ok := parseRef(strings.TrimPrefix(ref, "$"))
	if !ok {
		t.Fatalf("bad ref %q in test", ref)
	}
	whole, part, _, err := s.lookupPath(r, nil, math.MaxInt)
	if err != nil {
		t.Fatalf("lookup %q: %v", ref, err)
	}
	switch {
	case part == nil && whole.Kind() == KindBinary:
		return []byte(base64.StdEncoding.EncodeToString(whole.Bytes()))
	case part == nil:
		return whole.Bytes()
	case part[0] == '"':
		var str string
		if err := json.Unmarshal(part, &str); err != nil {
			t.Fatalf("decode part of %q: %v", ref, err)
		}
		return []byte(str)
	}
	return bytes.Clone(part)
}

// readEffectiveLimit is the limit Read applies for limit ≥ 0.
func readEffectiveLimit(limit int) int {
	if limit == 0 {
		return DefaultReadLimit
	}
	return min(limit, MaxReadLimit)
}

// checkReadPage checks the properties every page of want has.
func checkReadPage(t testing.TB, p Page, limit int, want []byte) {
	t.Helper()
	str := p.String()
	if len(str) > readEffectiveLimit(limit) {
		t.Fatalf("%q limit %d offset %d: page is %d bytes:\n%s", p.Ref, limit, p.Offset, len(str), str)
	}
	if !utf8.ValidString(str) {
		t.Fatalf("%q limit %d offset %d: page is not valid UTF-8: %q", p.Ref, limit, p.Offset, str)
	}
	if p.Total != len(want) {
		t.Fatalf("%q: Total = %d, want %d", p.Ref, p.Total, len(want))
	}
	if p.Next != p.Offset+len(p.Content) {
		t.Fatalf("%q: Next = %d, want Offset+len(Content) = %d", p.Ref, p.Next, p.Offset+len(p.Content))
	}
	if p.Offset >= len(want) {
		if p.Content != "" || p.More {
			t.Fatalf("%q: page past the end at %d has content %q, More %v", p.Ref, p.Offset, p.Content, p.More)
		}
		if !strings.Contains(str, " "+strconv.Itoa(p.Total)+" bytes") {
			t.Fatalf("%q: end page does not state the size %d: %q", p.Ref, p.Total, str)
		}
		return
	}
	if p.Content != string(want[p.Offset:p.Next]) {
		t.Fatalf("%q limit %d: content at [%d:%d] = %q, want %q", p.Ref, limit, p.Offset, p.Next, p.Content, want[p.Offset:p.Next])
	}
	if p.More != (p.Next < p.Total) {
		t.Fatalf("%q: More = %v with Next %d of %d", p.Ref, p.More, p.Next, p.Total)
	}
	if p.More {
		if p.Content == "" {
			t.Fatalf("%q limit %d: empty page with More at %d", p.Ref, limit, p.Offset)
		}
		call := `read_value {"ref":` + strconv.Quote(p.Ref) + `,"offset":` + strconv.Itoa(p.Next) + `}]`
		if !strings.HasSuffix(str, call) {
			t.Fatalf("%q: page does not end with the next call %s:\n%s", p.Ref, call, str)
		}
		if nl := strings.Count(str[len(p.Content):], "\n"); nl > 1 {
			t.Fatalf("%q: continuation is %d lines", p.Ref, nl)
		}
	} else if str != p.Content {
		t.Fatalf("%q: last page String %q is not its Content", p.Ref, str)
	}
}

// readFixture is a store with one value of every kind worth paging.
func readFixture(t testing.TB) *SessionValues {
	t.Helper()
	s := New()
	mustPut := func(v any) {
		if _, err := s.Put(v); err != nil {
			t.Fatal(err)
		}
	}
	// r1: multi-byte text in short lines.
	mustPut(strings.Repeat("héllo wörld 日本語 😀 ok\n", 40))
	// r2: one very long line of mixed widths, no newline.
	mustPut(strings.Repeat("ab😀é日", 700))
	// r3: an array of objects.
	type row struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	rows := make([]row, 300)
	for i := range rows {
		rows[i] = row{i, "név " + strconv.Itoa(i) + " 😀"}
	}
	mustPut(rows)
	// r4: an object whose string fields need every escape, as received.
	mustPut(json.RawMessage(`{"content": "line 1\n\tcaf\u00e9 \ud83d\ude00 \"q\" \\ \/ \u0001 lone \ud800 end\nline 3 日本\n` +
		strings.Repeat(`x\u00e9\n`, 200) + `", "rows": [ {"a": 1}, [2, 3], "last \u263a" ], "n": 42, "dot.key": "d"}`))
	// r5: binary.
	bin := make([]byte, 1000)
	for i := range bin {
		bin[i] = byte(i*7 + i/13)
	}
	mustPut(bin)
	// r6: a number; r7: empty text; r8: tiny binary.
	mustPut(42)
	mustPut("")
	mustPut([]byte{0xff, 0xfe})
	// r9: JSON as received, with newlines inside.
	mustPut(json.RawMessage("[\n  1,\n  \"two\",\n  {\"x\": [3]}\n]"))
	return s
}

var readFixtureRefs = []string{
	"r1", "$r1", "r2", "$r3", "$r3.0", "$r3.-1", "$r3.7.name", "r4", "$r4.content", "$r4.rows",
	"$r4.rows.-1", "$r4.rows.0", "$r4.n", `$r4.dot\.key`, "r5", "r6", "r7", "r8", "r9", "$r9.1",
}

func TestReadReassembles(t *testing.T) {
	s := readFixture(t)
	var limits []int // ascending, by the limit in effect
	for l := 1; l <= 260; l++ {
		limits = append(limits, l)
	}
	limits = append(limits, 512, 1000, 4096, 0, DefaultReadLimit, MaxReadLimit, MaxReadLimit+1, 1<<30)
	for _, ref := range readFixtureRefs {
		t.Run(ref, func(t *testing.T) {
			want := expectedPaged(t, s, ref)
			smallest := -1
			for _, limit := range limits {
				got, err := readAllPages(t, s, ref, limit, want)
				if err != nil {
					if !errors.Is(err, ErrReadArgs) {
						t.Fatalf("limit %d: %v", limit, err)
					}
					if smallest >= 0 && readEffectiveLimit(limit) > smallest {
						t.Fatalf("limit %d fails but %d worked: %v", limit, smallest, err)
					}
					continue
				}
				if smallest < 0 || readEffectiveLimit(limit) < smallest {
					smallest = readEffectiveLimit(limit)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("limit %d: reassembled %d bytes differ from the %d bytes of the value", limit, len(got), len(want))
				}
			}
			if smallest < 0 || smallest > 200 {
				t.Fatalf("smallest working limit = %d, want a small one", smallest)
			}
		})
	}
}

func TestReadSmallestLimit(t *testing.T) {
	s := readFixture(t)
	// A limit below what the error names fails, and the limit it names works.
	_, err := s.Read("r1", 0, 10)
	if !errors.Is(err, ErrReadArgs) {
		t.Fatalf("Read limit 10: %v, want ErrReadArgs", err)
	}
	msg := err.Error()
	need, convErr := strconv.Atoi(msg[strings.LastIndex(msg, " ")+1:])
	if convErr != nil {
		t.Fatalf("error names no limit: %q", msg)
	}
	if _, err := s.Read("r1", 0, need-1); !errors.Is(err, ErrReadArgs) {
		t.Errorf("limit %d: %v, want ErrReadArgs", need-1, err)
	}
	p, err := s.Read("r1", 0, need)
	if err != nil {
		t.Fatalf("limit %d (named by the error): %v", need, err)
	}
	if len(p.String()) > need || len(p.Content) == 0 {
		t.Errorf("limit %d: page of %d bytes with content %q", need, len(p.String()), p.Content)
	}
	// A rest that fits the limit whole needs no room for the line.
	p, err = s.Read("r6", 0, 2)
	if err != nil || p.String() != "42" {
		t.Errorf(`Read("r6", 0, 2) = %q, %v; want "42"`, p.String(), err)
	}
}

func TestReadOffsets(t *testing.T) {
	s := New()
	s.Put("a😀b")                                            // r1
	s.Put(json.RawMessage(`{"s":"x\u00e9y\ud83d\ude00z"}`)) // r2: "xéy😀z"
	s.Put([]byte{1, 2, 3, 4, 5})                            // r3: "AQIDBAU="
	tests := []struct {
		ref          string
		offset       int
		wantOffset   int
		wantContent  string
		wantMore     bool
		wantEndState bool
	}{
		{"r1", 0, 0, "a😀b", false, false},
		{"r1", 1, 1, "😀b", false, false},
		{"r1", 2, 5, "b", false, false}, // inside 😀: moves forward
		{"r1", 4, 5, "b", false, false},
		{"r1", 6, 6, "", false, true},
		{"r1", 1000, 1000, "", false, true},
		{"$r2.s", 1, 1, "éy😀z", false, false},
		{"$r2.s", 2, 3, "y😀z", false, false}, // inside é, decoded from \u00e9
		{"$r2.s", 5, 8, "z", false, false},   // inside 😀, decoded from a surrogate pair
		{"$r2.s", 8, 8, "z", false, false},
		{"$r2.s", 9, 9, "", false, true},
		{"r3", 3, 3, "DBAU=", false, false},
		{"r3", 8, 8, "", false, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s@%d", tt.ref, tt.offset), func(t *testing.T) {
			p, err := s.Read(tt.ref, tt.offset, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.Offset != tt.wantOffset || p.Content != tt.wantContent || p.More != tt.wantMore {
				t.Errorf("got Offset %d Content %q More %v; want %d %q %v", p.Offset, p.Content, p.More, tt.wantOffset, tt.wantContent, tt.wantMore)
			}
			if tt.wantEndState {
				str := p.String()
				if !strings.Contains(str, strconv.Itoa(p.Total)+" bytes") || !strings.Contains(str, "offset "+strconv.Itoa(tt.offset)) {
					t.Errorf("end page %q does not state size %d and offset %d", str, p.Total, tt.offset)
				}
			}
		})
	}
}

func TestReadEmptyValue(t *testing.T) {
	s := New()
	s.Put("")
	p, err := s.Read("r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[end of "r1": 0 bytes in all, none at offset 0]`; p.String() != want || p.More {
		t.Errorf("empty value page = %q (More %v), want %q", p.String(), p.More, want)
	}
}

func TestReadPageEnds(t *testing.T) {
	s := New()
	// r1: 20 lines of 10 bytes.
	s.Put(strings.Repeat("123456789\n", 20))
	// r2: a line far longer than a page.
	s.Put(strings.Repeat("y", 5000) + "\nend\n")
	// r3: binary.
	s.Put(bytes.Repeat([]byte{0xff, 0, 0x80}, 100))
	reserve := func(ref string, total int) int {
		return 1 + len(appendNextLine(nil, Page{Ref: ref, Offset: total, Next: total, Total: total}))
	}

	// The window ends mid-line in its last quarter: the page ends at the
	// last newline instead.
	budget := 95
	p, err := s.Read("r1", 0, reserve("r1", 200)+budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Content) != 90 || !strings.HasSuffix(p.Content, "\n") {
		t.Errorf("page with a %d-byte window = %d bytes %q, want 90 ending in a newline", budget, len(p.Content), p.Content)
	}
	// A newline earlier than the last quarter does not shorten the page.
	budget = 45
	s2 := New()
	s2.Put("0123456789\n" + strings.Repeat("z", 1000))
	p, err = s2.Read("r1", 0, reserve("r1", 1011)+budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Content) != budget {
		t.Errorf("page = %d bytes, want the full window of %d", len(p.Content), budget)
	}
	// A long line is split at the window.
	p, err = s.Read("r2", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !p.More || len(p.Content) != 1000-reserve("r2", 5005) || strings.Contains(p.Content, "\n") {
		t.Errorf("long line page: %d bytes, More %v", len(p.Content), p.More)
	}
	// Base64 pages that are not the last end on a multiple of 4.
	for limit := 100; limit < 140; limit++ {
		p, err := s.Read("r3", 0, limit)
		if err != nil {
			t.Fatal(err)
		}
		if p.More && p.Next%4 != 0 {
			t.Errorf("limit %d: base64 page ends at %d", limit, p.Next)
		}
		if p.Encoding != "base64" || !strings.Contains(p.String(), "(base64)") {
			t.Errorf("limit %d: base64 page not marked: %q", limit, p.String())
		}
	}
}

func TestReadLimits(t *testing.T) {
	s := New()
	s.Put(strings.Repeat("0123456789abcdef", 20000)) // 320000 bytes, no newlines
	for _, tt := range []struct {
		limit, want int
	}{{0, DefaultReadLimit}, {MaxReadLimit * 4, MaxReadLimit}, {MaxReadLimit, MaxReadLimit}, {5000, 5000}} {
		p, err := s.Read("r1", 0, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.String()); n > tt.want || n < tt.want-32 {
			t.Errorf("limit %d: page of %d bytes, want about %d", tt.limit, n, tt.want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	s := readFixture(t)
	tests := []struct {
		name          string
		ref           string
		offset, limit int
		want          error
	}{
		{"empty ref", "", 0, 0, ErrBadRef},
		{"no handle", "hello", 0, 0, ErrBadRef},
		{"r0", "r0", 0, 0, ErrBadRef},
		{"leading zero", "$r01", 0, 0, ErrBadRef},
		{"double dollar", "$$r1", 0, 0, ErrBadRef},
		{"empty segment", "$r4..n", 0, 0, ErrBadRef},
		{"bad escape", `$r4.a\b`, 0, 0, ErrBadRef},
		{"unknown handle", "r99", 0, 0, ErrUnknownHandle},
		{"unknown handle with path", "$r99.a", 0, 0, ErrUnknownHandle},
		{"missing key", "$r4.nope", 0, 0, ErrNoPath},
		{"index out of range", "$r3.300", 0, 0, ErrNoPath},
		{"negative index out of range", "$r3.-301", 0, 0, ErrNoPath},
		{"path into text", "$r1.0", 0, 0, ErrNoPath},
		{"path into number", "$r4.n.x", 0, 0, ErrNoPath},
		{"negative offset", "r1", -1, 0, ErrReadArgs},
		{"negative limit", "r1", 0, -5, ErrReadArgs},
		{"limit too small", "r1", 0, 20, ErrReadArgs},
		{"limit too small for the end line", "r1", 1 << 20, 5, ErrReadArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Read(tt.ref, tt.offset, tt.limit)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Read(%q, %d, %d) = %+v, %v; want %v", tt.ref, tt.offset, tt.limit, p, err, tt.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "values: ") {
				t.Errorf("message %q lacks the package prefix", msg)
			}
		})
	}
}

// Looking up a path for Read is held to the scan budget of a Resolve
// call, and a deep path costs what it names: a path 30,000 segments deep
// into a value nested as deep (which used to scan the value once per
// segment, about 9 s) is read at once, under a budget far smaller than
// the scans it used to take.
func TestReadPathBudget(t *testing.T) {
	const depth = 30_000
	s := New(WithMaxResolved(16 << 10)) // a scan budget of 64 KiB
	nest := strings.Repeat("[", depth) + "7" + strings.Repeat("]", depth)
	h := s.PutOutput([]byte(nest))
	for _, d := range []int{depth, 100} {
		p, err := s.Read("$"+h+strings.Repeat(".0", d), 0, 0)
		if want := nest[d : len(nest)-d]; err != nil || p.Total != len(want) || !strings.HasPrefix(want, p.Content) {
			t.Fatalf("Read of a path %d deep: %.100v, %.200v", d, p, err)
		}
	}
	// Past the budget: a key of a 100 KB object that Put did not index
	// (an item of an array of several), which is scanned whole.
	obj := "{" + strings.Repeat(`"xxxxxxxxxxxxxxx":0,`, 5_000) + `"k":1}`
	long := s.PutOutput([]byte("[" + obj + "," + obj + "]"))
	_, err := s.Read("$"+long+".1.k", 0, 0)
	if !errors.Is(err, ErrTooLarge) || err.Error() != `values: resolved arguments too large: looking up "$r2.1.k" would scan more than 64 KiB of stored JSON` {
		t.Fatalf("Read past the budget: %v, want ErrTooLarge", err)
	}
}

// Children of a stored value that Put indexed (head and tail items, the
// fields of a small object) cost no scan, and any other item of an array
// it indexed (the value, or its dominant part) costs a walk from the mark
// before it: every item of a large array is found under a scan budget far
// smaller than the array.
func TestLookupIndexedChildren(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	const n = 200_000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d}`, i)
	}
	b.WriteString("]")
	s := New(WithMaxResolved(16 << 10)) // a scan budget of 64 KiB, the array is 2.7 MB
	h := s.PutOutput([]byte(b.String()))
	obj, _ := s.Put(map[string]any{"rows": json.RawMessage(b.String()), "n": n})
	for ref, want := range map[string]string{
		"$" + h + ".-1.id": "199999", "$" + h + ".-2": `{"id":199998}`, "$" + h + ".2.id": "2",
		"$" + h + ".0": `{"id":0}`, "$" + obj + ".n": "200000", "$" + obj + ".rows.1.id": "1",
	} {
		p, err := s.Read(ref, 0, 0)
		if err != nil || p.Content != want {
			t.Errorf("Read(%s) = %q, %v; want %s", ref, p.Content, err, want)
		}
		if out, _, err := s.Resolve([]byte(`"` + ref + `"`)); err != nil || string(out) != want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", ref, out, err, want)
		}
	}
	// An item in the middle is walked to from the mark before it.
	for _, ref := range []string{"$" + h + ".100000.id", "$" + obj + ".rows.-100000.id"} {
		if p, err := s.Read(ref, 0, 0); err != nil || p.Content != "100000" {
			t.Errorf("Read(%s) = %q, %v; want 100000", ref, p.Content, err)
		}
		if out, _, err := s.Resolve([]byte(`"` + ref + `"`)); err != nil || string(out) != "100000" {
			t.Errorf("Resolve(%s) = %s, %v; want 100000", ref, out, err)
		}
	}
}

func TestHandleReadValue(t *testing.T) {
	s := readFixture(t)
	page := func(ref string, offset, limit int) string {
		p, err := s.Read(ref, offset, limit)
		if err != nil {
			t.Fatal(err)
		}
		return p.String()
	}
	tests := []struct {
		name    string
		args    string
		want    string // when wantErr is nil
		wantErr error
	}{
		{"ref only", `{"ref":"r1"}`, page("r1", 0, 0), nil},
		{"all fields", `{"ref":"$r4.content","offset":10,"limit":300}`, page("$r4.content", 10, 300), nil},
		{"null offset and limit", `{"ref":"r6","offset":null,"limit":null}`, "42", nil},
		{"integral float forms", `{"ref":"r1","offset":1e2,"limit":400.0}`, page("r1", 100, 400), nil},
		{"huge offset reads past the end", `{"ref":"r6","offset":1e300}`, page("r6", int(^uint(0)>>1), 0), nil},
		{"huge limit is capped", `{"ref":"r1","limit":99999999999999999999}`, page("r1", 0, MaxReadLimit), nil},
		{"whitespace", " {\n\"ref\" : \"r6\" }\n", "42", nil},
		{"not JSON", `{"ref":`, "", ErrReadArgs},
		{"empty", ``, "", ErrReadArgs},
		{"null", `null`, "", ErrReadArgs},
		{"array", `["r1"]`, "", ErrReadArgs},
		{"string", `"r1"`, "", ErrReadArgs},
		{"missing ref", `{"offset":0}`, "", ErrReadArgs},
		{"ref number", `{"ref":3}`, "", ErrReadArgs},
		{"ref null", `{"ref":null}`, "", ErrReadArgs},
		{"offset string", `{"ref":"r1","offset":"10"}`, "", ErrReadArgs},
		{"offset fraction", `{"ref":"r1","offset":1.5}`, "", ErrReadArgs},
		{"limit bool", `{"ref":"r1","limit":true}`, "", ErrReadArgs},
		{"limit object", `{"ref":"r1","limit":{}}`, "", ErrReadArgs},
		{"unknown field", `{"ref":"r1","ofset":10}`, "", ErrReadArgs},
		{"bad ref", `{"ref":"file.txt"}`, "", ErrBadRef},
		{"unknown handle", `{"ref":"r42"}`, "", ErrUnknownHandle},
		{"no path", `{"ref":"$r4.nope"}`, "", ErrNoPath},
		{"negative offset", `{"ref":"r1","offset":-3}`, "", ErrReadArgs},
		{"huge negative offset", `{"ref":"r1","offset":-1e300}`, "", ErrReadArgs},
		{"limit too small", `{"ref":"r1","limit":3}`, "", ErrReadArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.HandleReadValue([]byte(tt.args))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("HandleReadValue(%s) = %q, %v; want %v", tt.args, got, err, tt.wantErr)
				}
				if got != "" || !strings.HasPrefix(err.Error(), "values: ") {
					t.Errorf("HandleReadValue(%s) = %q, %q", tt.args, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("HandleReadValue(%s): %v", tt.args, err)
			}
			if got != tt.want {
				t.Errorf("HandleReadValue(%s) = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestReadValueTool(t *testing.T) {
	tool := ReadValueTool()
	if tool.Name != "read_value" || !strings.Contains(tool.Description, "offset") {
		t.Errorf("tool = %q: %q", tool.Name, tool.Description)
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type    string `json:"type"`
			Minimum *int   `json:"minimum"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
		t.Fatalf("schema is not JSON: %v\n%s", err, tool.InputSchema)
	}
	if schema.Type != "object" || len(schema.Required) != 1 || schema.Required[0] != "ref" ||
		schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Errorf("schema = %+v", schema)
	}
	for name, typ := range map[string]string{"ref": "string", "offset": "integer", "limit": "integer"} {
		if got := schema.Properties[name].Type; got != typ {
			t.Errorf("property %s: type %q, want %q", name, got, typ)
		}
	}
	if m := schema.Properties["offset"].Minimum; m == nil || *m != 0 {
		t.Errorf("offset minimum = %v, want 0", m)
	}
	// Each call returns its own copy.
	ReadValueTool().InputSchema[0] = 'x'
	if ReadValueTool().InputSchema[0] != '{' {
		t.Error("ReadValueTool shares its schema bytes")
	}
}

// FuzzRead checks, for arbitrary stored values, references, offsets and
// limits: no panic; every page fits its limit and is valid UTF-8; paging
// forward from 0 reassembles the paged text exactly.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"content":"a\nb\u00e9\ud83d\ude00","rows":[1,{"x":"y"},"z"]}`), "$r1.content", 3, 60)
	f.Add([]byte("héllo\nwörld 😀\n"), "r1", 1, 0)
	f.Add([]byte{0xff, 0x00, 0x80, 0x41}, "r3", 2, 90)
	f.Add([]byte(`[1, "two", {"a.b": "\ud800"}]`), `$r1.2.a\.b`, 0, 100)
	f.Add([]byte(`"top level string\n"`), "$r1", -1, -1)
	f.Add([]byte(strings.Repeat("x😀", 300)), "$r2", 7, 120)
	f.Fuzz(func(t *testing.T, data []byte, ref string, offset, limit int) {
		s := New()
		s.PutOutput(data)                    // r1: JSON, text or binary, as a tool printed it
		s.Put(string(data))                  // r2: text, or binary when not UTF-8
		s.Put(data)                          // r3: binary
		s.Put(json.RawMessage(data))         // r4, when data is valid JSON
		pageLimit := 70 + readAbs(limit)%400 // small pages, many of them

		// The fuzzed reference at the fuzzed offset and limit.
		if p, err := s.Read(ref, offset, limit); err == nil {
			if offset < 0 || limit < 0 {
				t.Fatalf("Read(%q, %d, %d) succeeded", ref, offset, limit)
			}
			checkReadPage(t, p, limit, expectedPaged(t, s, ref))
			if p.Offset < offset || (p.Offset > offset+3 && offset < p.Total) {
				t.Fatalf("offset %d moved to %d", offset, p.Offset)
			}
			if p.More && p.Offset < p.Total {
				if _, err := readAllPages(t, s, p.Ref, limit, expectedPaged(t, s, ref)); err != nil {
					t.Fatalf("paging %q: %v", p.Ref, err)
				}
			}
		} else if !errors.Is(err, ErrBadRef) && !errors.Is(err, ErrUnknownHandle) && !errors.Is(err, ErrNoPath) &&
			!errors.Is(err, ErrReadArgs) && !errors.Is(err, ErrReadArgs) {
			t.Fatalf("Read(%q, %d, %d): unexpected error %v", ref, offset, limit, err)
		}

		// Every value, and the first children of r1, paged forward whole.
		refs := []string{"r1", "r2", "r3"}
		if s.Len() == 4 {
			refs = append(refs, "r4")
		}
		if v, _ := s.Get("r1"); v.Kind() == KindArray || v.Kind() == KindObject {
			k := 0
			jsontext.EachChild(v.get().raw, func(key, _ []byte) bool {
				seg := strconv.Itoa(k)
				if key != nil {
					seg = strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(string(jsontext.AppendUnquoted(nil, key)))
				}
				if seg != "" {
					refs = append(refs, "$r1."+seg)
				}
				k++
				return k < 4
			})
			if v.Kind() == KindArray && v.Len() > 0 {
				refs = append(refs, "$r1.-1")
			}
		}
		for _, r := range refs {
			want := expectedPaged(t, s, r)
			got, err := readAllPages(t, s, r, pageLimit, want)
			if errors.Is(err, ErrReadArgs) {
				continue // a long key can need more than pageLimit
			}
			if err != nil {
				t.Fatalf("paging %q: %v", r, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("paging %q with limit %d: got %q, want %q", r, pageLimit, got, want)
			}
		}
		_, _ = s.HandleReadValue(data)
	})
}

func readAbs(n int) int {
	if n < 0 {
		return -(n + 1) // no overflow at math.MinInt
	}
	return n
}

// Benchmarks: a page from the middle of a 100 MB value costs about the page.

const readBenchSize = 100 << 20

func readBenchText() string {
	line := "2026-01-02T03:04:05Z INFO request served path=/api/v1/items/😀 status=200 bytes=1234\n"
	return strings.Repeat(line, readBenchSize/len(line)+1)[:readBenchSize]
}

func BenchmarkReadPage100MBText(b *testing.B) {
	s := New()
	s.Put(readBenchText())
	b.ReportAllocs()
	b.SetBytes(DefaultReadLimit)
	for b.Loop() {
		p, err := s.Read("r1", readBenchSize/2, DefaultReadLimit)
		if err != nil || len(p.String()) > DefaultReadLimit {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadPageBaseline is the floor for BenchmarkReadPage100MBText:
// copying a 32 KiB window of the same value twice, into the content and
// into the rendered page with a short line after it.
func BenchmarkReadPageBaseline(b *testing.B) {
	text := []byte(readBenchText())
	b.ReportAllocs()
	b.SetBytes(DefaultReadLimit)
	for b.Loop() {
		content := string(text[readBenchSize/2 : readBenchSize/2+DefaultReadLimit-100])
		var page strings.Builder
		page.Grow(len(content) + 100)
		page.WriteString(content)
		page.WriteString("\n[next]")
		if page.Len() > DefaultReadLimit {
			b.Fatal(page.Len())
		}
	}
}

func readBenchStringPart() []byte {
	body, _ := json.Marshal(map[string]string{"content": readBenchText()})
	return body
}

// BenchmarkReadPage100MBStringPart reads a page of "$r1.content", a 100 MB
// JSON string field with an escape every line: the documented exception,
// which scans the raw string (without copying it) to find decoded offsets.
func BenchmarkReadPage100MBStringPart(b *testing.B) {
	s := New()
	if _, err := s.Put(json.RawMessage(readBenchStringPart())); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Read("$r1.content", readBenchSize/2, DefaultReadLimit); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStringPartBaseline is what BenchmarkReadPage100MBStringPart
// avoids: decoding the whole string to take a page of it.
func BenchmarkReadStringPartBaseline(b *testing.B) {
	raw := readBenchStringPart()
	part := raw[len(`{"content":`) : len(raw)-1]
	b.ReportAllocs()
	for b.Loop() {
		dec := jsontext.AppendUnquoted(nil, part)
		_ = string(dec[readBenchSize/2 : readBenchSize/2+DefaultReadLimit])
	}
}
