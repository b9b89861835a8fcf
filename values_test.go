package values

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/hooks"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// mustPut stores v and returns its handle and value.
func mustPut(t testing.TB, s *SessionValues, v any) (string, Value) {
	t.Helper()
	h, err := s.Put(v)
	if err != nil {
		t.Fatalf("Put(%T): %v", v, err)
	}
	got, ok := s.Get(h)
	if !ok {
		t.Fatalf("Get(%q) after Put: not found", h)
	}
	return h, got
}

func preview(t testing.TB, v any) string {
	t.Helper()
	s := New()
	h, x := mustPut(t, s, v)
	return RenderPreview(h, x)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestHandlesAreShortAndSequential(t *testing.T) {
	s := New()
	for i, v := range []any{1, "two", raw(`[3]`)} {
		h, err := s.Put(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("r%d", i+1); h != want {
			t.Errorf("Put #%d handle = %q, want %q", i+1, h, want)
		}
	}
	if h := s.PutOutput([]byte("x")); h != "r4" {
		t.Errorf("PutOutput handle = %q, want r4", h)
	}
	if s.Len() != 4 {
		t.Errorf("Len = %d, want 4", s.Len())
	}
	v, ok := s.Get("r1")
	if !ok || string(v.JSON()) != "1" {
		t.Errorf("Get(r1) = %s, %v", v.JSON(), ok)
	}
	for _, h := range []string{"nope", "r0", "r01", "r5", "r", "$r1", "R1", "r-1", "r99999999999999999999999", "r9999999999999999999", "r18446744073709551617"} {
		if _, ok := s.Get(h); ok {
			t.Errorf("Get(%q) found a value", h)
		}
	}
	if diff := cmp.Diff([]string{"r1", "r2", "r3", "r4"}, s.Handles()); diff != "" {
		t.Errorf("Handles (-want +got):\n%s", diff)
	}
}

// The property the store exists for: items a preview elides stay reachable.
func TestElidedDataIsRecoverableThroughTheHandle(t *testing.T) {
	s := New()
	rows := make([]map[string]int, 100)
	for i := range rows {
		rows[i] = map[string]int{"id": i}
	}
	h, v := mustPut(t, s, rows)
	p := RenderPreview(h, v)
	if !strings.Contains(p, "len=100") {
		t.Errorf("true length missing: %s", p)
	}
	var back []map[string]int
	if err := json.Unmarshal(v.JSON(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 100 || back[57]["id"] != 57 {
		t.Errorf("recovered %d rows, row 57 = %v", len(back), back[57])
	}
}

func TestPreviewGrammar(t *testing.T) {
	ints := make([]int, 100)
	for i := range ints {
		ints[i] = i
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"long array", ints, `r1 = array(len=100, bytes=291 B, items=number 0..99, [:3]=[0, 1, 2], [-2:]=[98, 99])`},
		{"short array", []int{1, 2, 3}, `r1 = array(len=3, bytes=7 B, [1, 2, 3])`},
		{"five items whole", []int{1, 2, 3, 4, 5}, `r1 = array(len=5, bytes=11 B, [1, 2, 3, 4, 5])`},
		{"six items elided", []int{1, 2, 3, 4, 5, 6}, `r1 = array(len=6, bytes=13 B, items=number 1..6, [:3]=[1, 2, 3], [-2:]=[5, 6])`},
		{"empty array", raw(`[]`), `r1 = array(len=0, bytes=2 B)`},
		{"object elements", raw(`[{"id":1,"name":"a","x":0},{"id":2},[1,2],"s",{"o":{"a":1},"l":[1,2,3]}]`),
			`r1 = array(len=5, bytes=72 B, items={id?: number 1..2, name?: "a", x?: 0, o?: object, l?: array}|"s"|array, [{id: 1, name: "a", x: 0}, {id: 2}, array(len=2), "s", {o: json(keys=1), l: array(len=3)}])`},
		{"small object", raw(`{"name": "car", "version": "0.46.1"}`), `r1 = json(keys=2, bytes=36 B, name: "car", version: "0.46.1")`},
		{"empty object", raw(`{}`), `r1 = json(keys=0, bytes=2 B)`},
		{"nested fields", raw(`{"a":[1,2],"b":{"c":1,"d":2},"e":null,"f":true,"g":-1.5e3}`),
			`r1 = json(keys=5, bytes=58 B, a: [1, 2], b: {c: 1, d: 2}, e: null, f: true, g: -1.5e3)`},
		{"odd keys quoted", raw(`{"a b":1,"":2,"x\"y":3}`), `r1 = json(keys=3, bytes=23 B, "a b": 1, "": 2, "x\"y": 3)`},
		{"short text", "hello world", `r1 = text(len=11 B, lines=1) "hello world"`},
		{"empty text", "", `r1 = text(len=0 B, lines=0) ""`},
		{"text escapes", "a\"b\\c\n\t\x01<&>", `r1 = text(len=11 B, lines=2) "a\"b\\c\n\t\u0001<&>"`},
		{"json string is text", raw(`"x\ny"`), `r1 = text(len=3 B, lines=2) "x\ny"`},
		{"number", 42, "r1 = 42"},
		{"raw number kept", raw(`1.0e+400`), "r1 = 1.0e+400"},
		{"bool", true, "r1 = true"},
		{"null", nil, "r1 = null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := preview(t, tt.v); got != tt.want {
				t.Errorf("preview:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A field holding a large text inside an envelope must say how large it is.
func TestLargeFieldInsideAnEnvelopeAnnouncesItself(t *testing.T) {
	body := "HEAD\n" + strings.Repeat("z", 50_000) + "\nTAIL"
	p := preview(t, map[string]any{"content": body, "path": "./big.txt", "size_bytes": 50_010, "total_lines": 3})
	// The content is most of the envelope: previewed as text, its ends shown.
	for _, want := range []string{"content: text(len=49 KiB, lines=3, head=\"HEAD\\nzzz", `zzz\nTAIL"), path`, `path: "./big.txt"`, "size_bytes: 50010", "bytes=49 KiB"} {
		if !strings.Contains(p, want) {
			t.Errorf("missing %q in %s", want, p)
		}
	}
	if len(p) > DefaultMaxPreview {
		t.Errorf("preview is %d bytes, over the bound", len(p))
	}
}

func TestTextPreviewReportsSizeLinesAndBothEnds(t *testing.T) {
	p := preview(t, "FIRST LINE\n"+strings.Repeat("x", 5000)+"\nLAST LINE")
	for _, want := range []string{"text(len=4.9 KiB, lines=3", `head="FIRST LINE\nxxx`, `…", tail="…xxx`, `\nLAST LINE")`} {
		if !strings.Contains(p, want) {
			t.Errorf("missing %q in %s", want, p)
		}
	}
	if len(p) >= 1200 {
		t.Errorf("preview is %d bytes, want < 1200", len(p))
	}
}

func TestMultibyteText(t *testing.T) {
	for _, s := range []string{strings.Repeat("€", 5000), strings.Repeat("a€😀", 3000), "😀"} {
		p := preview(t, s)
		if !utf8.ValidString(p) || !strings.Contains(p, "text(len=") {
			t.Errorf("bad preview of %d bytes of multi-byte text: %q", len(s), p)
		}
	}
}

func TestObjectKeyThreshold(t *testing.T) {
	obj := func(n int) json.RawMessage {
		var b bytes.Buffer
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%02d":%d`, i, i)
		}
		b.WriteByte('}')
		return b.Bytes()
	}
	p24 := preview(t, obj(24))
	if !strings.Contains(p24, "k00: 0") || !strings.Contains(p24, "k23: 23") || strings.Contains(p24, "total") {
		t.Errorf("24 keys should be described field by field: %s", p24)
	}
	p25 := preview(t, obj(25))
	// Past 24 keys, the first 24 fields are described as they fit, and the
	// other keys named, as many as fit: here all of them.
	if want := "r1 = json(keys=25, bytes=216 B, k00: 0, k01: 1, k02: 2, "; !strings.HasPrefix(p25, want) || !strings.HasSuffix(p25, ", … 1 more key [k24])") {
		t.Errorf("25 keys:\n got %s\nwant prefix %s", p25, want)
	}
	p400 := preview(t, obj(400))
	if !strings.Contains(p400, "more keys [k") || !strings.HasSuffix(p400, ", …, k398, k399])") {
		t.Errorf("400 keys: %s", p400)
	}
}

// nastyValues are inputs that try to break the preview bound.
func nastyValues() map[string][]byte {
	big := strings.Repeat("k", 1<<20)
	var many bytes.Buffer
	many.WriteString("{")
	for i := range 5000 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"%s%d":"%s"`, strings.Repeat("K", 300), i, strings.Repeat("v", 100))
	}
	many.WriteString("}")
	var fields bytes.Buffer
	fields.WriteString("{")
	for i := range 24 {
		if i > 0 {
			fields.WriteString(",")
		}
		fmt.Fprintf(&fields, `"%s%d":"%s"`, strings.Repeat("é", 100), i, strings.Repeat("\\u0001", 120))
	}
	fields.WriteString("}")
	var distinct, stream, table bytes.Buffer
	distinct.WriteString("[")
	for i := range 5000 {
		if i > 0 {
			distinct.WriteString(",")
		}
		fmt.Fprintf(&distinct, `{"%s%d":%d,"id":"%s"}`, strings.Repeat("ü", 50), i, i, strings.Repeat("x", i%300))
	}
	distinct.WriteString("]")
	for i := range 3000 {
		fmt.Fprintf(&stream, `{"k%d":"%s","Action":"%s"}`+"\n", i, strings.Repeat("\\", i%200), strings.Repeat("é", i%90))
	}
	table.WriteString("# generated\n" + strings.Repeat("COLUMN_NAME_"+strings.Repeat("é", 60)+",", 300) + "LAST\n")
	for i := range 2000 {
		table.WriteString(strings.Repeat(`"a ""quoted"", value",`, 300) + fmt.Sprint(i) + "\n")
	}
	return map[string][]byte{
		"thousands of distinct item keys": distinct.Bytes(),
		"a stream of distinct keys":       stream.Bytes(),
		"a table of wide rows":            table.Bytes(),
		"looks like CSV":                  []byte("id,name\n" + strings.Repeat("1,2,3\n\"unterminated\n", 500)),
		"huge key":                        []byte(`{"` + big + `":1}`),
		"huge string item":                []byte(`["` + big + `"]`),
		"huge number":                     []byte(`[` + strings.Repeat("9", 1<<20) + `]`),
		"thousands of fields":             many.Bytes(),
		"24 wide fields":                  fields.Bytes(),
		"deep nesting":                    []byte(strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20)),
		"deep objects":                    []byte(strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)),
		"invalid utf8 text":               bytes.Repeat([]byte("ab\xff\xfe"), 10000),
		"control characters":              bytes.Repeat([]byte{1, 2, 3, '"', '\\'}, 10000),
		"items of escapes":                []byte(`["` + strings.Repeat(`\u0001`, 5000) + `", {"` + strings.Repeat(`\"`, 900) + `": "` + strings.Repeat(`\\`, 900) + `"}]`),
		"long lines":                      []byte(strings.Repeat(strings.Repeat("x", 10000)+"\n", 100)),
	}
}

func TestPreviewBoundHolds(t *testing.T) {
	for name, data := range nastyValues() {
		for _, limit := range []int{1, 96, 100, 150, 300, 700, 2048, 8192} {
			t.Run(fmt.Sprintf("%s/%d", name, limit), func(t *testing.T) {
				s := New(WithMaxPreview(limit))
				h := s.PutOutput(data)
				v, _ := s.Get(h)
				p := RenderPreview(h, v)
				bound := max(limit, MinMaxPreview)
				if len(p) > bound {
					t.Errorf("preview is %d bytes, bound %d: %.200s", len(p), bound, p)
				}
				if !utf8.ValidString(p) {
					t.Errorf("preview is not valid UTF-8: %q", p)
				}
				if !strings.HasPrefix(p, h+" = ") {
					t.Errorf("preview does not start with the handle: %.100s", p)
				}
				if structural := strings.HasPrefix(name, "deep"); !structural && len(v.Bytes()) > 4*bound && !strings.Contains(p, "…") {
					t.Errorf("a preview of %d bytes shows no elision: %s", len(v.Bytes()), p)
				}
			})
		}
	}
}

// A huge preview bound (the proxy's -max-preview takes any int) renders
// the same previews as a large one: no sum of it overflows.
func TestHugeMaxPreview(t *testing.T) {
	text := []byte(strings.Repeat("head line\n", 1000) + "last line")
	obj := []byte(`{"a":"` + strings.Repeat("x", 5000) + `","b":[1,2,3,4,5,6,7]}`)
	for _, data := range [][]byte{text, obj, []byte(`[1,2,3,4,5,6,7,8,9]`), []byte(`12345`)} {
		want := RenderPreview("r1", mustGet(t, New(WithMaxPreview(maxMaxPreview)), data))
		for _, n := range []int{math.MaxInt, math.MaxInt/2 + 1, maxMaxPreview + 1} {
			if got := RenderPreview("r1", mustGet(t, New(WithMaxPreview(n)), data)); got != want {
				t.Errorf("WithMaxPreview(%d): %.200q\nwant %.200q", n, got, want)
			}
		}
		if !strings.Contains(want, "head line") && bytes.HasPrefix(data, []byte("head")) {
			t.Errorf("the text's head is missing: %.200q", want)
		}
	}
}

// mustGet stores data in s and returns its value.
func mustGet(t *testing.T, s *SessionValues, data []byte) Value {
	t.Helper()
	v, ok := s.Get(s.PutOutput(data))
	if !ok {
		t.Fatal("the value just stored is missing")
	}
	return v
}

func TestHugeHandleIsClipped(t *testing.T) {
	s := New()
	h := s.PutOutput([]byte("x"))
	v, _ := s.Get(h)
	p := RenderPreview(strings.Repeat("h\xff", 10000), v)
	if len(p) > DefaultMaxPreview || !utf8.ValidString(p) {
		t.Errorf("preview with a huge invalid handle: %d bytes, valid %v", len(p), utf8.ValidString(p))
	}
}

func TestPutOutputClassifies(t *testing.T) {
	tests := []struct {
		name string
		out  string
		kind Kind
		json string
	}{
		{"stdout 42 stays text", "42", KindText, `"42"`},
		{"true stays text", "true\n", KindText, `"true\n"`},
		{"json string stays text", `"hi"`, KindText, `"\"hi\""`},
		{"object", " {\"a\": 1}\n", KindObject, `{"a": 1}`},
		{"array", "[1, 2]", KindArray, `[1, 2]`},
		{"broken json is text", `{"a": `, KindText, `"{\"a\": "`},
		{"two values are text", `[1] [2]`, KindText, `"[1] [2]"`},
		{"empty", "", KindText, `""`},
		{"binary", "\x89PNG\r\n\x1a\n\x00\x00\xff", KindBinary, `"` + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\xff")) + `"`},
		{"html stays unescaped", "<a href=\"x\">&</a>", KindText, `"<a href=\"x\">&</a>"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			v, _ := s.Get(s.PutOutput([]byte(tt.out)))
			if v.Kind() != tt.kind {
				t.Errorf("kind = %v, want %v", v.Kind(), tt.kind)
			}
			if got := string(v.JSON()); got != tt.json {
				t.Errorf("JSON = %s, want %s", got, tt.json)
			}
			if !json.Valid(v.JSON()) {
				t.Errorf("JSON is not valid: %s", v.JSON())
			}
			if !utf8.ValidString(tt.out) {
				return
			}
			// Output known to be UTF-8 (mcpresult's decoded texts) is
			// stored alike, and previewed alike, without the check.
			h := hooks.PutUTF8Output(s, []byte(tt.out))
			u, _ := s.Get(h)
			if u.Kind() != v.Kind() || string(u.JSON()) != string(v.JSON()) || u.Len() != v.Len() || u.Lines() != v.Lines() {
				t.Errorf("PutUTF8Output: %v %s (len %d), PutOutput: %v %s (len %d)", u.Kind(), u.JSON(), u.Len(), v.Kind(), v.JSON(), v.Len())
			}
			if p, q := RenderPreview("rX", u), RenderPreview("rX", v); p != q {
				t.Errorf("PutUTF8Output's preview:\n%s\nPutOutput's:\n%s", p, q)
			}
		})
	}
}

// Binary content types come from a detector that knows far more formats
// than net/http's sniffer: a real executable of this machine (net/http
// says application/octet-stream) and a gzip stream written by the standard
// library.
func TestBinaryContentTypes(t *testing.T) {
	exe, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("log line\n"), 100))
	zw.Close()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"executable", exe, "application/x-sharedlib"},
		{"gzip", gz.Bytes(), "application/gzip"},
	} {
		s := New()
		v, _ := s.Get(s.PutOutput(tc.data))
		if v.Kind() != KindBinary || v.ContentType() != tc.want {
			t.Errorf("%s: kind %v type %q, want %s", tc.name, v.Kind(), v.ContentType(), tc.want)
		}
	}
}

func TestBinaryValue(t *testing.T) {
	data := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 0xff}, 1000)...)
	s := New()
	h := s.PutOutput(data)
	v, _ := s.Get(h)
	if v.Kind() != KindBinary || v.Len() != len(data) || v.ContentType() != "image/png" {
		t.Fatalf("kind %v len %d type %q", v.Kind(), v.Len(), v.ContentType())
	}
	sum := v.Digest()
	want := fmt.Sprintf("r1 = binary(len=2.0 KiB, type=image/png, sha256=%x…)", sum[:8])
	if p := RenderPreview(h, v); p != want {
		t.Errorf("preview:\n got %s\nwant %s", p, want)
	}
	var back []byte
	if err := json.Unmarshal(v.JSON(), &back); err != nil || !bytes.Equal(back, data) {
		t.Errorf("JSON does not round-trip the bytes: %v", err)
	}
	// A Go string that is not UTF-8 is kept as binary, not altered.
	_, bv := mustPut(t, s, "ok\xffno")
	if bv.Kind() != KindBinary || string(bv.Bytes()) != "ok\xffno" {
		t.Errorf("invalid UTF-8 string stored as %v %q", bv.Kind(), bv.Bytes())
	}
}

func TestPut(t *testing.T) {
	s := New()
	if _, err := s.Put(raw(`{"a":`)); !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("invalid RawMessage: err = %v, want ErrInvalidJSON", err)
	}
	if _, err := s.Put(make(chan int)); err == nil {
		t.Error("Put(chan) succeeded")
	}
	if s.Len() != 0 {
		t.Errorf("failed Puts used %d handles", s.Len())
	}
	tests := []struct {
		name string
		v    any
		kind Kind
		len  int
		json string
	}{
		{"struct", struct {
			A int    `json:"a"`
			B string `json:"b"`
		}{1, "<x>"}, KindObject, 2, `{"a":1,"b":"<x>"}`},
		{"slice", []string{"a", "b"}, KindArray, 2, `["a","b"]`},
		{"string", "héllo", KindText, 6, `"héllo"`},
		{"bytes are binary", []byte("hi"), KindBinary, 2, `"aGk="`},
		{"raw keeps spacing", raw(` [1, 2 ,3] `), KindArray, 3, `[1, 2 ,3]`},
		{"float", 1.5, KindNumber, 0, `1.5`},
		{"nil", nil, KindNull, 0, `null`},
		{"raw string decoded", raw(`"\u00e9\n"`), KindText, 3, `"é\n"`},
		{"duplicate keys counted", raw(`{"a":1,"a":2}`), KindObject, 2, `{"a":1,"a":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v := mustPut(t, s, tt.v)
			if v.Kind() != tt.kind || v.Len() != tt.len || string(v.JSON()) != tt.json {
				t.Errorf("got %v len %d %s, want %v len %d %s", v.Kind(), v.Len(), v.JSON(), tt.kind, tt.len, tt.json)
			}
		})
	}
	// Storing a Value again gives a new handle for the same value.
	_, v := mustPut(t, s, raw(`[1,2]`))
	h2, v2 := mustPut(t, s, v)
	if string(v2.JSON()) != "[1,2]" || h2 == "" {
		t.Errorf("re-put Value: %s %s", h2, v2.JSON())
	}
}

func TestZeroValueIsNull(t *testing.T) {
	var v Value
	if v.Kind() != KindNull || string(v.JSON()) != "null" || RenderPreview("r1", v) != "r1 = null" {
		t.Errorf("zero Value: %v %s %s", v.Kind(), v.JSON(), RenderPreview("r1", v))
	}
}

func TestTextLines(t *testing.T) {
	for text, want := range map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "\n": 1, "\n\n": 2, "a\n\nb\n": 3} {
		s := New()
		v, _ := s.Get(s.PutOutput([]byte(text)))
		if v.Lines() != want {
			t.Errorf("lines of %q = %d, want %d", text, v.Lines(), want)
		}
		// A JSON string field counts lines the same way.
		b, _ := json.Marshal(text)
		if _, got := jsontext.StringStats(b); got != want {
			t.Errorf("jsontext.StringStats lines of %q = %d, want %d", text, got, want)
		}
	}
}

func TestDeepNestingDoesNotOverflow(t *testing.T) {
	const depth = 5_000_000
	data := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
	s := New()
	v, _ := s.Get(s.PutOutput(data))
	if v.Kind() != KindArray || v.Len() != 1 {
		t.Fatalf("kind %v len %d", v.Kind(), v.Len())
	}
	if p := RenderPreview("r1", v); !strings.HasPrefix(p, "r1 = array(len=1, bytes=9.5 MiB, [0]=array(len=1, bytes=9.5 MiB, [0]=") || !strings.HasSuffix(p, "[array(len=1)])))))") {
		t.Errorf("preview = %s", p)
	}
}

func TestConcurrentPutGet(t *testing.T) {
	s := New()
	const workers, each = 8, 200
	var wg sync.WaitGroup
	handles := make([][]string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h := s.PutOutput(fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i))
				handles[w] = append(handles[w], h)
				v, ok := s.Get(h)
				if !ok || !strings.Contains(string(v.JSON()), fmt.Sprintf(`"i":%d`, i)) {
					t.Errorf("Get(%s) = %s, %v", h, v.JSON(), ok)
				}
				_ = RenderPreview(h, v)
				_ = s.Len()
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, hs := range handles {
		for _, h := range hs {
			if seen[h] {
				t.Errorf("handle %s handed out twice", h)
			}
			seen[h] = true
		}
	}
	for i := 1; i <= workers*each; i++ {
		if !seen[fmt.Sprintf("r%d", i)] {
			t.Errorf("handle r%d missing: handles are not contiguous", i)
		}
	}
}

func TestReferenceHintNamesTheTypedForm(t *testing.T) {
	hint := ReferenceHint("r7")
	for _, want := range []string{`"$r7"`, `"$r7.<field>"`, `"$r7.0"`, "read_value"} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint lacks %s: %s", want, hint)
		}
	}
	if !strings.HasPrefix(hint, "\n") {
		t.Errorf("hint does not start a new line: %q", hint)
	}
}

func TestObserve(t *testing.T) {
	s := New(WithInlineLimit(64))
	small := s.Observe([]byte(`{"a":1}`))
	if small.Previewed || small.Handle != "r1" || small.Text != "{\"a\":1}\n[stored as r1 (object, 1 key, 7 B): pass \"$r1\" or \"$r1.<field>\" as a tool argument to reuse it]" {
		t.Errorf("small result: %+v", small)
	}
	big := s.Observe(bytes.Repeat([]byte("line\n"), 100))
	if !big.Previewed || !strings.HasPrefix(big.Text, "r2 = text(len=500 B, lines=100") || !strings.HasSuffix(big.Text, "\n[r2 holds the full value for this run: pass \"$r2\" as a tool argument to use all of it; read_value {\"ref\":\"r2\"} pages its bytes]") {
		t.Errorf("large result: %+v", big)
	}
	bin := s.Observe([]byte{0xff})
	if !bin.Previewed || !strings.Contains(bin.Text, "binary(len=1 B") {
		t.Errorf("binary result: %+v", bin)
	}
	never := New(WithInlineLimit(-1)).Observe([]byte(`1`))
	if !never.Previewed {
		t.Errorf("negative inline limit still inlined: %+v", never)
	}
}

// TestPreviewGolden checks the preview of a set of realistic values against
// testdata/previews.golden; run with -update to rewrite it after a
// deliberate change of format.
func TestPreviewGolden(t *testing.T) {
	listing := make([]map[string]any, 240)
	for i := range listing {
		listing[i] = map[string]any{"path": fmt.Sprintf("src/pkg%02d/file%03d.go", i/10, i), "size": 1000 + i*37, "dir": false}
	}
	rows := make([]map[string]any, 100)
	for i := range rows {
		rows[i] = map[string]any{"id": i, "email": fmt.Sprintf("user%d@example.com", i), "tags": []string{"a", "b"}}
	}
	log := strings.Repeat("2026-12-02T12:00:00Z INFO request ok path=/v1/items status=200\n", 2000) + "2026-12-02T12:00:01Z ERROR disk full\n"
	cases := []struct {
		name string
		v    any
	}{
		{"file listing", listing},
		{"query rows", map[string]any{"rows": rows, "count": 100, "query": "select id, email, tags from users"}},
		{"read_file envelope", map[string]any{"content": "package main\n\n" + strings.Repeat("// comment line\n", 3000), "path": "./main.go", "size_bytes": 48014, "total_lines": 3002}},
		{"log text", log},
		{"unicode text", strings.Repeat("Grüße aus Köln — 東京 😀\n", 200)},
		{"wide object", func() map[string]int {
			m := map[string]int{}
			for i := range 300 {
				m[fmt.Sprintf("field_%03d", i)] = i
			}
			return m
		}()},
		{"nested arrays", [][]int{{1, 2}, {3}, {}, {4, 5, 6}, {7}, {8, 9}, {10}}},
		{"mixed scalars", []any{nil, true, 1.25, "s", map[string]any{}, []any{}}},
		{"yaml manifest", "apiVersion: v1\nkind: List\nitems:\n" + strings.Repeat("- kind: Pod\n  metadata:\n    name: web\n  status:\n    phase: Running\n", 60) + "metadata:\n  resourceVersion: \"\"\n"},
		{"svg", `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="480" viewBox="0 0 640 480"><title>chart</title>` + strings.Repeat(`<rect id="bar" x="1" y="2" width="10" height="20"/>`, 50) + `<text id="label">done</text></svg>`},
		{"html page", "<!DOCTYPE html>\n<html><head><title>Release notes</title></head><body>\n<h1>Release notes</h1>\n" + strings.Repeat("<h2>v1.2</h2><ul><li><a href=\"#fix\">a fix</a></li></ul>\n", 40) + "<table><tr><td>end</td></tr></table></body></html>\n"},
		{"markdown notes", "# Runbook\n\nSteps for the release.\n\n## Build\n\n```sh\nmake release\n```\n\n## Hosts\n\n| host | role |\n|------|------|\n" + strings.Repeat("| web-1 | frontend |\n", 80) + "\n## Rollback\n\nRun `make rollback`.\n"},
		{"unified diff", "diff --git a/go.mod b/go.mod\n--- a/go.mod\n+++ b/go.mod\n@@ -3,2 +3,3 @@\n go 1.26\n-require x v1\n+require x v2\n+require y v1\n"},
		{"png image", png},
	}
	var got bytes.Buffer
	for _, c := range cases {
		fmt.Fprintf(&got, "# %s\n%s\n\n", c.name, preview(t, c.v))
	}
	path := filepath.Join("testdata", "previews.golden")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestPreviewGolden -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("previews differ from %s (-want +got):\n%s", path, diff)
	}
}

// The zero SessionValues behaves as New() without options: the same
// handles, previews, transcript text and limits.
func TestZeroSessionValues(t *testing.T) {
	var zero SessionValues
	fresh := New()
	big := []byte(`{"rows":[` + strings.Repeat(`{"id":1,"name":"a row with some padding"},`, 200) + `{"id":2}]}`)
	for _, out := range [][]byte{[]byte("short text"), big, {0xff, 0xfe}} {
		a, b := zero.Observe(out), fresh.Observe(out)
		if diff := cmp.Diff(b, a); diff != "" {
			t.Errorf("Observe of %d bytes (-New +zero):\n%s", len(out), diff)
		}
	}
	args := []byte(`{"x":"$r2.rows.-1.id"}`)
	a, _, errA := zero.Resolve(args)
	b, _, errB := fresh.Resolve(args)
	if string(a) != string(b) || errA != nil || errB != nil {
		t.Errorf("Resolve: zero %s %v, New %s %v", a, errA, b, errB)
	}
}

// Transcript gives, for any stored handle, what Observe gave when it was
// stored, and false for an unknown handle.
func TestTranscript(t *testing.T) {
	s := New(WithInlineLimit(64))
	for _, out := range []string{"small", strings.Repeat("large text\n", 100), `{"a":1}`} {
		obs := s.Observe([]byte(out))
		got, ok := s.Transcript(obs.Handle)
		if !ok || got != obs {
			t.Errorf("Transcript(%s) = %+v, %v; want %+v", obs.Handle, got, ok, obs)
		}
	}
	if _, ok := s.Transcript("r99"); ok {
		t.Error("Transcript of an unknown handle")
	}
}

// TestFirstHandle: a store made WithFirstHandle(5) hands out r5, r6, …;
// below r5 nothing is stored, in Get, references and read_value alike.
func TestFirstHandle(t *testing.T) {
	s := New(WithFirstHandle(5))
	if got := s.Next(); got != "r5" {
		t.Fatalf("Next = %s, want r5", got)
	}
	h1 := s.PutOutput([]byte(`{"a":[1,2,3]}`))
	h2 := s.PutOutput([]byte("text"))
	if h1 != "r5" || h2 != "r6" || s.Next() != "r7" || s.Len() != 2 {
		t.Fatalf("handles %s %s, next %s, len %d", h1, h2, s.Next(), s.Len())
	}
	if diff := cmp.Diff([]string{"r5", "r6"}, s.Handles()); diff != "" {
		t.Errorf("Handles (-want +got):\n%s", diff)
	}
	for _, h := range []string{"r1", "r4", "r7"} {
		if _, ok := s.Get(h); ok {
			t.Errorf("Get(%s) found a value", h)
		}
	}
	out, _, err := s.Resolve([]byte(`{"x":"$r5.a.-1","y":"$r6"}`))
	if err != nil || string(out) != `{"x":3,"y":"text"}` {
		t.Errorf("Resolve: %s, %v", out, err)
	}
	// A handle never handed out is left as it is, and Prepare refuses it.
	if out, _, err := s.Resolve([]byte(`{"x":"$r2"}`)); err != nil || string(out) != `{"x":"$r2"}` {
		t.Errorf("Resolve of $r2: %s, %v", out, err)
	}
	if _, _, err := s.Prepare(nil, []byte(`{"x":"$r2"}`)); err == nil {
		t.Error("Prepare took $r2")
	}
	if _, err := s.Read("$r4.a", 0, 10); !errors.Is(err, ErrUnknownHandle) || !strings.Contains(err.Error(), "stored: r5…r6") {
		t.Errorf("Read of $r4.a: %v", err)
	}
	if s0 := New(WithFirstHandle(0)); s0.PutOutput([]byte("x")) != "r1" {
		t.Error("WithFirstHandle(0) does not start at r1")
	}
}

// TestWhiteSpaceAroundJSON: white space before a large JSON value, or
// before the JSON a string holds, changes nothing of its preview (the item
// keys of an array were read from the wrong offsets).
func TestWhiteSpaceAroundJSON(t *testing.T) {
	var rows strings.Builder
	rows.WriteString("[")
	for i := range 300 {
		if i > 0 {
			rows.WriteString(",")
		}
		fmt.Fprintf(&rows, `{"identifier":%d,"name":"n%d","status":"active"}`, i, i)
	}
	rows.WriteString("]")
	quoted, _ := json.Marshal("\n  " + rows.String())
	plainQuoted, _ := json.Marshal(rows.String())
	for _, c := range []struct{ name, spaced, plain string }{
		{"value", " \n\t" + rows.String() + "\n", rows.String()},
		{"in a string", `{"note":"x","text":` + string(quoted) + `}`, `{"note":"x","text":` + string(plainQuoted) + `}`},
	} {
		s := New()
		got, want := s.Observe([]byte(c.spaced)).Text, s.Observe([]byte(c.plain)).Text
		got = strings.ReplaceAll(got, "r1", "r2")
		if c.name == "in a string" {
			// The string's length differs by the white space it holds.
			got, want = got[strings.Index(got, "items="):], want[strings.Index(want, "items="):]
		}
		if got != want {
			t.Errorf("%s: with white space:\n%s\nwithout:\n%s", c.name, got, want)
		}
		if !strings.Contains(want, "identifier: number") {
			t.Errorf("%s: the preview does not name the items' keys:\n%s", c.name, want)
		}
	}
}

// A result shown whole says what it is on its line: its kind, size and
// the count that fits it, what a text holds, an envelope's text; and the
// forms offered to pass it fit its kind, as do those of a hint.
func TestStoredLineAndHintFitTheKind(t *testing.T) {
	mcp := `{"content":[{"type":"text","text":"` + strings.Repeat(`line of a file\n`, 34) + `"}],"isError":false}`
	for _, tc := range []struct {
		name, out    string
		what, passes string
	}{
		{"object", `{"a":1,"b":[1,2],"c":"x"}`, "object, 3 keys, 25 B", `"$r1" or "$r1.<field>"`},
		{"array", `[{"id":1},{"id":2}]`, "array, 2 items, 19 B", `"$r1" or "$r1.0"`},
		{"text", "one\ntwo\nthree", "text, 13 B, 3 lines", `"$r1" as`},
		{"stream", "{\"A\":1}\n{\"A\":2}\n", "text, 16 B, 2 lines; a stream of 2 JSON values", `"$r1" or "$r1.0"`},
		{"table", "id,name\n1,a\n2,b\n", "text, 16 B, 3 lines; a table of 2 rows, 2 columns", `"$r1" as`},
		{"envelope", mcp, `object, 2 keys, 599 B; "$r1.content.0.text" is text of 510 B, 34 lines`, `"$r1" or "$r1.<field>"`},
		{"envelope with white space", " {\"content\" : [ {\"type\":\"text\", \"text\" : \"" + strings.Repeat(`a line\n`, 40) + "\"} ]\n}\n", `object, 1 key, 367 B; "$r1.content.0.text" is text of 280 B, 40 lines`, `"$r1" or "$r1.<field>"`},
		{"array envelope", "[ {\"text\":\"" + strings.Repeat(`a line\n`, 40) + "\"} ]", `array, 1 item, 335 B; "$r1.0.text" is text of 280 B, 40 lines`, `"$r1" or "$r1.0"`},
		{"key with a dot", `{"a.b":"` + strings.Repeat("x", 300) + `"}`, `object, 1 key, 310 B; "$r1.a\.b" is text of 300 B, 1 line`, `"$r1" or "$r1.<field>"`},
	} {
		s := New()
		o := s.Observe([]byte(tc.out))
		line := o.Text[strings.LastIndex(o.Text, "\n[")+1:]
		if o.Previewed || !strings.HasPrefix(line, "[stored as r1 ("+tc.what+"): pass "+tc.passes) {
			t.Errorf("%s: %q, want [stored as r1 (%s): pass %s…", tc.name, line, tc.what, tc.passes)
		}
		if tc.passes == `"$r1" as` && strings.Contains(line, "<field>") {
			t.Errorf("%s: a field offered for text: %s", tc.name, line)
		}
	}
	// A string put as text that holds JSON is JSON text, and its parts are
	// named as JSON's.
	s := New()
	h, _ := s.Put(`  [1,2,3] `)
	if o, _ := s.Transcript(h); !strings.HasSuffix(o.Text, `[stored as r1 (text, 10 B, 1 line; JSON, an array of 3 items): pass "$r1" or "$r1.0" as a tool argument to reuse it]`) {
		t.Errorf("text holding JSON: %q", o.Text)
	}
	for _, tc := range []struct {
		out       string
		want, not []string
	}{
		{strings.Repeat("a log line\n", 400), []string{`pass "$r1" as a tool argument to use all of it; read_value`}, []string{"<field>", `"$r1.0"`}},
		{"[" + strings.Repeat(`{"id":1},`, 400) + "1]", []string{`"$r1.0" for an item ("$r1.-1" is the last)`}, []string{"<field>"}},
		{`{"rows":"` + strings.Repeat("x", 4000) + `"}`, []string{`"$r1.<field>" for a part`}, []string{`"$r1.0"`}},
		{strings.Repeat("{\"A\":1}\n", 400), []string{`"$r1.0" for an item`}, []string{"<field>"}},
	} {
		s := New()
		o := s.Observe([]byte(tc.out))
		v, _ := s.Get("r1")
		if hint := ReferenceHintFor("r1", v); !o.Previewed || !strings.HasSuffix(o.Text, hint) {
			t.Errorf("%.40q: not previewed with ReferenceHintFor: %s", tc.out, o.Text)
		}
		for _, w := range tc.want {
			if !strings.Contains(o.Text, w) {
				t.Errorf("%.40q: %s is not in\n%s", tc.out, w, o.Text)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(o.Text[strings.LastIndex(o.Text, "\n["):], n) {
				t.Errorf("%.40q: the hint offers %s:\n%s", tc.out, n, o.Text)
			}
		}
	}
}

// TestHintHandleMended: a handle given to StoredLine or ReferenceHint that
// is not valid UTF-8, or is long, is shown mended or clipped, and every
// reference the line offers names it as shown.
func TestHintHandleMended(t *testing.T) {
	s := New()
	v, _ := s.Get(s.PutOutput([]byte(`{"a":1}`)))
	long := "r" + strings.Repeat("9", 40)
	for _, c := range []struct{ handle, shown string }{
		{"r1", "r1"},
		{"r\xff1", "r\uFFFD1"},
		{long, long[:handleBudget-len(jsontext.Ellipsis)] + jsontext.Ellipsis},
	} {
		for _, line := range []string{StoredLine(c.handle, v), ReferenceHintFor(c.handle, v)} {
			if !utf8.ValidString(line) {
				t.Errorf("%q: line not valid UTF-8: %q", c.handle, line)
			}
			if n := strings.Count(line, "$"+c.shown); n < 2 || n != strings.Count(line, "$") {
				t.Errorf("%q: %d of the line's references name %q, want all: %q", c.handle, n, c.shown, line)
			}
			if c.shown != c.handle && strings.Contains(line, c.handle) {
				t.Errorf("%q: line shows it unmended: %q", c.handle, line)
			}
		}
	}
}

// TestFirstIndexConcurrent: a value shown whole is indexed on first use;
// goroutines that use it for the first time at once (previews, references
// into it, copies of it by Put) share one index and see the same thing.
// Run under -race it checks how the index is published.
func TestFirstIndexConcurrent(t *testing.T) {
	for _, raw := range []string{
		`{"status":"ok","rows":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"next":null}`,
		"id,name\n1,a\n2,b\n3,c\n",
		"{\"id\":1}\n{\"id\":2}\n",
	} {
		s := New()
		h := s.PutOutput([]byte(raw))
		v, _ := s.Get(h)
		o := New()
		other, _ := o.Get(o.PutOutput([]byte(raw))) // indexed here, not v
		want := RenderPreview(h, other)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				switch i % 3 {
				case 0:
					if got := RenderPreview(h, v); got != want {
						t.Errorf("preview %q, want %q", got, want)
					}
				case 1:
					if _, _, err := s.Resolve([]byte(`{"a":"$` + h + `"}`)); err != nil {
						t.Error(err)
					}
				case 2:
					c, err := s.Put(v)
					if err != nil {
						t.Error(err)
						return
					}
					cv, _ := s.Get(c)
					if got := RenderPreview(h, cv); got != want {
						t.Errorf("copy's preview %q, want %q", got, want)
					}
				}
			})
		}
		wg.Wait()
	}
}
