package jsontext

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanBoth returns what scanString gives for d with the kernel on and
// with it off.
func scanBoth(d []byte) (end int, err error, wantEnd int, wantErr error) {
	end, err = scanString(d, 0)
	useStringBlocks = false
	defer func() { useStringBlocks = haveStringBlocks }()
	wantEnd, wantErr = scanString(d, 0)
	return end, err, wantEnd, wantErr
}

// checkStringBlocks checks stringBlocks' contract on the body b: when it
// says the string closed, scanString's loop ends the string there with no
// error; otherwise it stopped at a block (n a multiple of 64) whose 64
// bytes, or the bytes of a character or escape just before it, hold the
// first error, or it stopped for want of a whole block (where the machine
// has no kernel, at 0); and kernelString's index is one from which the
// loop gives what it gives from the start. Every kernel the machine runs
// (AVX2, AVX-512) gives the same.
func checkStringBlocks(t *testing.T, b []byte) (n int, closed bool, carry uint64) {
	t.Helper()
	n, closed, carry = stringBlocks(b)
	for k, kernel := range scanKernels {
		if n1, closed1, carry1 := kernel(b); n1 != n || closed1 != closed || carry1 != carry {
			t.Fatalf("stringBlocks(%q) = %d, %v, %d; kernel %d: %d, %v, %d", b, n, closed, carry, k, n1, closed1, carry1)
		}
	}
	d := append([]byte{'"'}, b...)
	useStringBlocks = false
	defer func() { useStringBlocks = haveStringBlocks }()
	wantEnd, wantErr := scanString(d, 0)
	if closed {
		if wantErr != nil || wantEnd != n+1 {
			t.Fatalf("stringBlocks(%q) closed at %d; the loop: %d, %v", b, n, wantEnd-1, wantErr)
		}
		return
	}
	if n%blockLen != 0 || n > len(b) {
		t.Fatalf("stringBlocks(%q) stopped at %d, not a block's start", b, n)
	}
	if haveStringBlocks && n+blockLen <= len(b) && (wantErr == nil || wantEnd-1 >= n+blockLen) {
		t.Fatalf("stringBlocks(%q) stopped at %d, before a whole block; the loop: %d, %v", b, n, wantEnd-1, wantErr)
	}
	if wantErr != nil && wantEnd-1 < n-5 {
		t.Fatalf("stringBlocks(%q) passed the error at %d, to %d", b, wantEnd-1, n)
	}
	_, j := kernelString(d, 1)
	if j < 1 || j > n+1 || j < n+1-6 {
		t.Fatalf("kernelString(%q) = %d, not within the 6 bytes before %d", d, j, n+1)
	}
	// From j the loop must be where it would be at some point: its result
	// from there is its result from the start.
	e := append([]byte{'"'}, d[j:]...)
	end, err := scanString(e, 0)
	if end+j-1 != wantEnd || fmt.Sprint(err) != fmt.Sprint(syntaxShift(wantErr, -(j-1))) {
		t.Fatalf("kernelString(%q) = %d: the loop from there: %d, %v; from the start: %d, %v", d, j, end+j-1, err, wantEnd, wantErr)
	}
	return
}

// syntaxShift returns err with its byte offset moved by k.
func syntaxShift(err error, k int) error {
	if err == nil {
		return nil
	}
	var msg string
	var at int
	s := err.Error()
	if i := strings.LastIndex(s, " at byte "); i >= 0 {
		fmt.Sscanf(s[i+len(" at byte "):], "%d", &at)
		msg = strings.TrimPrefix(s[:i], ErrSyntax.Error()+": ")
		return syntaxErr(make([]byte, at+k+1), at+k, msg)
	}
	if i := strings.LastIndex(s, " at end of input (byte "); i >= 0 {
		fmt.Sscanf(s[i+len(" at end of input (byte "):], "%d", &at)
		msg = strings.TrimPrefix(s[:i], ErrSyntax.Error()+": ")
		return syntaxErr(make([]byte, at+k), at+k, msg)
	}
	return err
}

// TestStringBlocks checks what stringBlocks vouches for, on strings that
// end, or hold an error, at each offset from a block, and that stop within
// an escape or a character.
func TestStringBlocks(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	type want struct {
		n      int
		closed bool
		carry  uint64
	}
	cases := []struct {
		name string
		body string
		want want
	}{
		{"ends in the first block", x(10) + `"` + x(100), want{11, true, 0}},
		{"ends at the last byte of a block", x(63) + `"` + x(64), want{64, true, 0}},
		{"ends at the first byte of a block", x(64) + `"` + x(63), want{65, true, 0}},
		{"escaped quote across blocks", x(63) + `\"` + x(10) + `"` + x(60), want{76, true, 0}},
		{"even run before a quote across blocks", x(62) + `\\"` + x(70), want{65, true, 0}},
		{"odd run before a quote across blocks", x(61) + `\\\"` + x(10) + `"` + x(60), want{76, true, 0}},
		{"escapes of every letter", strings.Repeat(`\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00`, 5) + `"` + x(64), want{171, true, 0}},
		{"\\u digits across blocks", x(61) + `\u00e9"` + x(64), want{68, true, 0}},
		{"not ASCII across blocks", x(63) + "é" + x(10) + `"` + x(64), want{76, true, 0}},
		{"4 bytes across blocks", x(62) + "😀" + `"` + x(64), want{67, true, 0}},
		{"invalid after the quote", x(10) + "\"\xff\x01\\x" + x(100), want{11, true, 0}},
		{"lead byte before the quote", x(10) + "\xe2\x82\"" + x(100), want{0, false, 0}},
		{"control character", x(70) + "\n" + x(100), want{64, false, 0}},
		{"bad escape", x(130) + `\x` + x(100), want{128, false, 0}},
		{"bad \\u digit", x(130) + `\u00g0` + x(100), want{128, false, 0}},
		{"short \\u before a quote", x(130) + `\u00"` + x(100), want{128, false, 0}},
		{"surrogate", x(200) + "\xed\xa0\x80" + x(100), want{192, false, 0}},
		{"overlong", x(200) + "\xc0\xaf" + x(100), want{192, false, 0}},
		{"past U+10FFFF", x(200) + "\xf4\x90\x80\x80" + x(100), want{192, false, 0}},
		{"stray continuation", x(200) + "\x80" + x(100), want{192, false, 0}},
		{"truncated at a block's end", x(62) + "\xe2\x82" + x(100), want{64, false, 0}},
		{"truncated within a block", x(61) + "\xe2\x82" + x(100), want{0, false, 0}},
		{"no end: escape at the last whole block's end", x(63) + `\n` + x(20), want{64, false, 1}},
		{"no end: \\u digits past the last whole block", x(62) + `\u00e9` + x(20), want{64, false, 0b1111 << 1}},
		{"no end: a character past the last whole block", x(63) + "é" + x(20), want{64, false, 0}},
		{"shorter than a block", x(40) + `"`, want{0, false, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, closed, carry := checkStringBlocks(t, []byte(c.body))
			if got := (want{n, closed, carry}); haveStringBlocks && got != c.want {
				t.Errorf("stringBlocks(%q) = %+v, want %+v", c.body, got, c.want)
			}
		})
	}
}

// TestStringBlocksOffsets puts each kind of end, error and escape at each
// offset of two blocks, at the start of a string and after the kernels
// have left their modes that check every block.
func TestStringBlocksOffsets(t *testing.T) {
	for _, s := range []string{`"`, `\"`, `\\"`, `\\\"`, `\\\\"`, "é", "€", "😀", "\xff", "\xc3", "\xe2\x82", "\xf0\x9f\x98",
		"\xed\xa0\x80", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80", "\x80", "\x01", "\x1f", "\x7f", `\x`, `\u`, `\u1`, `\u12"`,
		`\u123g`, `\u1234`, `\uD83D\uDE00`, `\`, `\n\t\r\b\f\/`} {
		for k := 0; k < 2*blockLen+8; k++ {
			for _, tail := range []string{`"` + strings.Repeat("y", 70), strings.Repeat("z", 70) + `"`, ""} {
				checkStringBlocks(t, []byte(strings.Repeat("a", k)+s+tail))
				checkStringBlocks(t, []byte(strings.Repeat("é", k/2)+strings.Repeat("a", k%2)+s+tail))
				// After the blocks the kernels check whole (a run with
				// bytes that are not ASCII, with escapes) and as many
				// again that need no checks.
				checkStringBlocks(t, []byte(strings.Repeat(`é\n`, 200)+strings.Repeat("a", 20*blockLen+k)+s+tail))
				// At the end of a run of such blocks longer than that.
				checkStringBlocks(t, []byte(strings.Repeat("é", 8*blockLen+k/2)+strings.Repeat("a", k%2)+s+tail))
			}
		}
	}
}

// TestStringBlocksUTF8 holds the kernel's UTF-8 check to utf8.Valid, on
// random characters of each length and random bytes among them.
func TestStringBlocksUTF8(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 31))
	runes := []rune{'a', 'é', 0x7ff, 0x800, '€', 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, '😀', 0x10ffff}
	for range 20000 {
		var b []byte
		for l := r.IntN(300); len(b) < l; {
			switch r.IntN(40) {
			case 0:
				b = append(b, byte(0x80+r.IntN(0x80)))
			case 1:
				b = utf8.AppendRune(b, runes[r.IntN(len(runes))])
				b = b[:len(b)-1]
			default:
				b = utf8.AppendRune(b, runes[r.IntN(len(runes))])
			}
		}
		body := append(bytes.Clone(b), '"')
		body = append(body, strings.Repeat("x", blockLen)...)
		n, closed, _ := checkStringBlocks(t, body)
		if want := utf8.Valid(b); haveStringBlocks && closed != want {
			t.Fatalf("stringBlocks(%q) = %d, %v; utf8.Valid: %v", body, n, closed, want)
		}
	}
}

// checkUnquoteBlocks checks unquoteBlocks' contract on raw, the body of a
// valid string: it decodes raw[:i] to what AppendUnquoted without the
// kernel does, stops where it must (fewer than 128 bytes left, or a block
// with a \u escape next), and writes nothing past len(raw); and that
// AppendUnquoted with the kernel decodes raw whole as without.
func checkUnquoteBlocks(t *testing.T, raw []byte) {
	t.Helper()
	for _, kernel := range unquoteKernels {
		checkUnquoteKernel(t, kernel, raw)
	}
	useStringBlocks = false
	want := appendUnquotedBody(nil, raw)
	useStringBlocks = haveStringBlocks
	if got := AppendUnquoted(nil, append(append([]byte{'"'}, raw...), '"')); !bytes.Equal(got, want) {
		t.Fatalf("AppendUnquoted(%q) = %q; without the kernel %q", raw, got, want)
	}
}

// checkUnquoteKernel checks one kernel of unquoteBlocks on raw (see
// checkUnquoteBlocks).
func checkUnquoteKernel(t *testing.T, kernel func(out, raw []byte) (int, int), raw []byte) {
	t.Helper()
	out := bytes.Repeat([]byte{0xAA}, len(raw)+64)
	i, n := kernel(out[:len(raw)], raw)
	useStringBlocks = false
	defer func() { useStringBlocks = haveStringBlocks }()
	want := appendUnquotedBody(nil, raw)
	if i < 0 || i > len(raw) || n < 0 || n > i {
		t.Fatalf("unquoteBlocks(%q) = %d, %d", raw, i, n)
	}
	if got, wantPart := out[:n], appendUnquotedBody(nil, raw[:i]); !bytes.Equal(got, wantPart) || !bytes.HasPrefix(want, wantPart) {
		t.Fatalf("unquoteBlocks(%q) decoded %d bytes to %q, want %q", raw, i, got, wantPart)
	}
	if bytes.IndexFunc(out[len(raw):], func(r rune) bool { return r != utf8.RuneError }) >= 0 {
		t.Fatalf("unquoteBlocks(%q) wrote past len(raw)", raw)
	}
	if len(raw)-i >= 2*blockLen {
		// It stopped at a block whose escapes (from i, none inside one)
		// hold a \u.
		hasU := false
		for k := i; k < i+blockLen; k++ {
			if raw[k] == '\\' {
				hasU = hasU || raw[k+1] == 'u'
				k++
			}
		}
		if !hasU {
			t.Fatalf("unquoteBlocks(%q) stopped at %d, before a block of short escapes", raw, i)
		}
	}
}

// TestUnquoteBlocks checks unquoteBlocks on bodies with each kind of
// escape at each offset of two blocks, among dense escapes and none.
func TestUnquoteBlocks(t *testing.T) {
	for _, s := range []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\\\"`, `\\\\`, `\u00e9`, `\uD83D\uDE00`, "é", "😀", `\\u`} {
		for k := 0; k < 2*blockLen+8; k++ {
			for _, tail := range []string{strings.Repeat("y", 200), strings.Repeat(`a\"`, 70), strings.Repeat(`\n\\`, 70)} {
				checkUnquoteBlocks(t, []byte(strings.Repeat("a", k)+s+tail))
				checkUnquoteBlocks(t, []byte(strings.Repeat(`\"`, k/2)+strings.Repeat("a", k%2)+s+tail))
			}
		}
	}
}

// FuzzScanStringKernel holds scanString with the kernel to scanString
// without it: the same end and the same error, at the same byte, for the
// fuzzer's bytes as they are and made into strings long enough for the
// kernel (repeated, after a run of text, of text that is not ASCII, of
// escapes), at each offset from a block; each kernel to the contract
// (checkStringBlocks); and AppendUnquoted of each valid one to
// AppendUnquoted without the kernel (checkUnquoteBlocks).
func FuzzScanStringKernel(f *testing.F) {
	for _, seed := range []string{`abc"`, `a\"b\\c\"d"`, `\\\\\\\"x"`, "é€😀\"", "\xff", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
		"\xe2\x82", "\x80", "\x01", `\x`, `\u00e9`, `\u12"`, `\uD83D\uDE00"`, `\`, `\n\t\r\b\f\/"`, "Zoë said \\\"hi\\\" — ok\\n",
		`{\"id\":7,\"name\":\"x\"}`} {
		f.Add([]byte(seed), uint8(0))
	}
	for k := range blockLen {
		f.Add([]byte(strings.Repeat("é", k)+`"`), uint8(k))
		f.Add([]byte(strings.Repeat(`\\`, k)+`\"`), uint8(k))
	}
	f.Fuzz(func(t *testing.T, data []byte, pad uint8) {
		p := int(pad) % (2 * blockLen)
		for _, d := range [][]byte{
			append([]byte{'"'}, data...),
			append([]byte(`"`+strings.Repeat("x", p)), bytes.Repeat(data, 1+300/(len(data)+1))...),
			append([]byte(`"`+strings.Repeat("é", p)), bytes.Repeat(data, 1+300/(len(data)+1))...),
			append([]byte(`"`+strings.Repeat(`\"`, p)), data...),
			append(append([]byte(`"`+strings.Repeat("x", kernelWait+blockLen+p)), data...), strings.Repeat("y", 2*blockLen)...),
			append(append([]byte(`"`+strings.Repeat("ü", kernelWait+p)), data...), `"`+strings.Repeat("\xff", 2*blockLen)...),
			// Past the blocks the kernels check whole after one that
			// needed it, and back to those they do not.
			append(append([]byte(`"`+strings.Repeat("é", 8*blockLen+p)), data...), strings.Repeat("y", 18*blockLen)+`"`...),
		} {
			end, err, wantEnd, wantErr := scanBoth(d)
			if end != wantEnd || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("scanString(%q): with the kernel %d, %v; without %d, %v", d, end, err, wantEnd, wantErr)
			}
			if err == nil {
				checkUnquoteBlocks(t, d[1:end-1])
			}
			checkStringBlocks(t, d[1:])
		}
	})
}
