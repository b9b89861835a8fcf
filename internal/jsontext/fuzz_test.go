package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Fuzz targets check properties, not only the absence of panics. Run one
// for a while with, for example:
//
//	go test -run='^$' -fuzz=FuzzScanJSON -fuzztime=60s ./internal/jsontext

func FuzzScanJSON(f *testing.F) {
	for _, seed := range []string{`[1,{"a":[true,null]},"x\n"]`, `{"a":1,"b":[]}`,
		`{"object":"list","items":[{"id":1,"n":"a"},{"id":2,"m":[1]},3],"more":{"k":{"x":1},"j":2},"e":{}}`,
		` { "a" : [ ] , "b" : { "c" : [ { "d" : 1 } ] , "c" : 2 } } `, `"\ud83d\ude00"`, `-0.1e-5`, `[`, `{"a" 1}`,
		`[12,0,true,false,null,{"a":[7]}]`, `[12.5,1E3,19e+2,-3,0.0]`, `[12x]`, `[truex]`, `[trux]`, `[nulx]`, `[falsx]`, `[nul]`, `[fals]`, `[1.]`, `[0123]`, `[99`,
		`[{"n":18446744073709551617,"m":9007199254740993},{"n":2,"m":9007199254740992},{"n":-5,"m":123456789012345}]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, sh, err := Scan(data, Limits{Head: 25, Tail: 2, Keys: 8})
		want := json.Valid(data) && utf8.Valid(data)
		if (err == nil) != want {
			t.Fatalf("Scan valid = %v, want %v (err %v) for %q", err == nil, want, err, data)
		}
		if err := Valid(data); (err == nil) != want { // Valid tallies: its own short cuts
			t.Fatalf("Valid = %v, want %v for %q", err, want, data)
		}
		if err != nil {
			return
		}
		if sh.Depth != Depth(data) {
			t.Fatalf("Scan depth %d, Depth %d, for %q", sh.Depth, Depth(data), data)
		}
		if top, _, _ := Scan(data, Limits{}); data[top.Start] == '{' || data[top.Start] == '[' {
			// EachChildAt, skipping each child, sees what EachChild sees
			// and ends where the container ends.
			var want, got [][]byte
			EachChild(data[top.Start:], func(k, v []byte) bool { want = append(want, k, v); return true })
			end := EachChildAt(data, top.Start, func(k []byte, at int) int {
				end := SkipValue(data, at)
				got = append(got, k, data[at:end])
				return end
			})
			if end != top.End || !slices.EqualFunc(want, got, bytes.Equal) {
				t.Fatalf("EachChildAt: end %d (want %d), children %q, want %q", end, top.End, got, want)
			}
		}
		checkOutline(t, data)
		checkNested(t, data)
		checkInner(t, data)
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
			checkItems(t, data, sh.Items, 8)
			// Past keysCompared distinct keys, keys are found in a map.
			_, sh, _ := Scan(data, Limits{Keys: keysCompared + 4})
			checkItems(t, data, sh.Items, keysCompared+4)
		case string:
			raw := bytes.Trim(data, " \t\r\n")
			n, _ := StringStats(raw)
			if n != len(v) || string(AppendUnquoted(nil, raw)) != v {
				t.Fatalf("string stats %d / decode %q, want %d %q", n, AppendUnquoted(nil, raw), len(v), v)
			}
			checkUnquotedFunc(t, raw)
			if !equalDecoded([]byte(v), raw[1:len(raw)-1]) || len(v) > 0 && equalDecoded([]byte(v[:len(v)-1]), raw[1:len(raw)-1]) {
				t.Fatalf("equalDecoded(%q, %s) disagrees with its decoding", v, raw)
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
			if cs := ClipStringTo(string(s), budget); cs != string(c) {
				t.Fatalf("ClipStringTo(%q, %d) = %q, AppendClipped = %q", s, budget, cs, c)
			}
		}
		if n := HeadCut(s, budget); n < 0 || n > max(budget, 0) || n > len(s) || valid && !utf8.Valid(s[:n]) {
			t.Fatalf("HeadCut(%q, %d) = %d", s, budget, n)
		} else if ns := HeadCutString(string(s), budget); ns != n {
			t.Fatalf("HeadCutString(%q, %d) = %d, HeadCut = %d", s, budget, ns, n)
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
		if got := AppendUnquoted([]byte("prefix"), q); string(got) != "prefix"+string(s) {
			t.Fatalf("AppendUnquoted(prefix, %s) = %q", q, got)
		}
		checkUnquotedFunc(t, q)
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
		top1, sh1, err1, _ := scanWhole(data, 0, false, -1, Limits{Head: 25, Tail: 2, Keys: 8})
		top2, sh2, err2, ok := scanSplit(data, Limits{Head: 25, Tail: 2, Keys: 8})
		if !ok {
			return
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("one scan: %v, split scan: %v, for %q", err1, err2, data)
		}
		if err1 != nil {
			return
		}
		if top1 != top2 || sh1.Count != sh2.Count || sh1.Depth != sh2.Depth {
			t.Fatalf("top %v/%v count %d/%d depth %d/%d for %q", top1, top2, sh1.Count, sh2.Count, sh1.Depth, sh2.Depth, data)
		}
		checkItems(t, data, sh2.Items, 8)
		if sh1.Largest != sh2.Largest { // zero for arrays
			t.Fatalf("largest %v/%v for %q", sh1.Largest, sh2.Largest, data)
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

// FuzzScanSplitObject holds the split scan of a top-level object whose
// array member spans the middle (scanSplitObject) to one scan, on a
// document built around the input: it pads the array so that the split
// can happen (the member's key a KiB or more before it).
func FuzzScanSplitObject(f *testing.F) {
	for _, seed := range []string{`1`, `{"a":[1,2]}`, `[{"x":1},{"y":[2]}]`, `"s"`, `{`, `[1,{"k":[]}],"more":{"z":[{},{}]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, doc := range [][]byte{
			fmt.Appendf(nil, `{"h":%s,"rows":[%s{"j":%s},{"k":1}],"t":%s}`, data, strings.Repeat(`{"i":0},`, 400), data, data),
			fmt.Appendf(nil, `{"a":[%s],"rows":[%s[%s]],"big":[%s%s],"z":0}`, data, strings.Repeat(`[0],`, 1000), data, strings.Repeat(`{"p":[1,2,3]},`, 150), data),
		} {
			checkSplitObject(t, doc)
		}
	})
}

// checkSplitObject compares scanSplitObject of doc with one scan of it,
// and reports whether the scan was split (its first half stopped where the
// second began).
func checkSplitObject(t *testing.T, doc []byte) (split bool) {
	t.Helper()
	lim := Limits{Head: 5, Tail: 2, Keys: 8, Index: true, Nested: true}
	start := SkipSpace(doc, 0)
	if mid := guessItemStart(doc, start+len(doc)/2); mid >= 0 {
		a := newScanner(doc, start, false, lim)
		a.stopDepth = 2
		a.run(start, mid)
		split = a.stopped
	}
	top1, sh1, err1, _ := scanWhole(doc, 0, false, -1, lim)
	top2, sh2, err2, ok := scanSplitObject(doc, start, lim)
	if !ok {
		return split
	}
	if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
		t.Fatalf("one scan: %v, split: %v, for %.300q", err1, err2, doc)
	}
	if err1 != nil {
		return split
	}
	opt := cmp.AllowUnexported(Child{}, Span{})
	cmpShape := func(what string, a, b *Shape) {
		t.Helper()
		k := min(a.Count, 2)
		if a.Count != b.Count || a.Depth != b.Depth || a.Largest != b.Largest {
			t.Fatalf("%s: count %d/%d depth %d/%d largest %v/%v for %.300q", what, a.Count, b.Count, a.Depth, b.Depth, a.Largest, b.Largest, doc)
		}
		if diff := cmp.Diff(a.Head, b.Head, opt); diff != "" {
			t.Fatalf("%s: head (-one +split):\n%s\nfor %.300q", what, diff, doc)
		}
		if diff := cmp.Diff(a.Last(k), b.Last(k), opt); diff != "" {
			t.Fatalf("%s: tail (-one +split):\n%s\nfor %.300q", what, diff, doc)
		}
	}
	if top1 != top2 {
		t.Fatalf("top %v/%v for %.300q", top1, top2, doc)
	}
	cmpShape("object", &sh1, &sh2)
	if !slices.Equal(sh1.Blocks, sh2.Blocks) {
		t.Fatalf("key blocks %v / %v for %.300q", sh1.Blocks, sh2.Blocks, doc)
	}
	if sh2.Nested == nil {
		// Allowed, the caller scanning the member again, when the split
		// cannot tell the member: the largest array or object is past the
		// first nestedMembers (which one scan does not record), or the
		// member split has fields one scan left untracked (mergeItems).
		var largest Span
		n, past := 0, false
		EachChildAt(doc, top1.Start, func(_ []byte, at int) int {
			end := SkipValue(doc, at)
			if c := doc[at]; c == '[' || c == '{' {
				if n++; end-at > largest.End-largest.Start {
					largest, past = Span{at, end}, n > nestedMembers
				}
			}
			return end
		})
		mid := guessItemStart(doc, top1.Start+len(doc)/2)
		untracked := sh1.Nested != nil && sh1.Nested.Items != nil && sh1.Nested.Items.Untracked > 0 &&
			sh1.NestedVal.Start < mid && mid < sh1.NestedVal.End
		if sh1.Nested != nil && !past && !untracked {
			t.Fatalf("split scan dropped Nested (one scan: %v) for %.300q", sh1.NestedVal, doc)
		}
		return split
	}
	if sh1.Nested == nil || sh1.NestedVal != sh2.NestedVal {
		t.Fatalf("nested %v at %v, split %v at %v, for %.300q", sh1.Nested != nil, sh1.NestedVal, sh2.Nested != nil, sh2.NestedVal, doc)
	}
	n1, n2 := sh1.Nested, sh2.Nested
	cmpShape("nested", n1, n2)
	if !slices.Equal(n1.Blocks, n2.Blocks) {
		t.Fatalf("nested key blocks %v / %v for %.300q", n1.Blocks, n2.Blocks, doc)
	}
	if part := sh2.NestedVal.Of(doc); part[0] == '[' {
		checkItemsOf(t, part, doc, n2.Items, 8)
		// Marks may fall elsewhere than one scan's (the second half marks
		// its first item), but each is an item's start, in order.
		var starts []int
		EachChildAt(doc, sh2.NestedVal.Start, func(_ []byte, at int) int {
			starts = append(starts, at)
			return SkipValue(doc, at)
		})
		prev := -1
		for _, m := range n2.Marks {
			if m.Item < 0 || m.Item >= len(starts) || starts[m.Item] != m.Off || m.Off <= prev {
				t.Fatalf("nested mark %v (of %d items) after %d for %.300q", m, len(starts), prev, doc)
			}
			prev = m.Off
		}
	}
	return split
}

// modelItems computes the Items of the valid top-level array d from the
// token stream of encoding/json, keeping at most max keys.
func modelItems(t *testing.T, d []byte, max int) *modelSummaries {
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	kindOfTok := func(tok json.Token) Kinds {
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '[' {
				return KindArray
			}
			return KindObject
		case string:
			return KindString
		case json.Number:
			return KindNumber
		case bool:
			return KindBool
		}
		return KindNull
	}
	// skip reads the rest of a value whose first token was tok.
	skip := func(tok json.Token) {
		if d, ok := tok.(json.Delim); ok && (d == '[' || d == '{') {
			for depth := 1; depth > 0; {
				tok, err := dec.Token()
				if err != nil {
					t.Fatal(err)
				}
				if d, ok := tok.(json.Delim); ok {
					if d == '[' || d == '{' {
						depth++
					} else {
						depth--
					}
				}
			}
		}
	}
	it := &modelSummaries{Items: &Items{}}
	ids := map[string]int{}
	if _, err := dec.Token(); err != nil { // '['
		t.Fatal(err)
	}
	// token reads the next token and its bytes in d.
	token := func() (json.Token, []byte) {
		from := dec.InputOffset()
		tok, _ := dec.Token()
		return tok, bytes.TrimLeft(d[from:dec.InputOffset()], " \t\r\n,:")
	}
	for dec.More() {
		tok, raw := token()
		k := kindOfTok(tok)
		it.Kinds |= k
		if k != KindObject {
			if k != KindArray {
				it.scalars.add(raw)
			}
			skip(tok)
			continue
		}
		it.Objects++
		for dec.More() {
			keyTok, _ := dec.Token()
			key := keyTok.(string)
			vtok, raw := token()
			id, ok := ids[key]
			if !ok && len(it.Keys) < max {
				id, ok = len(it.Keys), true
				ids[key] = id
				it.Keys = append(it.Keys, KeyInfo{})
				it.values = append(it.values, modelSummary{})
			}
			if ok {
				it.Keys[id].Kinds |= kindOfTok(vtok)
				it.Keys[id].Count++
				if k := kindOfTok(vtok); k != KindArray && k != KindObject {
					it.values[id].add(raw)
				}
			} else {
				it.Untracked++
			}
			skip(vtok)
		}
		dec.Token() // '}'
	}
	return it
}

// modelSummaries is the model of Items, with the model of each Summary.
type modelSummaries struct {
	*Items
	scalars modelSummary
	values  []modelSummary
}

// modelSummary is the model of a Summary: what it tells, in bytes.
type modelSummary struct {
	Open     bool
	Strings  []string // as in the document, quoted
	Bools    uint8
	Min, Max string
	min, max float64
}

func (m *modelSummary) add(raw []byte) {
	switch raw[0] {
	case '"':
		switch {
		case m.Open:
		case len(raw) > ShortString+2 || bytes.ContainsRune(raw, '\\'), len(m.Strings) == MaxStrings && !slices.Contains(m.Strings, string(raw)):
			m.Open, m.Strings = true, nil
		case slices.Contains(m.Strings, string(raw)):
		default:
			m.Strings = append(m.Strings, string(raw))
		}
	case 't':
		m.Bools |= 2
	case 'f':
		m.Bools |= 1
	case 'n':
	default:
		f, _ := strconv.ParseFloat(string(raw), 64)
		if m.Min == "" || f < m.min {
			m.Min, m.min = string(raw), f
		}
		if m.Max == "" || f > m.max {
			m.Max, m.max = string(raw), f
		}
	}
}

// modelOf returns what the Summary s of document d tells, as the model
// has it.
func modelOf(d []byte, s *Summary) modelSummary {
	m := modelSummary{Open: s.Open, Bools: s.Bools}
	if !s.Open {
		for _, sp := range s.Strings[:s.NStrings] {
			m.Strings = append(m.Strings, string(sp.Of(d)))
		}
	}
	if s.Numbers {
		m.Min, m.Max = string(s.Min.Of(d)), string(s.Max.Of(d))
	}
	return m
}

// checkItems compares the Items Scan recorded for the array d with the
// model, keys by their decoded text.
func checkItems(t *testing.T, d []byte, got *Items, max int) {
	t.Helper()
	checkItemsOf(t, d, d, got, max)
}

// checkItemsOf compares the Items Scan recorded in the document d with the
// model of the array arr holding the same items.
func checkItemsOf(t *testing.T, arr, d []byte, got *Items, max int) {
	t.Helper()
	want := modelItems(t, arr, max)
	if got == nil {
		t.Fatalf("no Items for the array %q", d)
	}
	type key struct {
		Name  string
		Kinds Kinds
		Count int
	}
	conv := func(it *Items, withNames bool) []key {
		var ks []key
		for i, k := range it.Keys {
			name := strconv.Itoa(i)
			if withNames {
				name = string(AppendUnquoted(nil, k.Key.Of(d)))
			}
			ks = append(ks, key{name, k.Kinds, k.Count})
		}
		return ks
	}
	if got.Kinds != want.Kinds || got.Objects != want.Objects || got.Untracked != want.Untracked {
		t.Fatalf("Items of %q: kinds %b objects %d untracked %d, want %b %d %d", d, got.Kinds, got.Objects, got.Untracked, want.Kinds, want.Objects, want.Untracked)
	}
	if diff := cmp.Diff(conv(want.Items, false), conv(got, false)); diff != "" {
		t.Fatalf("keys of %q (-model +scan):\n%s", d, diff)
	}
	opt := cmpopts.IgnoreUnexported(modelSummary{})
	if diff := cmp.Diff(want.scalars, modelOf(d, &got.Scalars), opt); diff != "" {
		t.Fatalf("summary of the scalar items of %.300q (-model +scan):\n%s", d, diff)
	}
	for i := range got.Keys {
		if diff := cmp.Diff(want.values[i], modelOf(d, &got.Keys[i].Values), opt); diff != "" {
			t.Fatalf("summary of key %d of %.300q (-model +scan):\n%s", i, d, diff)
		}
	}
}

// FuzzStringEnds checks StringHead and StringTail against a full decoding:
// a prefix and a suffix of it, within n bytes, and no shorter than n less
// one character; and KeyEquals: true for the decoding only.
func FuzzStringEnds(f *testing.F) {
	for _, seed := range []string{`"plain text"`, `"a\nb\u00e9\ud83d\ude00\\\"x"`, `"\\\\\\u0041\u0041"`, `"日本語のテキスト"`, `"\u0000\u0001"`} {
		f.Add([]byte(seed), 5)
	}
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if len(raw) < 2 || raw[0] != '"' || Valid(raw) != nil {
			return
		}
		n = n % 300
		if n < 0 {
			n = -n
		}
		dec := AppendUnquoted(nil, raw)
		head, tail := StringHead(raw, n), StringTail(raw, n)
		if len(head) > n || !bytes.HasPrefix(dec, head) {
			t.Fatalf("StringHead(%s, %d) = %q of %q", raw, n, head, dec)
		}
		if len(tail) > n || !bytes.HasSuffix(dec, tail) {
			t.Fatalf("StringTail(%s, %d) = %q of %q", raw, n, tail, dec)
		}
		if len(head) < min(n, len(dec))-utf8.UTFMax+1 || len(tail) < min(n, len(dec))-utf8.UTFMax+1 {
			t.Fatalf("StringHead/StringTail(%s, %d) too short: %q / %q of %q", raw, n, head, tail, dec)
		}
		body := string(raw[1 : len(raw)-1])
		for _, s := range []string{string(dec), string(dec[:min(n, len(dec))]), string(head) + "x", body} {
			if got, want := KeyEquals(raw, s), s == string(dec); got != want {
				t.Fatalf("KeyEquals(%s, %q) = %v, want %v", raw, s, got, want)
			}
		}
	})
}

// FuzzScanStream checks ScanStream against encoding/json's Decoder, which
// reads a stream of values: when the decoder reads values up to the end of
// the input, ScanStream accepts the same number, with the same Items as an
// array of them would have; when ScanStream accepts, each value it
// recorded is valid JSON.
func FuzzScanStream(f *testing.F) {
	for _, seed := range []string{"{\"a\":1}\n{\"a\":2,\"b\":[]}\n", "[1]\n[2]", "{}{}", " 1 2 3 ", "{\n  \"Dir\": \"x\"\n}\n{\n  \"Dir\": \"y\"\n}\n", "{\"a\":1}\n{bad}\n", ""} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		sh, err := ScanStream(d, Limits{Head: 25, Tail: 2, Keys: 8})
		dec := json.NewDecoder(bytes.NewReader(d))
		dec.UseNumber()
		n, decOK := 0, utf8.Valid(d)
		var arr bytes.Buffer
		arr.WriteByte('[')
		for decOK {
			var v json.RawMessage
			if err := dec.Decode(&v); err == io.EOF {
				break
			} else if err != nil {
				decOK = false
				break
			}
			if n > 0 {
				arr.WriteByte(',')
			}
			arr.Write(v)
			n++
		}
		arr.WriteByte(']')
		if decOK && n > 0 {
			if err != nil {
				t.Fatalf("ScanStream(%q): %v; the decoder read %d values", d, err, n)
			}
			if sh.Count != n {
				t.Fatalf("ScanStream(%q) counted %d values, the decoder %d", d, sh.Count, n)
			}
			checkItemsOf(t, arr.Bytes(), d, sh.Items, 8)
		}
		if err == nil {
			for _, c := range append(sh.Head, sh.Last(min(sh.Count, 2))...) {
				if Valid(c.Val.Of(d)) != nil {
					t.Fatalf("ScanStream(%q) recorded an invalid value %q", d, c.Val.Of(d))
				}
			}
		}
		// Scan sees one value, or says there is more after one
		// (AfterValue), exactly when the stream holds one, or more.
		serr := Valid(d)
		if err == nil && (sh.Count == 1) != (serr == nil) || err == nil && sh.Count > 1 && !AfterValue(serr) {
			t.Fatalf("ScanStream(%q): %d values; Scan: %v", d, sh.Count, serr)
		}
		if AfterValue(serr) && !errors.Is(serr, ErrSyntax) {
			t.Fatalf("Scan(%q): %v does not wrap ErrSyntax", d, serr)
		}
	})
}

// FuzzSkipString checks SkipString against the validating scanner: on a
// valid string, followed by anything, both end at the same byte; and, on
// any bytes after a quote (Depth skips strings of invalid JSON), against
// the search it had before it looked at blocks of escaped quotes.
func FuzzSkipString(f *testing.F) {
	for _, seed := range []string{`"plain"`, `"a\"b"x"`, `"\\\\"`, `"{\"a\":\"b\\\\\"}\"c" tail`, `"` + strings.Repeat(`\"x`, 40) + `",1`, `"` + strings.Repeat(`\\`, 30) + `"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		if len(d) == 0 || d[0] != '"' {
			return
		}
		for _, d := range [][]byte{
			d,
			append([]byte(`"`+strings.Repeat(`\"`, 4)), d[1:]...),
			append([]byte(`"`+strings.Repeat(`\"`, 4)+strings.Repeat("x", len(d)%64)), d[1:]...),
			append([]byte(`"`+strings.Repeat(`\"`, 4)), bytes.Repeat(d[1:], 6)...),
		} {
			if got, want := SkipString(d, 0), skipStringSearch(d, 0); got != want {
				t.Fatalf("SkipString(%q) = %d, the search %d", d, got, want)
			}
			end, err := scanString(d, 0)
			if err != nil {
				continue
			}
			if got := SkipString(d, 0); got != end {
				t.Fatalf("SkipString(%q) = %d, want %d", d, got, end)
			}
		}
	})
}

// skipStringSearch is SkipString as it was before it looked at blocks:
// the reference FuzzSkipString holds it to.
func skipStringSearch(d []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(d[i:], '"')
		if j < 0 {
			return len(d)
		}
		i += j
		n := 0
		for k := i - 1; d[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// checkUnquotedFunc checks that EachUnquotedPiece decodes the valid JSON
// string raw as AppendUnquoted does, whatever the size of its pieces, that
// its pieces are the whole of raw, in order, and that it never reads a
// piece again once it has handed it over: each is overwritten then with
// backslashes, which would change the count of any run of them a later
// piece read back into (the proxy gives the pages behind a decoding back,
// which then read as zeros).
func checkUnquotedFunc(t *testing.T, raw []byte) {
	t.Helper()
	want := AppendUnquoted(nil, raw)
	for _, every := range []int{1, 2, 3, 5, 7, 13, len(raw)} {
		var got, pieces []byte
		EachUnquotedPiece(bytes.Clone(raw), every, nil, func(dec, p []byte) {
			got = append(got, dec...)
			pieces = append(pieces, p...)
			for i := range p {
				p[i] = '\\'
			}
		})
		if !bytes.Equal(got, want) || !bytes.Equal(pieces, raw) {
			t.Fatalf("EachUnquotedPiece(%s, every %d) = %q with pieces %q, want %q", raw, every, got, pieces, want)
		}
	}
}

// checkOutline checks that the outline Scan records of the valid JSON data
// is the one OutlineOf walks, for several choices of what to descend into
// and sizes, and that its parts are values and keys of data.
func checkOutline(t *testing.T, data []byte) {
	t.Helper()
	for _, descend := range []Descend{
		nil,
		func(int, []byte) bool { return true },
		func(depth int, key []byte) bool { return (len(key)+depth)%2 == 0 },
	} {
		for _, max := range []int{1, 4, 100} {
			_, sh, err := Scan(data, Limits{Outline: max, Descend: descend})
			if err != nil {
				t.Fatal(err)
			}
			want := OutlineOf(data, max, descend)
			if !slices.Equal(sh.Outline, want) {
				t.Fatalf("Scan's outline (max %d) %v, OutlineOf %v, of %q", max, sh.Outline, want, data)
			}
			for _, p := range want {
				if Valid(p.Val.Of(data)) != nil || p.Key != (Span{}) && Valid(p.Key.Of(data)) != nil {
					t.Fatalf("part %+v of %q is not a value with its key", p, data)
				}
			}
		}
	}
}

// checkNested checks the Nested shape Scan records of a top-level object
// against Scan of that member alone: it is the largest member that is an
// array or object (the first of equal ones) among the first nestedMembers
// of them, and its shape is that member's, offsets in the document.
func checkNested(t *testing.T, data []byte) {
	t.Helper()
	lim := Limits{Head: 3, Tail: 2, Keys: 8, Index: true}
	nested := lim
	nested.Nested = true
	top, sh, err := Scan(data, nested)
	if err != nil || data[top.Start] != '{' {
		if sh.Nested != nil {
			t.Fatalf("Nested %+v for %q", sh.Nested, data)
		}
		return
	}
	var want Span
	n := 0
	EachChildAt(data, top.Start, func(_ []byte, at int) int {
		end := SkipValue(data, at)
		if c := data[at]; (c == '[' || c == '{') && n < nestedMembers {
			n++
			if end-at > want.End-want.Start {
				want = Span{at, end}
			}
		}
		return end
	})
	if sh.NestedVal != want || (sh.Nested != nil) != (want != Span{}) {
		t.Fatalf("NestedVal %v (shape %v), want %v, for %q", sh.NestedVal, sh.Nested != nil, want, data)
	}
	if want == (Span{}) {
		return
	}
	part := want.Of(data)
	_, alone, err := Scan(part, lim)
	if err != nil {
		t.Fatal(err)
	}
	compareShape(t, data, sh.Nested, want.Start, &alone, part, Span{0, len(part)}, 8)
}

// compareShape checks got, a Shape Scan recorded in the document data of
// the value val of part (part is at offset base in data, and got's offsets
// are in data), against alone, Scan of part alone (or its Nested shape,
// with val the NestedVal): the same children, marks, key blocks, items
// (keys counts up to keys) and, when alone has one, the same Nested shape.
func compareShape(t *testing.T, data []byte, got *Shape, base int, alone *Shape, part []byte, val Span, keys int) {
	t.Helper()
	rebase := func(ch Child) Child {
		if ch == (Child{}) {
			return ch // a zero span: fewer children than recorded
		}
		ch.Val.Start, ch.Val.End = ch.Val.Start-base, ch.Val.End-base
		if ch.Key != (Span{}) {
			ch.Key.Start, ch.Key.End = ch.Key.Start-base, ch.Key.End-base
		}
		return ch
	}
	rebaseAll := func(chs []Child) []Child {
		out := make([]Child, len(chs))
		for i, ch := range chs {
			out[i] = rebase(ch)
		}
		return out
	}
	if got.Count != alone.Count || got.Depth != alone.Depth {
		t.Fatalf("nested count %d depth %d, alone %d %d, for %q", got.Count, got.Depth, alone.Count, alone.Depth, data)
	}
	k := min(alone.Count, alone.ntail)
	for name, pair := range map[string][2][]Child{
		"head":    {rebaseAll(got.Head), alone.Head},
		"last":    {rebaseAll(got.Last(k)), alone.Last(k)},
		"largest": {rebaseAll(got.Largest[:]), alone.Largest[:]},
	} {
		if diff := cmp.Diff(pair[1], pair[0]); diff != "" {
			t.Fatalf("nested %s (-alone +nested):\n%s\nfor %q", name, diff, data)
		}
	}
	var marks Marks
	for _, m := range got.Marks {
		marks = append(marks, Mark{m.Item, m.Off - base})
	}
	if len(marks) != len(alone.Marks) || len(marks) > 0 && !slices.Equal(marks, alone.Marks) {
		t.Fatalf("nested marks %v, alone %v, for %q", marks, alone.Marks, data)
	}
	var blocks KeyBlocks
	for _, b := range got.Blocks {
		b.Start -= base
		blocks = append(blocks, b)
	}
	if len(blocks) != len(alone.Blocks) || len(blocks) > 0 && !slices.Equal(blocks, alone.Blocks) {
		t.Fatalf("nested key blocks %v, alone %v, for %q", blocks, alone.Blocks, data)
	}
	if (got.Items == nil) != (alone.Items == nil) {
		t.Fatalf("nested items %v, alone %v, for %q", got.Items, alone.Items, data)
	}
	if got.Items != nil {
		checkItemsOf(t, val.Of(part), data, got.Items, keys)
	}
	if (got.Nested == nil) != (alone.Nested == nil) {
		t.Fatalf("nested Nested %v, alone %v, for %q", got.Nested != nil, alone.Nested != nil, data)
	}
	if alone.Nested != nil {
		val := Span{got.NestedVal.Start - base, got.NestedVal.End - base}
		if val != alone.NestedVal {
			t.Fatalf("nested NestedVal %v, alone %v, for %q", val, alone.NestedVal, data)
		}
		compareShape(t, data, got.Nested, base, alone.Nested, part, alone.NestedVal, keys)
	}
}

// checkInner checks the Inner shape Scan records of a container in an
// outline (Limits.Inner), data placed in a document as the member k of
// the member x that the outline descends into, against Scan of data alone,
// and that the rest of what Scan records, and its error, are Scan's
// without Inner.
func checkInner(t *testing.T, data []byte) {
	t.Helper()
	const head = `{"a":1,"x":{"j":[2],"k":`
	doc := append(append([]byte(head), data...), `,"l":{}},"y":[3]}`...)
	inner := Limits{Head: 3, Tail: 2, Keys: 8, Index: true, Nested: true}
	lim := Limits{Head: 6, Outline: 64, Descend: func(depth int, key []byte) bool {
		return depth == 1 && KeyEquals(key, "x")
	}}
	_, plain, plainErr := Scan(doc, lim)
	lim.Inner = func(depth int, key []byte) bool { return depth == 2 && KeyEquals(key, "k") }
	lim.InnerLimits = &inner
	_, sh, err := Scan(doc, lim)
	if fmt.Sprint(err) != fmt.Sprint(plainErr) {
		t.Fatalf("Scan with Inner: %v, without: %v, for %q", err, plainErr, doc)
	}
	if err != nil {
		if sh.Inner != nil {
			t.Fatalf("Inner %+v of the invalid %q", sh.Inner, doc)
		}
		return
	}
	got := sh
	got.Inner, got.InnerVal = nil, Span{}
	if diff := cmp.Diff(plain, got, cmp.AllowUnexported(Shape{}, Items{}, Summary{})); diff != "" {
		t.Fatalf("Scan with Inner (-without +with):\n%s\nfor %q", diff, doc)
	}
	top, _, _ := Scan(data, Limits{})
	part := top.Of(data)
	if part[0] != '{' && part[0] != '[' {
		if sh.Inner != nil {
			t.Fatalf("Inner %+v of the scalar %q", sh.Inner, data)
		}
		return
	}
	want := Span{len(head) + top.Start, len(head) + top.End}
	if sh.Inner == nil || sh.InnerVal != want {
		t.Fatalf("Inner %v at %v, want it at %v, for %q", sh.Inner != nil, sh.InnerVal, want, doc)
	}
	_, alone, err := Scan(part, inner)
	if err != nil {
		t.Fatal(err)
	}
	compareShape(t, doc, sh.Inner, want.Start, &alone, part, Span{0, len(part)}, 8)
}

// FuzzAppendValidUTF8: each byte that begins no valid UTF-8 sequence
// becomes U+FFFD, as ranging over a Go string reads it; valid UTF-8 is
// kept; and a JSON string of the bytes, repaired, is valid here and
// decodes as encoding/json decodes the original.
func FuzzAppendValidUTF8(f *testing.F) {
	for _, seed := range []string{"", "plain", "é€😀", "\xff", "a\xe2\x82b", "\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\x80\xbf", "\xf0\x9f\x98", "\uFFFD", strings.Repeat("abcdefgh", 3) + "\xfe"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := AppendValidUTF8([]byte("prefix"), b)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("AppendValidUTF8 dropped dst: %q", got)
		}
		got = got[len("prefix"):]
		if want := string([]rune(string(b))); string(got) != want {
			t.Fatalf("AppendValidUTF8(%q) = %q, want %q", b, got, want)
		}
		if utf8.Valid(b) && !bytes.Equal(got, b) {
			t.Fatalf("AppendValidUTF8 changed valid UTF-8 %q to %q", b, got)
		}
		q := append(append([]byte{'"'}, b...), '"')
		if !json.Valid(q) {
			return // a quote, backslash or control byte in b
		}
		var want string
		if err := json.Unmarshal(q, &want); err != nil {
			t.Fatal(err)
		}
		fixed := AppendValidUTF8(nil, q)
		if err := Valid(fixed); err != nil {
			t.Fatalf("%q repaired to %q is refused: %v", q, fixed, err)
		}
		if dec := AppendUnquoted(nil, fixed); string(dec) != want {
			t.Fatalf("%q repaired decodes to %q, encoding/json decodes the original to %q", q, dec, want)
		}
	})
}

// FuzzSkim checks that Scan and ScanStream, passing the containers they
// record nothing of with skim and the object items of an array with
// objectItem, record what they record scanning them with run, and give
// the same error, under every kind of Limits; and that Tally gives what
// Scan with no Limits gives.
func FuzzSkim(f *testing.F) {
	for _, seed := range []string{`{"status":"ok","rows":[{"id":1,"name":"item-1","ok":true},{"id":2,"x":[[],{}]}],"next":null}`,
		`[{"a":{"b":[1,{"c":"\u00e9\"x"}]}},[[["deep"]]]]`, `{"a":{"b":{"c":{"d":[1,2,{"e":null}]}}},"f":[[1],[2,[3]]]}`,
		`{"a":[{"b":[{"c":1,}]}]}`, `{"a":[[1 2]]}`, `{"a":[{"b" 1}]}`, `{"a":[{"b":"\xff"}]}`, `[[[`, `{"k":[{"x":tru}]}`,
		` { "a" : [ { "b" : [ 1 , 2 ] , "c" : { } } ] } `, `"s"`, `12`, `{}`, `[]`, `{"a":1}x`, `{"a":[{"b":1}]} `,
		// Object items of a top-level array (objectItem): keys in and out
		// of the first item's order, white space, escapes, nested
		// containers, more keys than tracked, and an error at each step.
		`[{"id":1,"name":"a","tags":["x","\u00e9"],"n":"n\t1"},{"id":2,"name":"b","tags":[],"n":null},{ "name" : "c" , "id" : -3.5e2 },{},{"\u0069d":4}]`,
		`[{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9},{"i":1,"a":{"x":[{}]},"j":true}]`,
		`[{"a":1},{"a":1,"b"}]`, `[{"a":1},{"a":1,}]`, `[{"a":1},{"a" 1}]`, `[{"a":1},{"a":[1,}]`, `[{"a":1},{"a":"\x"}]`,
		`[{"a":1},{"a":1]`, `[{"a":1},{"a":1`, `[{"a":1},{"a":`, `[{"a":1},{"a":01}]`, `[{"a":1},{1:1}]`, `[{"a":[[[1]]]},{"a":[[[}]]]}]`,
		`{"object":"list","data":[{"id":1,"t":["a",{}]},{ "t" : [[]] , "id" : 2 },{}],"more":[{"x":1}],"next":{"a":[{"b":1}]}}`,
		`{"data":[{"id":1},{"id":2,}]}`, `{"data":[{"id":1},{"id":[}]}`, `{"data":[{"id":1},{"id":1]}`,
		"{\"a\":1,\"b\":[2]}\n{\"b\":[],\"a\":\"x\"}\n{}\n", "{\"a\":1}\n{\"a\":}\n"} {
		f.Add([]byte(seed))
	}
	descend := func(depth int, key []byte) bool { return depth < 4 }
	limits := []Limits{{}, {Head: 25, Tail: 2, Keys: 8}, {Head: 3, Tail: 2, Keys: 4, Index: true, Nested: true},
		{Head: 96, Tail: 2, Keys: 256, Index: true, Outline: 40, Descend: descend}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lim := range limits {
			skimDeep = true
			top1, sh1, err1 := Scan(data, lim)
			skimDeep = false
			top2, sh2, err2 := Scan(data, lim)
			skimDeep = true
			if fmt.Sprint(err1) != fmt.Sprint(err2) || top1 != top2 {
				t.Fatalf("%+v: skimming: %v %v, scanning: %v %v, for %q", lim, top1, err1, top2, err2, data)
			}
			if diff := cmp.Diff(sh2, sh1, cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%+v: Shape (-scanning +skimming):\n%s\nfor %q", lim, diff, data)
			}
			// The same of the input as a stream of values.
			skimDeep = true
			sh1, err1 = ScanStream(data, lim)
			skimDeep = false
			sh2, err2 = ScanStream(data, lim)
			skimDeep = true
			if fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Fatalf("%+v: ScanStream skimming: %v, scanning: %v, for %q", lim, err1, err2, data)
			}
			if diff := cmp.Diff(sh2, sh1, cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%+v: ScanStream Shape (-scanning +skimming):\n%s\nfor %q", lim, diff, data)
			}
		}
		top1, sh, err1 := Scan(data, Limits{})
		top2, n, largest, err2 := Tally(data)
		if fmt.Sprint(err1) != fmt.Sprint(err2) || err1 == nil && (top1 != top2 || n != sh.Count || largest != sh.Largest[0]) {
			t.Fatalf("Tally: %v %d %v %v, Scan: %v %d %v %v, for %q", top2, n, largest, err2, top1, sh.Count, sh.Largest[0], err1, data)
		}
		for _, k := range []int{0, 2, 6} {
			_, sh, err1 := Scan(data, Limits{Head: k})
			var head [6]Child
			n, depth, err2 := Members(data, head[:k])
			if fmt.Sprint(err1) != fmt.Sprint(err2) || err1 == nil && (n != sh.Count || depth != sh.Depth || !slices.Equal(head[:min(n, k)], sh.Head)) {
				t.Fatalf("Members(%d): %d %d %v %v, Scan: %d %d %v %v, for %q", k, n, depth, head[:min(n, k)], err2, sh.Count, sh.Depth, sh.Head, err1, data)
			}
		}
	})
}

// FuzzValid checks that Valid, which tallies a small document, accepts and
// refuses what Scan with no Limits (Valid before it tallied) does, with the
// same error.
func FuzzValid(f *testing.F) {
	for _, seed := range []string{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ping","arguments":{}}}`,
		`[1,2,{"a":[true,false,null]}]`, `"s"`, `12`, `-0.5e+3`, `{}`, `[]`, ` `, ``, `{"a":1}x`, `{"a":[{"b":1}]} `,
		`{"a":01}`, `{"a":"\u12"}`, `{"a":"\xff"}`, `[[[`, `{"a" 1}`, `[1,]`, `nul`, "\"\x01\"", `{"a":1,"a":2}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, want := Scan(data, Limits{})
		got := Valid(data)
		if fmt.Sprint(got) != fmt.Sprint(want) || errors.Is(got, ErrSyntax) != errors.Is(want, ErrSyntax) {
			t.Fatalf("Valid(%q) = %v, Scan: %v", data, got, want)
		}
	})
}
