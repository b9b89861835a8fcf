package jsontext

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// checkMarks checks the marks Scan recorded of the array arr (at offset
// base of the document, whose offsets the marks use): each names the start
// of its item, they ascend, every item starts less than MarkGap bytes past
// the last mark at or before it (or the array's start), and there are at
// most len(arr)/MarkGap + 2 of them (one more where a split scan joined).
func checkMarks(t *testing.T, arr []byte, base int, marks Marks, stream bool) {
	t.Helper()
	var starts []int
	if !stream {
		EachChild(arr, func(_, v []byte) bool {
			starts = append(starts, base+offsetOf(arr, v))
			return true
		})
	} else { // a stream
		for i := SkipSpace(arr, 0); i < len(arr); i = SkipSpace(arr, SkipValue(arr, i)) {
			starts = append(starts, base+i)
		}
	}
	for i, m := range marks {
		if m.Item < 0 || m.Item >= len(starts) || starts[m.Item] != m.Off {
			t.Fatalf("mark %d %+v names no item start (%d items)", i, m, len(starts))
		}
		if i > 0 && m.Item <= marks[i-1].Item {
			t.Fatalf("marks %+v then %+v do not ascend", marks[i-1], m)
		}
	}
	for k, start := range starts {
		from := base
		if m, ok := marks.Before(k); ok {
			from = m.Off
		}
		if start-from >= MarkGap {
			t.Fatalf("item %d starts %d bytes past the mark before it", k, start-from)
		}
	}
	if n := len(arr)/MarkGap + 3; len(marks) > n {
		t.Fatalf("%d marks for %d bytes, want at most %d", len(marks), len(arr), n)
	}
}

func offsetOf(outer, sub []byte) int { return cap(outer) - cap(sub) }

// checkBlocks checks the key blocks of the object obj: they start at keys,
// in order, KeyBlockGap apart, IndexKeys builds the same, and a lookup
// through them finds what Member finds for each key and for key.
func checkBlocks(t *testing.T, obj []byte, blocks KeyBlocks, key string) {
	t.Helper()
	ib, end, over := IndexKeys(append(obj[:len(obj):len(obj)], `,"after":1}`...), len(obj))
	if over {
		t.Fatalf("IndexKeys gave up within a limit of the object's size")
	}
	if _, _, over := IndexKeys(obj, len(obj)-1); !over {
		t.Fatalf("IndexKeys did not give up past a limit one byte short of the object")
	}
	if diff := cmp.Diff(blocks, ib, cmp.AllowUnexported(KeyBlock{}), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Scan's blocks (-) and IndexKeys (+) differ:\n%s", diff)
	}
	if end != len(obj) {
		t.Fatalf("IndexKeys ends at %d, want %d", end, len(obj))
	}
	var keys []string
	seen := map[string]bool{}
	keyStarts := map[int]bool{}
	EachChild(obj, func(k, _ []byte) bool {
		if s := string(AppendUnquoted(nil, k)); !seen[s] && len(keys) < 64 {
			keys = append(keys, s)
			seen[s] = true
		}
		keyStarts[offsetOf(obj, k)] = true
		return true
	})
	if len(keys) > 0 && (len(blocks) == 0 || blocks[0].Start != offsetOf(obj, obj[SkipSpace(obj, 1):])) {
		t.Fatalf("blocks %v do not start at the first key", blocks)
	}
	for i, b := range blocks {
		if !keyStarts[b.Start] {
			t.Fatalf("block %d starts at %d, not at a key", i, b.Start)
		}
		if i > 0 && b.Start-blocks[i-1].Start < KeyBlockGap {
			t.Fatalf("blocks %d and %d are %d bytes apart", i-1, i, b.Start-blocks[i-1].Start)
		}
	}
	for _, k := range append(keys, key, key+"\x00") {
		want, wantOK := Member(obj, k)
		got, cost, over := blocks.Lookup(obj, k, len(obj)+len(blocks)*KeyBlockFilterBytes)
		if over || (got != nil) != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("Lookup(%q) = %q, over %v; Member: %q, %v", k, got, over, want, wantOK)
		}
		if cost > 0 {
			if _, _, over := blocks.Lookup(obj, k, cost-1); !over {
				t.Fatalf("Lookup(%q) costs %d, yet fits %d", k, cost, cost-1)
			}
		}
	}
}

func TestScanIndex(t *testing.T) {
	items := func(n, pad int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"id":%d,"pad":"%s"}`, i, strings.Repeat("x", (i*pad)%997))
		}
		return b.String()
	}
	fields := func(n, pad int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(" ,\n")
			}
			fmt.Fprintf(&b, `"k%d":"%s"`, i%(n/2+1), strings.Repeat("y", (i*pad)%997)) // duplicate keys
		}
		return b.String()
	}
	for _, tt := range []struct{ name, doc string }{
		{"empty array", "[]"},
		{"small array", "[1,2,3]"},
		{"array", "[" + items(2000, 7) + "]"},
		{"array of tiny items", "[" + strings.Repeat("1,", 5000) + "1]"},
		{"white space first", " [" + strings.Repeat(" ", 700) + "1," + strings.Repeat(" ", 1200) + "2]"},
		{"empty object", "{}"},
		{"object", "{" + fields(3000, 13) + "}"},
		{"object of one huge field", `{"a":1,"big":"` + strings.Repeat("z", 5000) + `","b":2}`},
		{"escaped keys", `{"\u0061":1,` + fields(300, 31) + `,"a\"b":2,"\ud800":3}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := []byte(tt.doc)
			top, sh, err := Scan(d, Limits{Index: true})
			if err != nil {
				t.Fatal(err)
			}
			v := top.Of(d)
			if v[0] == '[' {
				checkMarks(t, v, top.Start, sh.Marks, false)
				if sh.Blocks != nil {
					t.Errorf("blocks for an array")
				}
				return
			}
			if sh.Marks != nil {
				t.Errorf("marks for an object")
			}
			for i := range sh.Blocks {
				sh.Blocks[i].Start -= top.Start
			}
			checkBlocks(t, v, sh.Blocks, "k1")
		})
	}
	// Without Index, nothing is recorded.
	_, sh, _ := Scan([]byte("["+items(2000, 7)+"]"), Limits{})
	if sh.Marks != nil {
		t.Errorf("marks recorded without Limits.Index")
	}
}

// The split scan of a large array joins the marks of its two halves.
func TestScanSplitMarks(t *testing.T) {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < 2*splitScanMin; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item %d"}`, i, i)
	}
	b.WriteByte(']')
	d := []byte(b.String())
	top, sh, err, ok := scanSplit(d, Limits{Index: true})
	if !ok || err != nil {
		t.Fatalf("split scan: %v, %v", ok, err)
	}
	checkMarks(t, top.Of(d), top.Start, sh.Marks, false)
	_, one, _, _ := scanWhole(d, 0, false, -1, Limits{Index: true})
	if len(sh.Marks) < len(one.Marks) || len(sh.Marks) > len(one.Marks)+1 {
		t.Errorf("%d marks split, %d in one scan", len(sh.Marks), len(one.Marks))
	}
}

// FuzzScanIndex checks the marks and key blocks Scan records of a large
// container made of the fuzzed one's children repeated, with padding of a
// fuzzed length between them (so keys repeat, and blocks and marks fall at
// every offset), against the models above.
func FuzzScanIndex(f *testing.F) {
	for _, seed := range []struct {
		doc, key string
		reps     uint8
		pad      uint16
	}{
		{`[1,{"a":[true,null]},"x\n"]`, "a", 40, 100},
		{`{"a":1,"b":[{"c":2}],"a":{"d":"}"}}`, "a", 80, 300},
		{`{"\u0061":1,"a\\b":"x","\ud83d\ude00":[]}`, "😀", 30, 1000},
		{`[[],{},""]`, "", 200, 0},
		{`{"":0}`, "", 255, 2000},
	} {
		f.Add([]byte(seed.doc), seed.key, seed.reps, seed.pad)
	}
	f.Fuzz(func(t *testing.T, data []byte, key string, reps uint8, pad uint16) {
		top, _, err := Scan(data, Limits{})
		if err != nil {
			return
		}
		v := top.Of(data)
		if v[0] != '[' && v[0] != '{' {
			return
		}
		var b bytes.Buffer
		b.WriteByte(v[0])
		for r := range int(reps) + 1 {
			if r > 0 {
				b.WriteByte(',')
			}
			if v[0] == '[' {
				fmt.Fprintf(&b, `"%s",`, strings.Repeat(" ", int(pad)%1500))
			} else {
				fmt.Fprintf(&b, `"pad%d":%s,`, r%7, strings.Repeat(" ", int(pad)%1500)+"0")
			}
			inner := bytes.TrimSpace(v[1 : len(v)-1])
			if len(inner) == 0 {
				inner = []byte("0")
				if v[0] == '{' {
					inner = []byte(`"e":0`)
				}
			}
			b.Write(inner)
		}
		b.WriteByte(v[0] + 2)
		d := b.Bytes()
		dtop, sh, err := Scan(d, Limits{Index: true})
		if err != nil {
			t.Fatalf("the built document %q is invalid: %v", d, err)
		}
		if d[0] == '[' {
			checkMarks(t, dtop.Of(d), dtop.Start, sh.Marks, false)
			if _, ssh, err, ok := scanSplit(d, Limits{Index: true}); ok && err == nil {
				checkMarks(t, d, 0, ssh.Marks, false)
			}
			var stream []byte
			EachChild(d, func(_, v []byte) bool {
				stream = append(append(stream, v...), '\n')
				return true
			})
			ssh, err := ScanStream(stream, Limits{Index: true})
			if err != nil {
				t.Fatalf("the stream %q is invalid: %v", stream, err)
			}
			checkMarks(t, stream, 0, ssh.Marks, true)
			return
		}
		checkBlocks(t, d, sh.Blocks, key)
	})
}

// IndexKeys stops within one field of its limit, in an object whose end
// it has not reached (a lookup indexes an object it has not measured).
func TestIndexKeysLimit(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range 10_000 {
		fmt.Fprintf(&b, `"k%d":"%s",`, i, strings.Repeat("v", i%50))
	}
	b.WriteString(`"z":0}`)
	obj := b.Bytes()
	for _, limit := range []int{0, 1, 100, 4096, len(obj) / 2, len(obj) - 1} {
		blocks, end, over := IndexKeys(obj, limit)
		if !over || blocks != nil || end <= limit || end > limit+70 {
			t.Errorf("IndexKeys(obj, %d) = %d blocks, %d, %v; want to give up within a field past the limit", limit, len(blocks), end, over)
		}
	}
	if blocks, end, over := IndexKeys(obj, len(obj)); over || end != len(obj) || len(blocks) == 0 {
		t.Errorf("IndexKeys(obj, len(obj)) = %d blocks, %d, %v; want them all, %d", len(blocks), end, over, len(obj))
	}
}
