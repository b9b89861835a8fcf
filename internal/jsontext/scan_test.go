package jsontext

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestScanJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`1`, `-0`, `-0.5e+10`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `"a`, `"\x"`, `"\u12"`, "\"\x01\"", `"\ud800"`,
		`[1,]`, `[,1]`, `{"a"}`, `{"a":1,}`, `{1:2}`, `[1 2]`, `{}`, `[]`, ` [ ] `, `nul`, `true false`, "\"\xff\"",
		`{"a":[{"b":null}]}`, `[[[]]]`, `]`, `}`, ``, ` `, `[1]x`, `"\/"`, "[\"\u2028\"]",
	} {
		_, _, err := Scan([]byte(in), Limits{})
		want := json.Valid([]byte(in)) && utf8.ValidString(in) // JSON text must be UTF-8 (RFC 8259 §8.1)
		if got := err == nil; got != want {
			t.Errorf("Scan(%q) valid = %v, want %v (err %v)", in, got, want, err)
		}
	}
}

// Scan of a small message allocates only the Shape's Head and the stack of
// open brackets, not its scanner: a proxy scans several per call.
func TestScanSmallAllocs(t *testing.T) {
	d := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"n":[1,2,3]}}}`)
	if n := testing.AllocsPerRun(10, func() {
		if _, sh, err := Scan(d, Limits{Head: 6}); err != nil || sh.Count != 4 {
			t.Fatalf("Scan: %d members, %v", sh.Count, err)
		}
	}); n > 2 {
		t.Errorf("Scan allocated %v times, want 2", n)
	}
}

// TestScanSplit checks both outcomes of the two-goroutine scan's guess of a
// boundary between array items: confirmed, and wrong (inside an item).
func TestScanSplit(t *testing.T) {
	items := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"id":%d,"tags":["x","y"]}`, i)
		}
		return b.String()
	}
	tests := []struct {
		name      string
		doc       string
		confirmed bool
	}{
		{"array of objects", "[" + items(1000) + "]", true},
		{"guess inside one big item", `[{"all":[` + items(1000) + `]}]`, false},
		{"error in the second half", "[" + items(750) + ",{]" + items(250) + "]", true},
		{"error in the first half", "[" + items(10) + ",}" + items(990) + "]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := []byte(tt.doc)
			mid := guessItemStart(d, len(d)/2)
			if mid < 0 {
				t.Fatal("no boundary guessed")
			}
			if _, _, _, stopped := scanWhole(d, 0, false, mid, Limits{Head: 25, Tail: 2, Keys: 8}); stopped != tt.confirmed {
				t.Errorf("guess at %d confirmed = %v, want %v", mid, stopped, tt.confirmed)
			}
			top1, sh1, err1, _ := scanWhole(d, 0, false, -1, Limits{Head: 25, Tail: 2, Keys: 8})
			top2, sh2, err2, ok := scanSplit(d, Limits{Head: 25, Tail: 2, Keys: 8})
			if !ok {
				t.Fatal("scanSplit declined")
			}
			if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
				t.Fatalf("errors differ: %v / %v", err1, err2)
			}
			if err1 != nil {
				return
			}
			if top1 != top2 || sh1.Count != sh2.Count {
				t.Errorf("top %v/%v count %d/%d", top1, top2, sh1.Count, sh2.Count)
			}
			opt := cmp.AllowUnexported(Child{}, Span{})
			if diff := cmp.Diff(sh1.Head, sh2.Head, opt); diff != "" {
				t.Errorf("head (-one +split):\n%s", diff)
			}
			k := min(sh1.Count, 2)
			if diff := cmp.Diff(sh1.Last(k), sh2.Last(k), opt); diff != "" {
				t.Errorf("tail (-one +split):\n%s", diff)
			}
		})
	}
}

// TestItemsManyKeys checks the key table of Items past the keys found by
// comparison, up to and past its limit.
func TestItemsManyKeys(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		// Each item has keys k0…k(i%40) in a rotating order, and "k1" twice.
		b.WriteByte('{')
		for j := range i%40 + 1 {
			fmt.Fprintf(&b, `"k%d":%d,`, (j+i)%40, j)
		}
		b.WriteString(`"k1":"x"}`)
	}
	b.WriteByte(']')
	for _, max := range []int{1, keysCompared - 1, keysCompared, keysCompared + 1, 30, 40, 256} {
		_, sh, err := Scan(b.Bytes(), Limits{Keys: max})
		if err != nil {
			t.Fatal(err)
		}
		checkItems(t, b.Bytes(), sh.Items, max)
	}
}

// TestItemsSpacedKeys checks the fast path for the keys of items after
// the first (sameKey) where white space comes before or after the colon,
// and where a byte that is not white space, but below it, follows it.
func TestItemsSpacedKeys(t *testing.T) {
	// Each kind but the first item's comes after white space only.
	d := []byte("[{\"a\":1,\"b\":\"x\"},{\"a\": true,\"b\" :[]},{\"a\"\t:\tnull ,\"b\"\n:\r\n{}},{\"a\":4,\"b\":\"y\"}]")
	_, sh, err := Scan(d, Limits{Keys: 8})
	if err != nil {
		t.Fatal(err)
	}
	checkItems(t, d, sh.Items, 8)
	for _, bad := range []string{"[{\"a\":1},{\"a\":\x01}]", "[{\"a\":1},{\"a\" \x01:1}]", "[{\"a\":1},{\"a\":"} {
		if _, _, err := Scan([]byte(bad), Limits{Keys: 8}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestScanOutline(t *testing.T) {
	d := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"},{"type":"image"}],"structuredContent":{"a":[1]},"isError":false}}`)
	descend := func(depth int, key []byte) bool {
		switch depth {
		case 1:
			return KeyEquals(key, "result")
		case 2:
			return KeyEquals(key, "content")
		}
		return depth == 3
	}
	_, sh, err := Scan(d, Limits{Outline: 32, Descend: descend})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range sh.Outline {
		got = append(got, fmt.Sprintf("%d %s %s", p.Depth, p.Key.Of(d), p.Val.Of(d)))
	}
	want := []string{
		`1 "jsonrpc" "2.0"`,
		`1 "id" 1`,
		`1 "result" {"content":[{"type":"text","text":"hi"},{"type":"image"}],"structuredContent":{"a":[1]},"isError":false}`,
		`2 "content" [{"type":"text","text":"hi"},{"type":"image"}]`,
		`3  {"type":"text","text":"hi"}`,
		`4 "type" "text"`,
		`4 "text" "hi"`,
		`3  {"type":"image"}`,
		`4 "type" "image"`,
		`2 "structuredContent" {"a":[1]}`,
		`2 "isError" false`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("outline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, sh, _ := Scan(d, Limits{Outline: 10, Descend: descend}); sh.Outline != nil {
		t.Errorf("an outline of more parts than asked for is kept: %v", sh.Outline)
	}
}

// TestScanNested holds the Nested shape to Scan of the member alone
// (checkNested) on documents too large for the fuzzer to find often:
// members with marks, key blocks and items, and more arrays and objects
// than are recorded.
func TestScanNested(t *testing.T) {
	join := func(open, close string, n int, item func(i int) string) string {
		items := make([]string, n)
		for i := range n {
			items[i] = item(i)
		}
		return open + strings.Join(items, " ,\n") + close
	}
	rows := func(n int) string {
		return join("[", "]", n, func(i int) string {
			return fmt.Sprintf(`{"id":%d,"name":"n\u00e9%d","tags":["a","b"],"x%d":null}`, i, i, i%20)
		})
	}
	fields := func(n int) string {
		return join("{", "}", n, func(i int) string { return fmt.Sprintf(`"key\"%d":{"v":[%d]}`, i, i) })
	}
	var many strings.Builder
	many.WriteString(`{"first":"` + strings.Repeat("s", 5000) + `"`)
	for i := range nestedMembers + 4 {
		fmt.Fprintf(&many, `,"m%d":%s`, i, rows(i+1)) // the largest is past the first 16
	}
	many.WriteString("}")
	for _, doc := range []string{
		`{"object":"list","items":` + rows(400) + `,"has_more":false}`,
		` {"meta":{"a":1}, "data": ` + fields(900) + ` , "tail":[1,2]} `,
		`{"a":` + rows(50) + `,"b":` + rows(50) + `,"c":` + rows(49) + `}`, // equal sizes: the first
		many.String(),
		`{"text":"` + strings.Repeat("t", 10000) + `","small":[1]}`,
		`{"x":1,"y":"z"}`,
	} {
		if !json.Valid([]byte(doc)) {
			t.Fatalf("test document is not JSON: %.200s", doc)
		}
		checkNested(t, []byte(doc))
	}
}

// TestScanNestedMemory: small members cost the nested recording little
// memory, however large the rest of the document; it grows as a member
// needs it (it once took room for the rest of the document at each one).
func TestScanNestedMemory(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range nestedMembers {
		fmt.Fprintf(&b, `"m%d":%s,`, i, []string{`[]`, `{}`, `[1,{"a":2}]`, `{"k":[3]}`}[i%4])
	}
	b.WriteString(`"text":"` + strings.Repeat("x", 4<<20) + `"}`)
	d := []byte(b.String())
	allocated := func(nested bool) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, sh, err := Scan(d, Limits{Head: 8, Tail: 2, Keys: 16, Index: true, Nested: nested})
		runtime.ReadMemStats(&after)
		if err != nil || (sh.Nested != nil) != nested {
			t.Fatalf("Scan: %v, nested %v", err, sh.Nested)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	without := allocated(false) // the top-level object's key blocks, mostly
	if with := allocated(true); with > without+64<<10 {
		t.Errorf("Scan of a %d-byte object of small members allocated %d bytes with Nested, %d without; want at most 64 KiB more", len(d), with, without)
	}
}

// TestScanSplitObject: the documents FuzzScanSplitObject builds do split,
// and Scan splits a large envelope to the same Shape as one scan.
func TestScanSplitObject(t *testing.T) {
	for _, data := range []string{`1`, `[{"x":1},{"y":[2]}]`, `{"a":"` + strings.Repeat("b", 3000) + `"}`} {
		doc := fmt.Appendf(nil, `{"h":%s,"rows":[%s{"j":%s},{"k":1}],"t":%s}`, data, strings.Repeat(`{"i":0},`, 400), data, data)
		if !checkSplitObject(t, doc) {
			t.Errorf("no split of %.100q…", doc)
		}
	}
	// A member after the split that is larger than the one split, but
	// past the first nestedMembers arrays and objects of the object, which
	// one scan does not record: the split scan cannot tell which of those
	// before it is the largest, and records no Nested.
	var late strings.Builder
	late.WriteString(`{"s":"` + strings.Repeat("s", 6000) + `","p0":[0],"p1":[1],"p2":[2],"p3":[3],"rows":[` + strings.Repeat(`{"i":0},`, 500) + `{"i":1}]`)
	for i := range nestedMembers - 4 {
		fmt.Fprintf(&late, `,"m%d":[%d]`, i, i)
	}
	late.WriteString(`,"later":[` + strings.Repeat(`[1,2,3],`, 700) + `[]]}`)
	if !checkSplitObject(t, []byte(late.String())) {
		t.Errorf("no split of the document with late members")
	}
	if _, sh, _, _ := scanSplitObject([]byte(late.String()), 0, Limits{Index: true, Nested: true}); sh.Nested != nil {
		t.Errorf("split scan recorded %v as the largest member", sh.NestedVal)
	}
	var rows strings.Builder
	for i := 0; rows.Len() < splitScanMin; i++ {
		fmt.Fprintf(&rows, `{"id":%d,"name":"n%d","tags":["a"]},`, i, i)
	}
	doc := []byte(`{"object":"list","data":[` + rows.String() + `{}],"has_more":false}`)
	lim := Limits{Head: 5, Tail: 2, Keys: 8, Index: true, Nested: true}
	_, sh, err := Scan(doc, lim)
	_, one, err1, _ := scanWhole(doc, 0, false, -1, lim)
	if err != nil || err1 != nil || sh.Nested == nil || sh.NestedVal != one.NestedVal || sh.Nested.Count != one.Nested.Count || sh.Count != one.Count {
		t.Fatalf("Scan %v %+v, one scan %v %+v", err, sh.NestedVal, err1, one.NestedVal)
	}
	if !checkSplitObject(t, doc) {
		t.Errorf("no split of the envelope")
	}
}

// TestSplitItemKeys: when the second half of a split scan meets more
// distinct keys than it tracks before a key the first half tracks, the
// counts cannot be merged: the array is scanned again, whole, and an
// object's member gets no Nested, rather than a key's fields counted as
// untracked (which made a key every item has look optional).
func TestSplitItemKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for range 200 {
		b.WriteString(`{"x":1},`)
	}
	for i := range 200 {
		fmt.Fprintf(&b, `{"k%d":1},`, i)
	}
	b.WriteString(`{"x":1}]`)
	arr := []byte(b.String())
	lim := Limits{Head: 3, Tail: 2, Keys: 8, Index: true, Nested: true}
	_, sh, err, ok := scanSplit(arr, lim)
	if !ok || err != nil {
		t.Fatalf("scanSplit: %v %v", ok, err)
	}
	checkItems(t, arr, sh.Items, 8)
	obj := []byte(`{"pad":"` + strings.Repeat("p", 1500) + `","rows":` + b.String() + `}`)
	if !checkSplitObject(t, obj) {
		t.Errorf("no split of %.100q…", obj)
	}
	// The review's case: one key kept, split before another key.
	small := []byte(`{"pad":"` + strings.Repeat("p", 1500) + `","rows":[` + strings.Repeat(`{"x":1},`, 400) + `{"y":1},{"x":1}]}`)
	lim1 := Limits{Keys: 1, Nested: true}
	_, one, _, _ := scanWhole(small, 0, false, -1, lim1)
	_, two, _, _ := scanSplitObject(small, 0, lim1)
	if two.Nested != nil && (two.Nested.Items.Keys[0].Count != one.Nested.Items.Keys[0].Count || two.Nested.Items.Untracked != one.Nested.Items.Untracked) {
		t.Errorf("split items %+v, one scan %+v", *two.Nested.Items, *one.Nested.Items)
	}
}

// TestSummaryMemory: what Scan records of the values of each key takes
// the same memory whether the items hold one value or a million distinct
// ones, however long.
func TestSummaryMemory(t *testing.T) {
	doc := func(distinct bool) []byte {
		var b bytes.Buffer
		b.WriteByte('[')
		for i := range 20_000 {
			if i > 0 {
				b.WriteByte(',')
			}
			v := 0
			if distinct {
				v = i
			}
			fmt.Fprintf(&b, `{"s":"v%d","n":%d,"long":"%s%d","f":%d.5e%d}`, v, v, strings.Repeat("x", v%100), v, v, v%300)
		}
		b.WriteByte(']')
		return b.Bytes()
	}
	allocated := func(d []byte) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, sh, err, _ := scanWhole(d, 0, false, -1, Limits{Head: 3, Tail: 2, Keys: 256})
		runtime.ReadMemStats(&after)
		if err != nil || sh.Items == nil || len(sh.Items.Keys) != 4 {
			t.Fatalf("Scan: %v, %+v", err, sh.Items)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	same, distinct := doc(false), doc(true)
	a, b := allocated(same), allocated(distinct)
	if b > a+1024 {
		t.Errorf("Scan allocated %d bytes for items of distinct values, %d for items of one value", b, a)
	}
	_, sh, _ := Scan(distinct, Limits{Keys: 8})
	for _, k := range sh.Items.Keys {
		if !k.Values.Open && k.Values.NStrings > 0 {
			t.Errorf("key %s: %d strings told, of 20000 distinct ones", k.Key.Of(distinct), k.Values.NStrings)
		}
	}
}

// NumberValue is strconv.ParseFloat's value of a JSON number.
func TestNumberValue(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-1", "0.1", "123.45", "-9.999", "999999999999999", "9999999999999999", "0.000000000000001",
		"1.7976931348623157e308", "1e400", "-1e400", "4.9e-324", "1e-400", "12345678901234567890", "0.30000000000000004", "1E+2", "2.5e-3"} {
		want, _ := strconv.ParseFloat(s, 64)
		if got := NumberValue([]byte(s)); got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("NumberValue(%s) = %v, want %v", s, got, want)
		}
		if !IsNumber([]byte(s)) {
			t.Errorf("IsNumber(%s) = false", s)
		}
	}
	for _, s := range []string{"", "-", "01", "1.", ".5", "1e", "+1", "1 ", " 1", "0x1", "NaN", "1.5.2"} {
		if IsNumber([]byte(s)) {
			t.Errorf("IsNumber(%q) = true", s)
		}
	}
}

func FuzzNumberValue(f *testing.F) {
	for _, s := range []string{"0", "-0.5", "123456789012345.6", "1e22", "9007199254740993", "-0.000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !IsNumber([]byte(s)) {
			if json.Valid([]byte(s)) && strings.TrimSpace(s) == s && len(s) > 0 && (s[0] == '-' || '0' <= s[0] && s[0] <= '9') {
				t.Fatalf("IsNumber(%q) = false for a valid JSON number", s)
			}
			return
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("IsNumber(%q) = true for invalid JSON", s)
		}
		want, _ := strconv.ParseFloat(s, 64)
		if got := NumberValue([]byte(s)); got != want {
			t.Fatalf("NumberValue(%s) = %v, ParseFloat %v", s, got, want)
		}
	})
}

// scanWhole is scanFrom with the Shape returned.
func scanWhole(d []byte, from int, inArray bool, stop int, lim Limits) (top Span, sh Shape, err error, stopped bool) {
	top, err, stopped = scanFrom(d, from, inArray, stop, lim, &sh)
	return top, sh, err, stopped
}

// FuzzScanString holds scanString, which passes the escapes of two bytes
// in its loop of eight bytes at a time, to the scan it had before, which
// left every special byte to its switch: the same end, the same error at
// the same byte, for any bytes after a quote, and after runs of escapes;
// and so the block scan of a long string (scanBlocks), with its masks of
// escaped bytes, to the same.
func FuzzScanString(f *testing.F) {
	for _, seed := range []string{`abc"`, `a\"b\\c\"d\"e\"f\"g\"h\"i"`, `\\\\\\\"x"`, "\\\"\\\"\\\"\\\"\x01", `\"\"\"\"\u00e9"`, `\"\"\"\"\ud83d\ude00"`, "é\\\"\\\"\\\"\\\"\\\"\"", `\"\"\"\"\"\"\x"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{
			append([]byte{'"'}, data...),
			append([]byte(`"\"\"\"\"\"\"\"\"`), data...),
			append([]byte(`"éèé\"ü\nçà`), data...),
			append([]byte(`"a\\b\\c\\d\\"`), data...), // ends: the rest is after the string
			// Long strings, taken a block of 64 bytes at a time once past
			// the first (scanBlocks), at each offset from a block.
			append([]byte(`"`+strings.Repeat("x", blockWait)), data...),
			append([]byte(`"`+strings.Repeat(`\"`, blockWait/2)+"abc"), data...),
			append([]byte(`"`+strings.Repeat("x", blockWait+len(data)%61)), bytes.Repeat(data, 4)...),
			append([]byte{'"'}, bytes.Repeat(data, 12)...),
		} {
			end, err := scanString(d, 0)
			wantEnd, wantErr := scanStringBytewise(d, 0)
			if end != wantEnd || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("scanString(%q) = %d, %v; want %d, %v", d, end, err, wantEnd, wantErr)
			}
		}
	})
}

// scanStringBytewise is scanString as it was before it passed short
// escapes in its loop: the reference FuzzScanString holds it to.
func scanStringBytewise(d []byte, i int) (int, error) {
	i++
	for {
		for {
			if i+8 > len(d) {
				// Fewer than eight bytes left: one at a time.
				for i < len(d) && d[i] < utf8.RuneSelf && escLen[d[i]] == 1 {
					i++
				}
				if i >= len(d) {
					return i, syntaxErr(d, i, "unterminated string")
				}
				break
			}
			if m := specialBytes(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(d) {
				return i, syntaxErr(d, i, "unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
					return i, syntaxErr(d, i, `bad \u escape`)
				}
				i += 6
			default:
				return i, syntaxErr(d, i, "bad escape")
			}
		case c < 0x20:
			return i, syntaxErr(d, i, "control character in string")
		default:
			r, n := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && n <= 1 {
				return i, syntaxErr(d, i, "invalid UTF-8 in string")
			}
			i += n
		}
	}
}

// TestSkimInvalidOnce checks that a document found invalid inside a deep
// container is skimmed once: each container run enters on its way to the
// error is not skimmed to the error again, a cost quadratic in the depth.
func TestSkimInvalidOnce(t *testing.T) {
	for _, d := range []string{
		`{"a":[` + strings.Repeat("[", 20000) + `x`,
		`[` + strings.Repeat(`{"k":[`, 5000) + `1,}`,
	} {
		var sc scanner
		sc.init([]byte(d), 0, false, Limits{})
		if _, err := sc.run(0, -1); !errors.Is(err, ErrSyntax) {
			t.Fatalf("%.20q…: %v, want a syntax error", d, err)
		}
		if sc.skims != 1 {
			t.Errorf("%.20q…: %d containers skimmed, want 1", d, sc.skims)
		}
		// Tally, which skims on its own first, gives Scan's error.
		_, _, errScan := Scan([]byte(d), Limits{})
		if _, _, _, err := Tally([]byte(d)); err == nil || err.Error() != errScan.Error() {
			t.Errorf("%.20q…: Tally: %v, want %v", d, err, errScan)
		}
	}
}

// TestValidLarge: Valid of an array large enough to be split between
// goroutines (with more than one GOMAXPROCS) accepts and refuses as Scan
// does, with Scan's error, whether the fault is in the first half, at the
// guessed boundary, in the second half or at the end, and so does Valid
// on one GOMAXPROCS (Tally).
func TestValidLarge(t *testing.T) {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < splitScanMin+splitScanMin/4; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%07d","tags":["a","\u00e9"],"note":"n\t%d"}`, i, i, i%977)
	}
	b.WriteByte(']')
	doc := []byte(b.String())
	if _, _, err, ok := scanSplit(doc, Limits{validOnly: true}); !ok || err != nil {
		t.Fatalf("scanSplit: %v %v", ok, err)
	}
	mid := guessItemStart(doc, len(doc)/2)
	bad := map[string][]byte{"valid": doc}
	colon := func(from int) int { return from + bytes.IndexByte(doc[from:], ':') }
	for name, at := range map[string]int{"first half": colon(len(doc) / 5), "boundary": mid, "after boundary": mid + 1, "second half": colon(len(doc) * 4 / 5)} {
		d := bytes.Clone(doc)
		d[at] = '}'
		bad[name] = d
	}
	bad["cut"] = doc[:len(doc)-1]
	bad["after the value"] = append(bytes.Clone(doc), '1')
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for name, d := range bad {
		_, _, want := Scan(d, Limits{})
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			if got := Valid(d); fmt.Sprint(got) != fmt.Sprint(want) || (got == nil) != (name == "valid") {
				t.Errorf("%s, %d procs: Valid = %v, Scan: %v", name, procs, got, want)
			}
		}
	}
}

// TestTallySpaces: Tally passes white space between an array's items
// itself, rather than leaving a pretty-printed array to Scan (which
// records its items' keys: twice the work).
func TestTallySpaces(t *testing.T) {
	for _, d := range []string{"[0, 0]", "[\n  {\"a\": 1},\n  {\"a\": 2}\n]", `{"a": [1, 2], "b" : 3}`} {
		var tl tallied
		if _, ok := tl.tally([]byte(d), 0, nil); !ok {
			t.Errorf("tally refused %q", d)
		}
	}
}

// TestMembers: Members counts and records a top-level value's children
// and its depth as Scan does, refuses what Scan refuses, and allocates
// nothing for a shallow document (every small message's envelope).
func TestMembers(t *testing.T) {
	d := []byte(`{"jsonrpc":"2.0","id":7,"params":{"name":"x","arguments":{"a":[1,{"b":2}]}}}`)
	var head [2]Child
	n, depth, err := Members(d, head[:])
	if err != nil || n != 3 || depth != 5 {
		t.Fatalf("Members: %d %d %v, want 3 5 <nil>", n, depth, err)
	}
	if k, v := head[1].Key.Of(d), head[1].Val.Of(d); string(k) != `"id"` || string(v) != "7" {
		t.Errorf("second member: %s:%s, want \"id\":7", k, v)
	}
	for _, bad := range []string{`{"a":1,}`, `{"a":1} x`, `{"a"}`, ``, `{"a":"\x01"}`} {
		_, _, want := Scan([]byte(bad), Limits{Head: 2})
		if _, _, err := Members([]byte(bad), head[:]); err == nil || err.Error() != want.Error() {
			t.Errorf("Members(%q): %v, want %v", bad, err, want)
		}
	}
	if n, depth, err := Members([]byte(`"s"`), head[:]); n != 0 || depth != 0 || err != nil {
		t.Errorf(`Members("s"): %d %d %v, want 0 0 <nil>`, n, depth, err)
	}
	if a := testing.AllocsPerRun(100, func() { Members(d, head[:]) }); a != 0 {
		t.Errorf("Members allocates %v times, want 0", a)
	}
}
