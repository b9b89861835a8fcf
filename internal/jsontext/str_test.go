package jsontext

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStringSeekAndLen(t *testing.T) {
	// Agreement with AppendUnquoted at every offset, for every escape.
	raw := []byte(`"a\n\u00e9\ud83d\ude00\ud800\"\\\/日x\u0000"`)
	dec := AppendUnquoted(nil, raw)
	body := raw[1 : len(raw)-1]
	if n, _ := StringStats(raw); n != len(dec) {
		t.Fatalf("StringStats = %d, want %d", n, len(dec))
	}
	for off := 0; off < len(dec); off++ {
		pos, at := StringSeek(body, off)
		want := off
		for want < len(dec) && !utf8.RuneStart(dec[want]) {
			want++
		}
		if pos != want {
			t.Fatalf("StringSeek(%d) = %d, want %d", off, pos, want)
		}
		if got := AppendStringWindow(nil, body, at, len(dec)); !bytes.Equal(got, dec[pos:]) {
			t.Fatalf("window from %d = %q, want %q", pos, got, dec[pos:])
		}
	}
}

// The bound is checked with quotedSize, so it must agree with what
// AppendQuote writes, byte for byte.
func TestQuotedLenAgreesWithAppendQuote(t *testing.T) {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	inputs := [][]byte{nil, []byte("a"), []byte("12345678"), []byte("plain ascii text of some length"), all}
	for c := range 256 {
		for _, n := range []int{1, 7, 8, 9, 17} {
			b := bytes.Repeat([]byte{'x'}, n)
			b[n-1] = byte(c)
			inputs = append(inputs, b, bytes.Repeat([]byte{byte(c)}, n))
		}
	}
	for _, in := range inputs {
		if got, want := QuotedLen(in), len(AppendQuote(nil, in)); got != want {
			t.Errorf("QuotedLen(%q) = %d, want %d", in, got, want)
		}
	}
}

// KeyEquals agrees with decoding the key whole, for keys with and without
// escapes, against what they decode to, their prefixes and extensions,
// and their raw bodies.
func TestKeyEquals(t *testing.T) {
	raws := []string{`""`, `"a"`, `"ab"`, `"\n"`, `"\\n"`, `"a\u0041"`, `"\u00e9t\u00e9"`, `"\ud83d\ude00!"`,
		`"\ud800"`, `"\ud800x"`, `"\"q\""`, `"\/"`, `"日本"`, `"x\u0000json"`, `"` + strings.Repeat(`\u0041`, 40) + `"`}
	for _, raw := range raws {
		dec := string(AppendUnquoted(nil, []byte(raw)))
		body := raw[1 : len(raw)-1]
		cands := []string{dec, body, "", "A", dec + "x", "x" + dec, `\n`, "\n", "\uFFFD", "\uFFFDx"}
		for i := range len(dec) {
			cands = append(cands, dec[:i], dec[:i]+"?")
		}
		for _, s := range cands {
			if got, want := KeyEquals([]byte(raw), s), dec == s; got != want {
				t.Errorf("KeyEquals(%s, %q) = %v, want %v", raw, s, got, want)
			}
		}
	}
}

// KeyEquals allocates nothing, however long the key and its escapes: a
// lookup compares many keys with one reference.
func TestKeyEqualsAllocs(t *testing.T) {
	raw := []byte(`"\u0041` + strings.Repeat("k", 64<<10) + `"`)
	if n := testing.AllocsPerRun(10, func() {
		if KeyEquals(raw, "Akk") || KeyEquals(raw, "nokey") {
			t.Fatal("KeyEquals matched a different key")
		}
	}); n != 0 {
		t.Errorf("KeyEquals allocated %v times, want 0", n)
	}
}

func TestEachUnquotedPiece(t *testing.T) {
	for _, raw := range []string{
		`""`, `"a"`, `"\\"`, `"\\\\u0041"`, `"\n\t\"x\u0041"`,
		`"a\ud83d\ude00b"`,                  // a pair is one rune
		`"\ud800\ud83d\ude00\ud83d\ude00z"`, // a lone high surrogate, then pairs
		`"\ud83d\ud83d\ud83d\ude00"`,        // high surrogates in a row
		`"` + strings.Repeat(`ab\"c\u00e9\ud83d\ude00`, 50) + `"`,
		// Runs of backslashes, whose escapes a piece must not count from
		// their start, which an earlier piece held.
		`"` + strings.Repeat(`\\`, 300) + `"`,
		`"x` + strings.Repeat(`\\`, 300) + `"`,
		`"` + strings.Repeat(`\\`, 300) + `\ud83d\ude00` + strings.Repeat(`\\`, 7) + `\n"`,
	} {
		if err := Valid([]byte(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		checkUnquotedFunc(t, []byte(raw))
	}
}
