package values

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the JSON string codec: quoting text as a JSON string
// without decoding it twice, and decoding validated JSON strings.

const hexDigits = "0123456789abcdef"

// quoteSafe marks bytes that appendQuoted copies unchanged. Bytes at or
// above 0x80 are safe because text values are valid UTF-8.
var quoteSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x100; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendQuoted appends s, which must be valid UTF-8, as a JSON string.
// Unlike encoding/json it does not escape <, > and &, so the tool receives
// the text a person would expect to see.
func appendQuoted(dst []byte, s []byte) []byte {
	if cap(dst)-len(dst) < len(s)+2 {
		dst = append(make([]byte, 0, len(dst)+len(s)+len(s)/16+2), dst...)
	}
	dst = append(dst, '"')
	for len(s) > 0 {
		i := 0
		for i+8 <= len(s) {
			if m := quoteBytes(binary.LittleEndian.Uint64(s[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(s) && quoteSafe[s[i]] {
			i++
		}
		dst = append(dst, s[:i]...)
		if i == len(s) {
			break
		}
		dst = appendEscape(dst, s[i])
		s = s[i+1:]
	}
	return append(dst, '"')
}

// quoteBytes returns a mask with the high bit set of each byte of w that
// appendQuoted must escape: '"', '\\' and control characters. Each byte is
// tested on its own (no carries cross bytes), so every set bit is exact.
func quoteBytes(w uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		low7  = 0x7f7f7f7f7f7f7f7f
		highs = 0x8080808080808080
	)
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	return (^((q & low7) + low7 | q) | ^((b & low7) + low7 | b) | ^((w & low7) + ones*0x60 | w)) & highs
}

// appendEscape appends the JSON escape of the byte c, which is '"', '\\'
// or a control character.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// escapedLen is the number of bytes appendEscape writes for c, or 1 when c
// needs no escape.
func escapedLen(c byte) int {
	switch {
	case quoteSafe[c]:
		return 1
	case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
		return 2
	}
	return 6
}

// quotedLen is the length of the JSON string appendQuoted writes for s.
func quotedLen(s []byte) int {
	n := 2
	for _, c := range s {
		n += escapedLen(c)
	}
	return n
}

// decodeEscape decodes the escape at raw[i] (a backslash) of a validated
// JSON string and returns the rune and the escape's length in raw. A lone
// UTF-16 surrogate decodes to U+FFFD, as in encoding/json.
func decodeEscape(raw []byte, i int) (rune, int) {
	switch raw[i+1] {
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'u':
		r := hex4(raw[i+2 : i+6])
		if !utf16.IsSurrogate(r) {
			return r, 6
		}
		if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			if r2 := utf16.DecodeRune(r, hex4(raw[i+8:i+12])); r2 != utf8.RuneError {
				return r2, 12
			}
		}
		return utf8.RuneError, 6
	}
	return rune(raw[i+1]), 2 // '"', '\\', '/'
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// appendUnescaped appends the content of the validated JSON string raw
// (quotes included) to dst.
func appendUnescaped(dst, raw []byte) []byte {
	raw = raw[1 : len(raw)-1]
	for len(raw) > 0 {
		i := 0
		for i < len(raw) && raw[i] != '\\' {
			i++
		}
		dst = append(dst, raw[:i]...)
		if i == len(raw) {
			break
		}
		r, n := decodeEscape(raw, i)
		dst = utf8.AppendRune(dst, r)
		raw = raw[i+n:]
	}
	return dst
}

// stringStats returns the decoded byte length and the line count of the
// validated JSON string raw (quotes included), without decoding it.
func stringStats(raw []byte) (n, lines int) {
	raw = raw[1 : len(raw)-1]
	endsInNewline := false
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			n++
			i++
			endsInNewline = false
			continue
		}
		r, k := decodeEscape(raw, i)
		n += utf8.RuneLen(r)
		i += k
		endsInNewline = r == '\n'
		if endsInNewline {
			lines++
		}
	}
	if n > 0 && !endsInNewline {
		lines++
	}
	return n, lines
}

// keyEquals reports whether the validated quoted JSON string raw decodes to s.
func keyEquals(raw []byte, s string) bool {
	body := raw[1 : len(raw)-1]
	plain := true
	for _, c := range body {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(body) == s
	}
	if len(body) < len(s) { // escapes only ever shrink when decoded
		return false
	}
	return string(appendUnescaped(nil, raw)) == s
}
