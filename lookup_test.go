package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/google/go-cmp/cmp"
)

// offsetValues returns values whose lookups go through what Put records
// of large containers (marks of array items, key blocks of objects) and
// what one call builds of those Put did not index, each with the paths to
// check in it.
func offsetValues() []struct {
	name  string
	value []byte
	paths []string
} {
	rows := func(n int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"id":%d,"path":"dir/f%d","pad":"%s"}`, i, i, strings.Repeat("x", i*7%90))
		}
		b.WriteByte(']')
		return b.String()
	}
	keys := func(n, distinct int) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			fmt.Fprintf(&b, `"d%d":{"i":%d,"pad":"%s"},`, i%distinct, i, strings.Repeat("y", i*11%70))
		}
		b.WriteString(`"\u0065sc":"escaped","a.b":[1,2]}`)
		return b.String()
	}
	idx := func(n int) []string {
		segs := []string{"0", "1", "2", "3", "-1", "-2", "-3", strconv.Itoa(n - 1), strconv.Itoa(n), strconv.Itoa(-n), strconv.Itoa(-n - 1), "01", "-0", "x"}
		for i := 7; i < n; i += n / 23 {
			segs = append(segs, strconv.Itoa(i), strconv.Itoa(-i))
		}
		return segs
	}
	dkeys := func(distinct int) []string {
		segs := []string{"esc", `a\.b`, "nope", "d", "0"}
		for i := 0; i < distinct+3; i += 7 {
			segs = append(segs, "d"+strconv.Itoa(i))
		}
		return segs
	}
	under := func(prefix string, segs []string, suffixes ...string) []string {
		var out []string
		for _, s := range segs {
			for _, suf := range append([]string{""}, suffixes...) {
				out = append(out, prefix+s+suf)
			}
		}
		return out
	}
	content, _ := json.Marshal(rows(2000))
	var stream strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&stream, "{\"n\":%d,\"s\":\"%s\"}\n", i, strings.Repeat("z", i%50))
	}
	return []struct {
		name  string
		value []byte
		paths []string
	}{
		{"top-level array", []byte(rows(3000)), under("", idx(3000), ".id", ".path", ".nope")},
		{"top-level object", []byte(keys(2000, 700)), under("", dkeys(700), ".i", ".pad")},
		{"dominant array", []byte(`{"meta":{"n":3000},"rows":` + rows(3000) + `}`), append(under("rows.", idx(3000), ".id"), "meta.n", "rows")},
		{"dominant object", []byte(`{"n":1,"all":` + keys(2000, 700) + `}`), under("all.", dkeys(700), ".i")},
		{"JSON in a dominant string", []byte(`{"content":` + string(content) + `}`), append(under("content.", idx(2000), ".path"), "content")},
		{"arrays and objects Put did not index", []byte(`[` + rows(2000) + `,` + keys(1500, 400) + `,` + rows(1500) + `]`),
			append(append(under("0.", idx(2000), ".id"), under("1.", dkeys(400), ".i")...), under("2.", idx(1500))...)},
		{"a stream of JSON values", []byte(stream.String()), under("", idx(2500), ".n")},
	}
}

// modelPath looks up path in the decoded value v as the design says: the
// last of duplicate keys wins (as encoding/json decodes them), a string
// holding JSON is gone into, negative indexes count from the end.
// Strings decoded are kept in decoded.
func modelPath(v any, path string, decoded map[string]any) (any, bool) {
	segs, ok := modelParse("r1." + path)
	if !ok {
		return nil, false
	}
	for _, seg := range segs[1:] {
		if str, ok := v.(string); ok {
			if v, ok = decoded[str]; !ok {
				if v, ok = decodeNumbers([]byte(str)); !ok {
					return nil, false
				}
				decoded[str] = v
			}
		}
		switch c := v.(type) {
		case map[string]any:
			if v, ok = c[seg]; !ok {
				return nil, false
			}
		case []any:
			i, ok := parseIndex(seg)
			if !ok {
				return nil, false
			}
			if i < 0 {
				i += len(c)
			}
			if i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// decodeAll decodes b, one JSON value or a stream of them (as an array).
func decodeAll(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var all []any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		all = append(all, v)
	}
	if len(all) == 1 {
		return all[0]
	}
	return all
}

// Lookups that start from marks and key blocks find what the model finds,
// in one call of Resolve (paths shuffled, through the walk cache), one at a
// time, through Read, and in a session reopened from the durable store,
// which keeps no marks or blocks: a value read back is indexed again, on
// its first lookup.
func TestLookupOffsets(t *testing.T) {
	d := &memDurable{bodies: map[string][]byte{}, records: map[string][]Record{}}
	durable, err := Open(d, "s", WithMemoryLimit(1024))
	if err != nil {
		t.Fatal(err)
	}
	mem := New()
	vals := offsetValues()
	for _, v := range vals {
		mem.PutOutput(v.value)
		durable.PutOutput(bytes.Clone(v.value))
	}
	reopened, err := Open(d, "s", WithMemoryLimit(1024))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, st := range []struct {
		name string
		s    *SessionValues
	}{{"in memory", mem}, {"durable", durable}, {"reopened", reopened}} {
		for hi, v := range vals {
			t.Run(st.name+"/"+v.name, func(t *testing.T) {
				h := handleName(hi + 1)
				model, decoded := decodeAll(t, v.value), map[string]any{}
				var args []string
				var want []any
				for _, path := range v.paths {
					ref := "$" + h + "." + path
					m, ok := modelPath(model, path, decoded)
					p, err := st.s.Read(ref, 0, MaxReadLimit)
					switch {
					case !ok && !errors.Is(err, ErrNoPath):
						t.Errorf("Read(%s) = %.80q, %v; want ErrNoPath", ref, p.Content, err)
					case ok && err != nil:
						t.Errorf("Read(%s): %v", ref, err)
					}
					out, _, err := st.s.Resolve([]byte(strconv.Quote(ref)))
					got, _ := decodeNumbers(out)
					if !ok {
						got, m = out, []byte(strconv.Quote(ref)) // left as written
					}
					if diff := cmp.Diff(m, got); err != nil || diff != "" {
						t.Errorf("Resolve(%s): %v (-model +got):\n%.500s", ref, err, diff)
					}
					args = append(args, strconv.Quote(ref))
					if ok {
						want = append(want, m)
					} else {
						want = append(want, ref)
					}
				}
				// All paths in one call, in an order that jumps about.
				perm := rng.Perm(len(args))
				shuffled, wantShuffled := make([]string, len(args)), make([]any, len(args))
				for i, j := range perm {
					shuffled[i], wantShuffled[i] = args[j], want[j]
				}
				out, _, err := st.s.Resolve([]byte("[" + strings.Join(shuffled, ",") + "]"))
				got, _ := decodeNumbers(out)
				if diff := cmp.Diff(wantShuffled, got); err != nil || diff != "" {
					t.Errorf("Resolve of all paths: %v (-model +got):\n%.2000s", err, diff)
				}
			})
		}
	}
}

// What Put keeps of a large value's offsets (marks of array items, key
// blocks of objects, in the value and in the parts it indexes as
// dominant) takes at most a tenth of the value's bytes, whatever its
// items: at most 1/25, and two blocks for each level of dominant parts
// (see offsetsSize), however the value splits into them.
func TestIndexOffsetsMemory(t *testing.T) {
	build := func(n int, item func(i int) string, open, close string) []byte {
		var b bytes.Buffer
		b.WriteString(open)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(item(i))
		}
		b.WriteString(close)
		return b.Bytes()
	}
	// halves returns an object of about size bytes whose small fields take
	// a little more than half of it and whose last field, its dominant
	// part, the rest: the same again, levels deep, then small fields.
	var halves func(levels, size int) []byte
	halves = func(levels, size int) []byte {
		var b bytes.Buffer
		b.WriteByte('{')
		for i := 0; b.Len() < size*55/100 || levels == 0 && b.Len() < size-20; i++ {
			fmt.Fprintf(&b, `"f%d":%d,`, i, i)
		}
		if levels > 0 {
			b.WriteString(`"dom":`)
			b.Write(halves(levels-1, size-b.Len()-8))
			b.WriteByte(',')
		}
		b.WriteString(`"z":0}`)
		return b.Bytes()
	}
	// first returns an object whose first field is dom, its dominant part,
	// and whose small fields after it make it about size bytes.
	first := func(dom []byte, size int) []byte {
		b := bytes.NewBufferString(`{"dom":`)
		b.Write(dom)
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(b, `,"f%d":%d`, i, i)
		}
		b.WriteByte('}')
		return b.Bytes()
	}
	for _, tt := range []struct {
		name  string
		value []byte
	}{
		{"a dominant object first, small fields after", first(build(100_000, func(i int) string { return fmt.Sprintf(`"%d":0`, i) }, "{", "}"), 3<<20)},
		{"a dominant array first, small fields after", first(build(300_000, func(i int) string { return strconv.Itoa(i % 10) }, "[", "]"), 1<<20)},
		{"100k small objects", build(100_000, func(i int) string { return fmt.Sprintf(`{"id":%d,"ok":true}`, i) }, "[", "]")},
		{"tiny items", build(300_000, func(i int) string { return strconv.Itoa(i % 10) }, "[", "]")},
		{"tiny fields", build(100_000, func(i int) string { return fmt.Sprintf(`"%d":0`, i) }, "{", "}")},
		{"nested dominant parts", build(50_000, func(i int) string { return fmt.Sprintf(`"k%d":[%d]`, i, i) }, `{"a":{"b":{"c":{`, `}}},"x":1}`)},
		{"a dominant part beside small fields", halves(1, 4<<20)},
		{"dominant parts beside small fields, nested", halves(4, 4<<20)},
		{"JSON Lines", bytes.ReplaceAll(build(100_000, func(i int) string { return fmt.Sprintf(`{"n":%d}`, i) }, "", ""), []byte("},{"), []byte("}\n{"))},
		{"JSON in a string", []byte(`{"content":` + strconv.Quote(string(build(100_000, func(i int) string { return strconv.Itoa(i % 10) }, "[", "]"))) + `}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			h := s.PutOutput(tt.value)
			v, _ := s.Get(h)
			got := v.get().index().offsetsSize()
			if got == 0 || got > len(tt.value)/10 {
				t.Errorf("offsets take %d bytes of a %d-byte value (%.3f), want at most a tenth", got, len(tt.value), float64(got)/float64(len(tt.value)))
			}
			if most := len(tt.value)/25 + 80*(1+dominantDepth); got > most {
				t.Errorf("offsets take %d bytes of a %d-byte value, want at most 1/25 of it and 80 bytes a level: %d", got, len(tt.value), most)
			}
			t.Logf("%d bytes, %.4f of the value", got, float64(got)/float64(len(tt.value)))
		})
	}
}

// The scan budget still refuses distinct paths whose lookups scan more
// than it, now that each costs what it names: many keys of objects Put did
// not index and too small to be remembered, and many items of an indexed
// array, each charged its walk from the mark before it.
func TestLookupOffsetsBudget(t *testing.T) {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 20_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"pad":"%s"}`, i, strings.Repeat("x", 40))
	}
	b.WriteByte(']')
	s := New(WithMaxResolved(64 << 10)) // a scan budget of 256 KiB
	h := s.PutOutput([]byte(b.String()))
	refs := func(n int) []byte {
		var a []string
		for i := range n {
			a = append(a, fmt.Sprintf(`"$%s.%d.id"`, h, (i*7919)%20_000))
		}
		return []byte("[" + strings.Join(a, ",") + "]")
	}
	// Each costs less than MarkGap + its item (60 bytes).
	few := (256 << 10) / (jsontext.MarkGap + 60)
	if _, got, err := s.Resolve(refs(few)); err != nil || len(got) != few {
		t.Errorf("%d paths: %d resolved, %v", few, len(got), err)
	}
	_, _, err := s.Resolve(refs(20_000))
	if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "values: resolved arguments too large: looking up ") {
		t.Errorf("20,000 paths: %v, want ErrTooLarge, said once", err)
	}
}

// The JSON a string holds is remembered apart from the containers of the
// walk cache: a key that ends as a suffix marking it might ("\u0000json")
// names its own value, not the JSON of the string before it.
func TestLookupStringJSONCacheKey(t *testing.T) {
	s := New()
	h, err := s.Put(json.RawMessage(`{"a":"[10,20]","a\u0000json":[30,40]}`))
	if err != nil {
		t.Fatal(err)
	}
	args := `["$` + h + `.a.0","$` + h + `.a\u0000json.0","$` + h + `.a.1"]`
	out, _, err := s.Resolve([]byte(args))
	if err != nil || string(out) != `[10,30,20]` {
		t.Errorf("Resolve(%s) = %s, %v; want [10,30,20]", args, out, err)
	}
}

// A negative index into an array Put did not index walks it once: the
// walk that counts its items marks them, and the walk to the item starts
// from the mark before it, whether the call remembers the array or not.
func TestLookupNegativeIndexWalksOnce(t *testing.T) {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 5000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"i":%d,"pad":"%s"}`, i, strings.Repeat("p", i%60))
	}
	b.WriteByte(']')
	arr := b.String()
	s := New()
	s.PutOutput([]byte(`{"a":` + arr + `,"b":` + arr + `,"c":` + arr + `,"d":` + arr + `}`)) // no part dominates
	s.PutOutput([]byte(`[1,2,3,4,` + arr + `,5,6,7]`))                                       // item 4 is walked to, open
	for _, tt := range []struct{ ref, want string }{
		{"r1.a.-2", `{"i":4998,"pad":"` + strings.Repeat("p", 4998%60) + `"}`},
		{"r1.a.-5000.i", "0"},
		{"r2.4.-2.i", "4998"},
		{"r2.4.-4999.i", "1"},
	} {
		r, ok := parseRef(tt.ref)
		if !ok {
			t.Fatalf("parseRef(%s) failed", tt.ref)
		}
		_, part, scanned, err := s.lookupPath(r, &walkCache{}, math.MaxInt)
		if err != nil || string(part) != tt.want {
			t.Errorf("$%s = %s, %v; want %s", tt.ref, part, err, tt.want)
		}
		if most := len(arr) + jsontext.MarkGap + 100; scanned > most {
			t.Errorf("$%s scanned %d bytes of an array of %d, want at most %d", tt.ref, scanned, len(arr), most)
		}
	}
}

// An item of a stream of JSON values (JSON Lines) is found from the mark
// Put recorded before it, as in an array.
func TestLookupStreamMarks(t *testing.T) {
	var b strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&b, "{\"n\":%d,\"s\":\"%s\"}\n", i, strings.Repeat("z", 80))
	}
	s := New()
	h := s.PutOutput([]byte(b.String()))
	v, _ := s.Get(h)
	if ix := v.get().index(); ix == nil || !ix.stream || len(ix.marks) < b.Len()/(2*jsontext.MarkGap) {
		t.Fatalf("the stream's index has no marks")
	}
	for _, k := range []int{7, 9_000, 17_777, -1_234} {
		r, _ := parseRef(fmt.Sprintf("%s.%d.n", h, k))
		_, part, scanned, err := s.lookupPath(r, nil, math.MaxInt)
		want := k
		if k < 0 {
			want += 20_000
		}
		if err != nil || string(part) != strconv.Itoa(want) {
			t.Errorf("item %d: %s, %v; want %d", k, part, err, want)
		}
		if scanned > jsontext.MarkGap+200 {
			t.Errorf("item %d: scanned %d bytes, want less than a mark gap and the item", k, scanned)
		}
	}
}

// The error for a missing key lists the object's first keys at a cost
// that does not grow with the object: from the keys Put's index records,
// without walking the values between them, whether the index answers for
// every key (up to 24) or the key blocks do; and for an object this call
// indexed, listed once and kept. The test sees a walk by rewriting the
// stored bytes of a large value after they were indexed, so that a walk
// over them finds a key ("zz") that the index does not hold.
func TestLookupMissingKeyList(t *testing.T) {
	obj := func(fields int) []byte {
		var b bytes.Buffer
		b.WriteByte('{')
		for i := range 8 {
			fmt.Fprintf(&b, `"big%d":"%s",`, i, strings.Repeat("A", 8<<10))
		}
		for i := range fields - 9 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(`"\u0041` + strings.Repeat("k", 300) + `":0}`)
		return b.Bytes()
	}
	rewrite := func(stored []byte) { // inside the value of big0
		at := bytes.Index(stored, []byte(`"big0":"`)) + 20
		copy(stored[at:], `","zz":"`)
	}
	const want = "; its keys: big0, big1, big2, big3, big4, big5, big6, big7, …"
	for _, tt := range []struct {
		name   string
		value  []byte
		prefix string
		fields int
	}{
		{"every key indexed", obj(20), "", 20},
		{"key blocks", obj(40), "", 40},
		{"indexed in this call", append(append([]byte(`[0,`), obj(40)...), ']'), "1.", 40},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			h := s.PutOutput(tt.value)
			v, _ := s.Get(h)
			v.get().index()
			var c walkCache
			lookup := func(path string) error {
				r, _ := parseRef(h + "." + tt.prefix + path)
				_, _, _, err := s.lookupPath(r, &c, math.MaxInt)
				return err
			}
			if err := lookup("no1"); err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Fatalf("before the rewrite: %v; want it to end %q", err, want)
			}
			rewrite(tt.value)
			if err := lookup("no2"); err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Errorf("%v; want it to end %q", err, want)
			}
			if err := lookup("zz"); !errors.Is(err, ErrNoPath) {
				t.Errorf("zz: %v; want ErrNoPath", err)
			}
		})
	}
	// A long key is shown clipped, read no further than shown.
	s := New()
	h := s.PutOutput([]byte(`{"` + strings.Repeat("k", 1000) + `":1,"\u0041` + strings.Repeat("k", 1000) + `":2}`))
	r, _ := parseRef(h + ".nokey")
	_, _, _, err := s.lookupPath(r, nil, math.MaxInt)
	wantLong := "; its keys: " + strings.Repeat("k", 61) + "…, " + `"\u0041` + strings.Repeat("k", 53) + `…"`
	if err == nil || !strings.HasSuffix(err.Error(), wantLong) {
		t.Errorf("%v; want it to end %q", err, wantLong)
	}
}
