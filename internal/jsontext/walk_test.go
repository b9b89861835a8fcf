package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// modelScalars returns the JSON pointer of every scalar of the valid
// document d, in document order, from the token stream of encoding/json.
func modelScalars(t *testing.T, d []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	type frame struct {
		object, wantKey bool
		key             string
		index           int
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
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Token: %v", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 {
			f := &stack[n-1]
			if f.object && f.wantKey {
				f.key, f.wantKey = tok.(string), false
				continue
			}
			if f.object {
				f.wantKey = true
			} else {
				f.index++
			}
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
			continue
		}
		out = append(out, pointer())
	}
}

// walkScalars walks d and returns the pointer of every scalar, and their
// offsets.
func walkScalars(d []byte) (ptrs []string, offsets []int, err error) {
	var w Walker
	err = w.Walk(d, func(start, end int) error {
		ptrs = append(ptrs, w.Pointer(d))
		offsets = append(offsets, start)
		if end <= start || end > len(d) {
			return errors.New("bad span")
		}
		return nil
	})
	return ptrs, offsets, err
}

func TestWalker(t *testing.T) {
	deep := strings.Repeat(`{"k/~":[`, 40) + `1,"x"` + strings.Repeat(`]}`, 40)
	for _, d := range []string{
		`1`, ` "s" `, `[]`, `{}`, `[1,[2,[3]],{"a":{"b":null}},true]`, `{"a\u0062":1,"":2,"~/":[3]}`,
		deep, `{"a":1,"a":2}`,
	} {
		want := modelScalars(t, []byte(d))
		got, offsets, err := walkScalars([]byte(d))
		if err != nil {
			t.Fatalf("Walk(%.40s): %v", d, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pointers of %.40s (-model +walker):\n%s", d, diff)
		}
		ptrs, ok := Pointers([]byte(d), offsets, 1<<20)
		if !ok || len(ptrs) != len(got) || len(got) > 0 && !cmp.Equal(ptrs, got) {
			t.Errorf("Pointers(%.40s) = %v, %v; want %v", d, ptrs, ok, got)
		}
	}
	_, offsets, _ := walkScalars([]byte(deep))             // each pointer is 40 × "/k~1~0/0", 320 bytes
	if _, ok := Pointers([]byte(deep), offsets, 500); ok { // two of them
		t.Error("Pointers went over its budget")
	}
	if p, ok := Pointers([]byte(deep), offsets[:1], 500); !ok || len(p[0]) != 40*len("/k~1~0/0") {
		t.Errorf("Pointers within its budget: %v, %v", p, ok)
	}
}

// MaxDepth hands containers past it to TooDeep, at their pointer, and
// skips their scalars but still validates them.
func TestWalkerMaxDepth(t *testing.T) {
	d := []byte(`[1,[2,[3,{"x":4}]],[5],{"y":[[6]]}]`)
	var deep, scalars []string
	var w Walker
	w.MaxDepth = 2
	w.TooDeep = func(start int) error {
		deep = append(deep, w.Pointer(d)+"@"+strconv.Itoa(start))
		return nil
	}
	if err := w.Walk(d, func(start, end int) error {
		scalars = append(scalars, string(d[start:end]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/1/1@6", "/3/y@28"}, deep); diff != "" {
		t.Errorf("too deep (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1", "2", "5"}, scalars); diff != "" {
		t.Errorf("scalars (-want +got):\n%s", diff)
	}
	if w.Containers() != 8 {
		t.Errorf("Containers = %d, want 8", w.Containers())
	}
	if w.Deepest() != 4 { // [ [ [ { at "x"
		t.Errorf("Deepest = %d, want 4", w.Deepest())
	}
	for _, tt := range []struct {
		doc  string
		want int
	}{{`1`, 0}, {`[]`, 1}, {`[1,2]`, 1}, {`{"a":[]}`, 2}, {`[[[[]]],[]]`, 4}} {
		if err := w.Walk([]byte(tt.doc), func(int, int) error { return nil }); err != nil || w.Deepest() != tt.want {
			t.Errorf("Deepest after walking %s = %d (%v), want %d", tt.doc, w.Deepest(), err, tt.want)
		}
	}
	bad := []byte(`[[[1,}]]]`)
	if err := w.Walk(bad, func(int, int) error { return nil }); !errors.Is(err, ErrSyntax) {
		t.Errorf("Walk of invalid JSON past MaxDepth: %v", err)
	}
}

// FuzzWalker checks the walker against encoding/json: the same documents
// are valid, and every scalar is found at the same pointer.
func FuzzWalker(f *testing.F) {
	for _, seed := range []string{`[1,{"a":[true,null]},"x\n"]`, `{"a~/":{"":[[]]}}`, `{"a" 1}`, `[1,]`, "\"\xff\""} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		got, _, err := walkScalars(d)
		if valid := json.Valid(d) && utf8.Valid(d); (err == nil) != valid {
			t.Fatalf("Walk(%q) = %v, encoding/json valid = %v", d, err, valid)
		}
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Walk(%q) = %v, not ErrSyntax", d, err)
			}
			return
		}
		if diff := cmp.Diff(modelScalars(t, d), got); diff != "" {
			t.Fatalf("pointers of %q (-model +walker):\n%s", d, diff)
		}
	})
}

func TestParseUint(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		want int
		ok   bool
	}{
		{"0", 10, 0, true}, {"007", 10, 7, true}, {"10", 10, 10, true}, {"11", 10, 0, false},
		{"7", 5, 0, false}, {"", 10, 0, false}, {"-1", 10, 0, false}, {"1a", 10, 0, false}, {" 1", 10, 0, false},
		{strconv.Itoa(math.MaxInt), math.MaxInt, math.MaxInt, true}, {strconv.FormatUint(math.MaxInt+1, 10), math.MaxInt, 0, false},
		{strings.Repeat("9", 400), math.MaxInt, 0, false},
	}
	for _, tt := range tests {
		n, ok := ParseUint(tt.s, tt.max)
		if n != tt.want || ok != tt.ok {
			t.Errorf("ParseUint(%q, %d) = %d, %v; want %d, %v", tt.s, tt.max, n, ok, tt.want, tt.ok)
		}
		if m, ok2 := ParseUint([]byte(tt.s), tt.max); m != n || ok2 != ok {
			t.Errorf("ParseUint of bytes %q differs", tt.s)
		}
	}
}

func TestMemberAndDepth(t *testing.T) {
	obj := []byte(`{"a":1,"b":{"c":[2]},"a":3,"d\u0065":4}`)
	for key, want := range map[string]string{"a": "3", "b": `{"c":[2]}`, "de": "4", "c": ""} {
		v, ok := Member(obj, key)
		if string(v) != want || ok != (want != "") {
			t.Errorf("Member(%q) = %s, %v; want %s", key, v, ok, want)
		}
	}
	if _, ok := Member([]byte(`[1]`), "0"); ok {
		t.Error("Member of an array")
	}
	for d, want := range map[string]int{`1`: 0, `[1]`: 1, `{"a":[]}`: 2, `["[[[",[{}]]`: 3, `[[[`: 3} {
		if got := Depth([]byte(d)); got != want {
			t.Errorf("Depth(%s) = %d, want %d", d, got, want)
		}
	}
}
