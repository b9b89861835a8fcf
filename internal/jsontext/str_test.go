package jsontext

import (
	"bytes"
	"encoding/json"
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

// FuzzAppendUnquoted holds AppendUnquoted, which decodes a long string a
// block of 64 bytes at a time (decodeBlocks), to encoding/json's decoding,
// on strings the fuzzer's bytes make dense with escapes of every kind, at
// every offset from a block; and checks that it writes nothing past the
// room it may write (len(raw) bytes past dst), and that EachUnquotedPiece
// agrees (on the first of them: it decodes each string seven times).
func FuzzAppendUnquoted(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"path":"/usr/local/x.go","ok":true},{"id":22}`,
		"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13",
		strings.Repeat(`a"b\`, 40), strings.Repeat("\x01", 70) + "x\x02\x02\x02",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body := escapeDense(data)
		for v, raw := range [][]byte{
			append(append([]byte{'"'}, body...), '"'),
			append(append([]byte(`"`+strings.Repeat("x", len(data)%67)), body...), '"'),
			append(append([]byte{'"'}, data...), '"'), // when valid
		} {
			if Valid(raw) != nil {
				continue
			}
			var want string
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("encoding/json rejects %q: %v", raw, err)
			}
			// Room for the decoding and no more, then a guard.
			room := len(raw) - 2
			buf := make([]byte, 3+room+16)
			for i := range buf {
				buf[i] = 0xAA
			}
			copy(buf, "pre")
			got := AppendUnquoted(buf[:3:3+room], raw)
			if string(got) != "pre"+want {
				t.Fatalf("AppendUnquoted(%q) = %q, want %q", raw, got[3:], want)
			}
			if &got[0] != &buf[0] {
				t.Fatalf("AppendUnquoted(%q) grew a dst with room for it", raw)
			}
			for i, c := range buf[3+room:] {
				if c != 0xAA {
					t.Fatalf("AppendUnquoted(%q) wrote %d bytes past its room", raw, i+1)
				}
			}
			if v == 0 {
				checkUnquotedFunc(t, raw)
			}
		}
	})
}

// escapeDense returns a JSON string body made from data: printable ASCII
// bytes but '"' and '\\' are kept, the others stand for an escape or a
// character that is not ASCII, or a run of plain bytes.
func escapeDense(data []byte) []byte {
	pieces := []string{
		`\"`, `\\`, `\/`, `\n`, `\t`, `\b`, `\f`, `\r`, `\u00e9`, `\u0041`, `\ud83d\ude00`, `\ud800`, `\udc00x`,
		`\\\\\"`, `\\\"`, "é", "日本", "😀", `\u0000`, `\u005c`, `\u0022`, `\uD834\uDD1E`, `\ud83d\ud83d\ude00`,
		strings.Repeat("y", 63), strings.Repeat("z", 129),
	}
	var b []byte
	for _, c := range data {
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b = append(b, c)
			continue
		}
		b = append(b, pieces[int(c)%len(pieces)]...)
	}
	return b
}
