package jsontext

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
//	go test -run='^$' -fuzz=FuzzScanJSON -fuzztime=60s ./internal/jsontext

func FuzzScanJSON(f *testing.F) {
	for _, seed := range []string{`[1,{"a":[true,null]},"x\n"]`, `{"a":1,"b":[]}`, `"\ud83d\ude00"`, `-0.1e-5`, `[`, `{"a" 1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, sh, err := Scan(data, 25, 2)
		want := json.Valid(data) && utf8.Valid(data)
		if (err == nil) != want {
			t.Fatalf("Scan valid = %v, want %v (err %v) for %q", err == nil, want, err, data)
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
			if sh.Count != len(v) {
				t.Fatalf("count %d, want %d", sh.Count, len(v))
			}
		case string:
			raw := bytes.Trim(data, " \t\r\n")
			n, _ := StringStats(raw)
			if n != len(v) || string(AppendUnquoted(nil, raw)) != v {
				t.Fatalf("string stats %d / decode %q, want %d %q", n, AppendUnquoted(nil, raw), len(v), v)
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
		if budget >= len(Ellipsis) {
			c := AppendClipped(nil, s, budget)
			if len(c) > budget {
				t.Fatalf("clip(%q, %d) = %q: too long", s, budget, c)
			}
			if valid && !utf8.Valid(c) {
				t.Fatalf("clip(%q, %d) = %q: split a character", s, budget, c)
			}
			if len(s) <= budget && !bytes.Equal(c, s) {
				t.Fatalf("clip(%q, %d) = %q: changed a fitting input", s, budget, c)
			}
			if len(s) > budget && !bytes.HasSuffix(c, []byte(Ellipsis)) {
				t.Fatalf("clip(%q, %d) = %q: elision not marked", s, budget, c)
			}
		}
		if n := HeadCut(s, budget); n < 0 || n > max(budget, 0) || n > len(s) || valid && !utf8.Valid(s[:n]) {
			t.Fatalf("HeadCut(%q, %d) = %d", s, budget, n)
		}
		if n := TailCut(s, budget); n < 0 || n > len(s) || len(s)-n > max(budget, 0) || valid && !utf8.Valid(s[n:]) {
			t.Fatalf("TailCut(%q, %d) = %d", s, budget, n)
		}
		if budget < 2+len(Ellipsis)+6 {
			return
		}
		for _, head := range []bool{true, false} {
			var q []byte
			var cut bool
			if head {
				q, cut = AppendQuotedHead(nil, s, budget)
			} else {
				q, cut = AppendQuotedTail(nil, s, budget)
			}
			if len(q) > budget || !utf8.Valid(q) || !json.Valid(q) {
				t.Fatalf("quoted (head %v) %q of %q: len %d budget %d", head, q, s, len(q), budget)
			}
			var back string
			_ = json.Unmarshal(q, &back)
			if valid {
				part := strings.ReplaceAll(back, Ellipsis, "")
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
			if r := AppendClippedString(nil, js, budget); len(r) > max(budget, len(js)) && len(r) > budget || !json.Valid(r) {
				t.Fatalf("AppendClippedString(%s, %d) = %s", js, budget, r)
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
		q := AppendQuote([]byte("prefix"), s)
		if !bytes.HasPrefix(q, []byte("prefix")) {
			t.Fatalf("AppendQuote dropped dst: %q", q)
		}
		q = q[len("prefix"):]
		if len(q) != QuotedLen(s) {
			t.Fatalf("len %d, QuotedLen says %d", len(q), QuotedLen(s))
		}
		var back string
		if err := json.Unmarshal(q, &back); err != nil || back != string(s) {
			t.Fatalf("AppendQuote(%q) = %s does not decode back (%v)", s, q, err)
		}
		if n, _ := StringStats(q); n != len(s) || string(AppendUnquoted(nil, q)) != string(s) {
			t.Fatalf("StringStats/AppendUnquoted disagree on %s", q)
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
		top1, sh1, err1, _ := scanFrom(data, 0, false, -1, 25, 2)
		top2, sh2, err2, ok := scanSplit(data, 25, 2)
		if !ok {
			return
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("one scan: %v, split scan: %v, for %q", err1, err2, data)
		}
		if err1 != nil {
			return
		}
		if top1 != top2 || sh1.Count != sh2.Count {
			t.Fatalf("top %v/%v count %d/%d for %q", top1, top2, sh1.Count, sh2.Count, data)
		}
		if diff := cmp.Diff(sh1.Head, sh2.Head, cmp.AllowUnexported(Child{}, Span{})); diff != "" {
			t.Fatalf("head (-one +split):\n%s\nfor %q", diff, data)
		}
		k := min(sh1.Count, 2)
		if diff := cmp.Diff(sh1.Last(k), sh2.Last(k), cmp.AllowUnexported(Child{}, Span{})); diff != "" {
			t.Fatalf("tail (-one +split):\n%s\nfor %q", diff, data)
		}
	})
}
