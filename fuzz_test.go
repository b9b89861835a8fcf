package values

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// Fuzz targets check properties, not only the absence of panics. Run one
// for a while with, for example:
//
//	go test -run='^$' -fuzz=FuzzPreview -fuzztime=60s .

func FuzzPreview(f *testing.F) {
	for _, seed := range []string{
		`[1,2,3,4,5,6]`, `{"a":"b"}`, "hello\nworld", `"\u00e9"`, "\xff\xfe", `[{"a":{"b":[1]},"c":"d","e":1}]`,
		`{"` + strings.Repeat("k", 300) + `":1}`, strings.Repeat("€", 700), `[` + strings.Repeat(`"\u0001",`, 50) + `1]`,
	} {
		f.Add([]byte(seed), 2048, "r1")
	}
	f.Fuzz(func(t *testing.T, data []byte, limit int, handle string) {
		s := New(WithMaxPreview(limit % 5000))
		bound := s.cfg.maxPreview
		h := s.PutOutput(data)
		v, _ := s.Get(h)
		for _, name := range []string{h, handle} {
			p := RenderPreview(name, v)
			if len(p) > bound {
				t.Fatalf("preview is %d bytes, bound %d: %q", len(p), bound, p)
			}
			if !utf8.ValidString(p) {
				t.Fatalf("preview is not valid UTF-8: %q", p)
			}
			if again := RenderPreview(name, v); again != p {
				t.Fatalf("preview is not deterministic:\n%q\n%q", p, again)
			}
		}
		// Nothing is lost: the stored bytes are the output (JSON values are
		// stored without surrounding whitespace).
		if got := v.Bytes(); !bytes.Equal(got, data) && !bytes.Equal(got, bytes.Trim(data, " \t\r\n")) {
			t.Fatalf("stored %q, output was %q", got, data)
		}
		if !json.Valid(v.JSON()) {
			t.Fatalf("JSON() is not valid JSON: %q", v.JSON())
		}
	})
}

func FuzzScanJSON(f *testing.F) {
	for _, seed := range []string{`[1,{"a":[true,null]},"x\n"]`, `{"a":1,"b":[]}`, `"\ud83d\ude00"`, `-0.1e-5`, `[`, `{"a" 1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, sh, err := scanJSON(data)
		want := json.Valid(data) && utf8.Valid(data)
		if (err == nil) != want {
			t.Fatalf("scanJSON valid = %v, want %v (err %v) for %q", err == nil, want, err, data)
		}
		if err != nil {
			return
		}
		// UseNumber: valid JSON such as 1e1000 does not fit a float64.
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case []any:
			if sh.count != len(v) {
				t.Fatalf("count %d, want %d", sh.count, len(v))
			}
		case string:
			raw := bytes.Trim(data, " \t\r\n")
			n, _ := stringStats(raw)
			if n != len(v) || string(appendUnescaped(nil, raw)) != v {
				t.Fatalf("string stats %d / decode %q, want %d %q", n, appendUnescaped(nil, raw), len(v), v)
			}
		}
	})
}

func FuzzClip(f *testing.F) {
	for _, seed := range []string{"hello", "€€€", "a\nb\"c", "\xff\x80abc", "😀😀"} {
		f.Add([]byte(seed), 5)
	}
	f.Fuzz(func(t *testing.T, s []byte, budget int) {
		budget = budget % 1000
		valid := utf8.Valid(s)
		if budget >= len(ellipsis) {
			c := clip(s, budget)
			if len(c) > budget {
				t.Fatalf("clip(%q, %d) = %q: too long", s, budget, c)
			}
			if valid && !utf8.Valid(c) {
				t.Fatalf("clip(%q, %d) = %q: split a character", s, budget, c)
			}
			if len(s) <= budget && !bytes.Equal(c, s) {
				t.Fatalf("clip(%q, %d) = %q: changed a fitting input", s, budget, c)
			}
			if len(s) > budget && !bytes.HasSuffix(c, []byte(ellipsis)) {
				t.Fatalf("clip(%q, %d) = %q: elision not marked", s, budget, c)
			}
		}
		if n := headCut(s, budget); n < 0 || n > max(budget, 0) || n > len(s) || valid && !utf8.Valid(s[:n]) {
			t.Fatalf("headCut(%q, %d) = %d", s, budget, n)
		}
		if n := tailCut(s, budget); n < 0 || n > len(s) || len(s)-n > max(budget, 0) || valid && !utf8.Valid(s[n:]) {
			t.Fatalf("tailCut(%q, %d) = %d", s, budget, n)
		}
		if budget < 2+len(ellipsis)+6 {
			return
		}
		for _, head := range []bool{true, false} {
			var q []byte
			var cut bool
			if head {
				q, cut = appendQuotedHead(nil, s, budget)
			} else {
				q, cut = appendQuotedTail(nil, s, budget)
			}
			if len(q) > budget || !utf8.Valid(q) || !json.Valid(q) {
				t.Fatalf("quoted (head %v) %q of %q: len %d budget %d", head, q, s, len(q), budget)
			}
			var back string
			_ = json.Unmarshal(q, &back)
			if valid {
				part := strings.ReplaceAll(back, ellipsis, "")
				if head && !strings.HasPrefix(string(s), part) || !head && !strings.HasSuffix(string(s), part) {
					t.Fatalf("quoted (head %v) %q is not part of %q", head, q, s)
				}
				if !cut && back != string(s) {
					t.Fatalf("quoted (head %v) %q claims to be whole %q", head, q, s)
				}
			}
		}
		if valid {
			js, _ := json.Marshal(string(s))
			if r := appendRawString(nil, js, budget); len(r) > max(budget, len(js)) && len(r) > budget || !json.Valid(r) {
				t.Fatalf("appendRawString(%s, %d) = %s", js, budget, r)
			}
		}
	})
}

func FuzzQuote(f *testing.F) {
	for _, seed := range []string{"", "plain", "a\"b\\c\n\x00\x1f\x7f", "é€😀 <&>", strings.Repeat("abcdefg\"", 9)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if !utf8.Valid(s) {
			return // text values are valid UTF-8 by construction
		}
		q := appendQuoted([]byte("prefix"), s)
		if !bytes.HasPrefix(q, []byte("prefix")) {
			t.Fatalf("appendQuoted dropped dst: %q", q)
		}
		q = q[len("prefix"):]
		if len(q) != quotedLen(s) {
			t.Fatalf("len %d, quotedLen says %d", len(q), quotedLen(s))
		}
		var back string
		if err := json.Unmarshal(q, &back); err != nil || back != string(s) {
			t.Fatalf("appendQuoted(%q) = %s does not decode back (%v)", s, q, err)
		}
		if n, _ := stringStats(q); n != len(s) || string(appendUnescaped(nil, q)) != string(s) {
			t.Fatalf("stringStats/appendUnescaped disagree on %s", q)
		}
	})
}

// FuzzScanSplit checks that the two-goroutine scan of an array gives the
// same result as the one-goroutine scan, whether its guess of a boundary
// is right or wrong.
func FuzzScanSplit(f *testing.F) {
	for _, seed := range []string{
		`[{"a":1},{"b":[{"c":2},{"d":3}]},{"e":"},{"}]`, `[[1],[2],[3],[4]]`, `[{"x":"},{"},{}]`,
		`[{},{},{} ,  {}]`, `[{"a":[{},{}]},1,2]`, `[{},{]`, `[{},{},x]`, ` [ {} , [ ] ] `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top1, sh1, err1, _ := scanFrom(data, 0, false, -1)
		top2, sh2, err2, ok := scanSplit(data)
		if !ok {
			return
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("one scan: %v, split scan: %v, for %q", err1, err2, data)
		}
		if err1 != nil {
			return
		}
		if top1 != top2 || sh1.count != sh2.count {
			t.Fatalf("top %v/%v count %d/%d for %q", top1, top2, sh1.count, sh2.count, data)
		}
		if diff := cmp.Diff(sh1.head, sh2.head, cmp.AllowUnexported(child{}, span{})); diff != "" {
			t.Fatalf("head (-one +split):\n%s\nfor %q", diff, data)
		}
		k := min(sh1.count, scanTail)
		if diff := cmp.Diff(sh1.lastChildren(k), sh2.lastChildren(k), cmp.AllowUnexported(child{}, span{})); diff != "" {
			t.Fatalf("tail (-one +split):\n%s\nfor %q", diff, data)
		}
	})
}
