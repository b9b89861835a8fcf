package jsontext

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the JSON string codec: quoting text as a JSON string
// without decoding it twice, and decoding valid JSON strings, whole or a
// window at a time.

const hexDigits = "0123456789abcdef"

// escLen is the number of bytes AppendQuote writes for a byte: 1 for a
// byte it copies (bytes at or above 0x80 included: the text is valid
// UTF-8), 2 for '"', '\\' and the control characters with a short escape,
// 6 for the other control characters ("\u0001").
var escLen = func() (t [256]uint8) {
	for c := range 256 {
		t[c] = 1
	}
	for c := range 0x20 {
		t[c] = 6
	}
	for _, c := range []byte{'"', '\\', '\n', '\r', '\t', '\b', '\f'} {
		t[c] = 2
	}
	return t
}()

// AppendValidUTF8 appends b to dst with each byte that begins no valid
// UTF-8 sequence replaced by U+FFFD, as encoding/json decodes the bytes
// of a JSON string (and as ranging over a Go string reads them): a
// sequence cut short, an overlong encoding, an encoded surrogate, a code
// point past U+10FFFF and a stray continuation byte each become one U+FFFD
// per byte. Valid UTF-8 (an encoded U+FFFD included) is copied as it is.
// JSON text must be UTF-8, and the escapes of a JSON string are ASCII, so
// applied to a whole JSON document that encoding/json accepts it makes
// one this package accepts, whose strings decode as encoding/json decodes
// the original's.
func AppendValidUTF8(dst, b []byte) []byte {
	for len(b) > 0 {
		i := validPrefix(b)
		dst = append(dst, b[:i]...)
		if i == len(b) {
			break
		}
		dst = append(dst, "\uFFFD"...)
		b = b[i+1:]
	}
	return dst
}

// validPrefix returns the length of the longest prefix of b that is valid
// UTF-8, eight ASCII bytes at a time.
func validPrefix(b []byte) int {
	i := 0
	for i < len(b) {
		if i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 == 0 {
			i += 8
			continue
		}
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return i
}

// EscapedLen returns the number of bytes AppendQuote writes for the byte c
// of valid UTF-8 text: 1 when c needs no escape.
func EscapedLen(c byte) int { return int(escLen[c]) }

// AppendQuote appends s, which must be valid UTF-8, as a JSON string.
// Unlike encoding/json it does not escape <, > and &, so a tool receives
// the text a person would expect to see. It looks at eight bytes at a
// time.
func AppendQuote(dst []byte, s []byte) []byte {
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
		for i < len(s) && escLen[s[i]] == 1 {
			i++
		}
		dst = append(dst, s[:i]...)
		if i == len(s) {
			break
		}
		dst = AppendEscape(dst, s[i])
		s = s[i+1:]
	}
	return append(dst, '"')
}

// QuotedLen returns len(AppendQuote(nil, s)) without writing it, eight
// bytes at a time: each '"' and '\\' adds one byte, each control
// character one or five.
func QuotedLen(s []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		low7  = 0x7f7f7f7f7f7f7f7f
	)
	n := len(s) + 2
	for len(s) >= 8 {
		w := binary.LittleEndian.Uint64(s)
		s = s[8:]
		// Exact byte-wise tests (no carry crosses a byte): the high bit of
		// a byte of qb is set where w holds '"' or '\\', of ctrl where it
		// holds a byte below 0x20.
		q := w ^ (ones * '"')
		b := w ^ (ones * '\\')
		qb := ^((q & low7) + low7 | q) | ^((b & low7) + low7 | b)
		ctrl := ^((w & low7) + ones*0x60 | w) & highs
		n += bits.OnesCount64(qb & highs)
		for ctrl != 0 {
			n += int(escLen[byte(w>>(bits.TrailingZeros64(ctrl)&^7))]) - 1
			ctrl &= ctrl - 1
		}
	}
	for _, c := range s {
		n += int(escLen[c]) - 1
	}
	return n
}

// quoteBytes returns a mask with the high bit set of each byte of w that
// AppendQuote must escape: '"', '\\' and control characters. Each byte is
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

// AppendEscape appends the JSON escape of the byte c, which is '"', '\\'
// or a control character; any other ASCII byte it writes as \u00XX, as
// encoding/json escapes '<', '>' and '&'.
func AppendEscape(dst []byte, c byte) []byte {
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

// DecodeEscape decodes the escape at raw[i] (a backslash) of a valid JSON
// string and returns the rune and the escape's length in raw. A lone
// UTF-16 surrogate decodes to U+FFFD, as in encoding/json.
func DecodeEscape(raw []byte, i int) (rune, int) {
	if c, ok := shortEscape(raw[i+1]); ok {
		return rune(c), 2
	}
	r := hex4(raw[i+2 : i+6]) // \u
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

// shortEscape returns the byte that the two-byte escape whose second byte
// is c stands for (c is 'n' for "\n"), and false for a \u escape. The
// decoders here take these in place: JSON held in a string has an escaped
// quote every few bytes.
func shortEscape(c byte) (byte, bool) {
	switch c {
	case 'n':
		return '\n', true
	case 't':
		return '\t', true
	case 'r':
		return '\r', true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'u':
		return 0, false
	}
	return c, true // '"', '\\', '/'
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

// AppendUnquoted appends the decoding of the valid JSON string raw
// (quotes included) to dst. When dst has less room than len(raw) bytes
// (the most a decoding takes), it is grown by that much at once. dst must
// not overlap raw: its room past the decoding, up to len(raw) bytes, may
// be written.
func AppendUnquoted(dst, raw []byte) []byte {
	return appendUnquotedBody(dst, raw[1:len(raw)-1])
}

// appendUnquotedBody appends the decoding of raw, the body of a valid JSON
// string or a piece of it that ends neither inside an escape nor between
// the two escapes of a surrogate pair.
func appendUnquotedBody(dst, raw []byte) []byte {
	// A decoding is never longer than its JSON (an escape of 6 bytes
	// decodes to at most 3, a pair of 12 to 4), so dst is grown once, by
	// len(raw), and written by index: JSON text in a string has an escape
	// every few bytes, and an append and a search per run between them
	// decoded it at a tenth of the speed of a copy.
	n := len(dst)
	dst = slices.Grow(dst, len(raw))
	out := dst[:cap(dst)]
	i, short := 0, true
	dense := 0 // short runs in a row
	// The kernel (strscan.go) takes the string from kmark on, and again a
	// block after where it stopped (a \u escape).
	kmark := 0
	if !useStringBlocks {
		kmark = math.MaxInt
	}
	for {
		if i >= kmark && len(raw)-i >= 2*blockLen {
			di, dn := unquoteBlocks(out[n:], raw[i:])
			i, n, kmark = i+di, n+dn, i+di+blockLen
		}
		// Up to the next backslash. Between escapes a few bytes apart (JSON
		// text in a string), 8 bytes at a time: a word is stored whole, and
		// n moved only past the bytes before its first backslash (n+8 <=
		// cap: n-len(dst) <= i, as decoding never lengthens), and the
		// lowest mark of byteMask is exact. After a long run (plain text),
		// by the library's search and copy, faster at length.
		from := i
		if short {
			if dense++; dense > denseEscapes {
				// Escapes a few bytes apart (JSON text in a string): a
				// block of 64 bytes at a time, while they last.
				i, n = decodeBlocks(out, raw, i, n)
				from, dense = i, 0
			}
			for i+8 <= len(raw) {
				if i-from >= shortRun {
					short, dense = false, 0 // a long run after all: searched below
					break
				}
				w := binary.LittleEndian.Uint64(raw[i:])
				binary.LittleEndian.PutUint64(out[n:], w)
				if m := byteMask(w, '\\'); m != 0 {
					k := bits.TrailingZeros64(m) >> 3
					i, n = i+k, n+k
					break
				}
				i, n = i+8, n+8
			}
		}
		if !short {
			k := bytes.IndexByte(raw[i:], '\\')
			if k < 0 {
				k = len(raw) - i
			}
			copy(out[n:], raw[i:i+k])
			i, n = i+k, n+k
		}
		short = i-from < shortRun
		for i < len(raw) && raw[i] != '\\' {
			out[n] = raw[i]
			i, n = i+1, n+1
		}
		if i == len(raw) {
			return dst[:n]
		}
		if c, ok := shortEscape(raw[i+1]); ok {
			out[n] = c
			i, n = i+2, n+1
			continue
		}
		r, w := DecodeEscape(raw, i)
		n += utf8.EncodeRune(out[n:], r)
		i += w
	}
}

// shortRun is the length of a run between escapes below which the next is
// decoded a word at a time (see appendUnquotedBody).
const shortRun = 32

// EachUnquotedPiece decodes the valid JSON string raw (quotes included) a
// piece at a time, for a string too long to decode whole at once: it calls
// fn with the decoding of each piece, in buf (grown as needed, and written
// again after fn returns), and the piece of raw it came from. The pieces,
// in order, are the whole of raw, quotes included; each is of about every
// bytes (the last may be shorter, and one is longer when it would end
// inside an escape or between the two escapes of a surrogate pair).
func EachUnquotedPiece(raw []byte, every int, buf []byte, fn func(dec, piece []byte)) {
	body := raw[1 : len(raw)-1]
	from := 0 // in raw: where the next piece starts
	decodePieces(body, every, buf, func(dec []byte, cut int) bool {
		end := cut + 1 // in raw
		if cut == len(body) {
			end = len(raw)
		}
		fn(dec, raw[from:end])
		from = end
		return true
	})
	if from < len(raw) { // the empty string
		fn(buf[:0], raw[from:])
	}
}

// decodePieces decodes the body of a valid JSON string about every bytes
// at a time, into buf (grown as needed), calling fn with each piece's
// decoding and the index in body where the piece ends (see pieceEnd),
// until fn returns false; it reports whether fn never did.
func decodePieces(body []byte, every int, buf []byte, fn func(dec []byte, cut int) bool) bool {
	every = max(every, 1)
	for i := 0; i < len(body); {
		cut := pieceEnd(body, i, min(len(body), i+every))
		buf = appendUnquotedBody(buf[:0], body[i:cut])
		if !fn(buf, cut) {
			return false
		}
		i = cut
	}
	return true
}

// pieceEnd returns the first index at or after i in the valid JSON string
// body at which a piece of it that starts at from (not inside an escape)
// may end: not inside an escape, nor right after the escape of a high
// surrogate, which pairs with the escape after it. It reads nothing before
// from: a caller may have freed it, and a long run of backslashes is not
// counted again for every piece.
func pieceEnd(body []byte, from, i int) int {
	i = escapeBoundaryFrom(body, from, i)
	for i < len(body) && i-6 >= from && body[i-6] == '\\' && body[i-5] == 'u' && escapeStartFrom(body, from, i-6) {
		if r := hex4(body[i-4 : i]); r < 0xD800 || r >= 0xDC00 {
			break
		}
		i = escapeBoundaryFrom(body, from, i+1)
	}
	return i
}

// StringStats returns the byte length and the line count of the decoding
// of the valid JSON string raw (quotes included), without decoding it: a
// line ends at each newline, and text after the last one is a line too.
func StringStats(raw []byte) (n, lines int) {
	body := raw[1 : len(raw)-1]
	endsInNewline := false
	for i := 0; i < len(body); {
		j := bytes.IndexByte(body[i:], '\\')
		if j < 0 {
			n += len(body) - i
			endsInNewline = false
			break
		}
		n += j
		r, k := DecodeEscape(body, i+j)
		n += utf8.RuneLen(r)
		i += j + k
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

// KeyEquals reports whether the valid JSON string raw (quotes included)
// decodes to s. It decodes raw only as far as it agrees with s, without
// allocating: however long raw is, it reads at most 6 bytes of it per byte
// of s (\u0041 decodes to one byte), and one escape more.
func KeyEquals(raw []byte, s string) bool {
	b := raw[1 : len(raw)-1]
	switch {
	case len(b) < len(s): // an escape decodes to fewer bytes than it takes
		return false
	case len(b) == len(s): // so b matches only if it has none
		return string(b) == s && strings.IndexByte(s, '\\') < 0
	}
	var buf [utf8.UTFMax]byte
	j := 0
	for i := 0; i < len(b); {
		if j == len(s) {
			return false
		}
		if b[i] != '\\' {
			if b[i] != s[j] {
				return false
			}
			i, j = i+1, j+1
			continue
		}
		r, n := DecodeEscape(b, i)
		m := utf8.EncodeRune(buf[:], r)
		if m > len(s)-j || string(buf[:m]) != s[j:j+m] {
			return false
		}
		i, j = i+n, j+m
	}
	return j == len(s)
}

// StringSeek returns the first character boundary pos ≥ off of the
// decoding of the valid JSON string body b (without its quotes), and the
// index in b of the character that starts there. off must be less than
// the decoded length.
func StringSeek(b []byte, off int) (pos, at int) {
	for at < len(b) && pos < off {
		j := bytes.IndexByte(b[at:], '\\')
		if j < 0 {
			j = len(b) - at
		}
		if pos+j >= off { // off falls in this run of plain bytes
			at += off - pos
			pos = off
			for k := 0; k < utf8.UTFMax-1 && at < len(b) && !utf8.RuneStart(b[at]); k++ {
				at++
				pos++
			}
			return pos, at
		}
		pos += j
		at += j
		r, k := DecodeEscape(b, at)
		pos += utf8.RuneLen(r)
		at += k
	}
	return pos, at
}

// AppendStringWindow appends to dst the longest run of whole characters,
// at most budget bytes, of the decoding of the valid JSON string body b
// (without its quotes) from index at, a character start. Its cost is
// proportional to budget.
func AppendStringWindow(dst, b []byte, at, budget int) []byte {
	room := budget
	for at < len(b) && room > 0 {
		// Look one character past room, so HeadCut sees the whole character
		// that straddles it.
		run := b[at:min(len(b), at+room+utf8.UTFMax)]
		j := bytes.IndexByte(run, '\\')
		if j < 0 {
			j = len(run)
		}
		if j > 0 {
			n := HeadCut(run[:j], room)
			dst = append(dst, run[:n]...)
			if n < j {
				return dst
			}
			room -= n
			at += n
			continue
		}
		r, k := DecodeEscape(b, at)
		if utf8.RuneLen(r) > room {
			return dst
		}
		dst = utf8.AppendRune(dst, r)
		room -= utf8.RuneLen(r)
		at += k
	}
	return dst
}

// StringHead returns the first characters of the decoding of the valid
// JSON string raw (quotes included), as many whole characters as fit in n
// bytes. Its cost is proportional to n, not to the string.
func StringHead(raw []byte, n int) []byte {
	body := raw[1 : len(raw)-1]
	return AppendStringWindow(make([]byte, 0, min(n, len(body))), body, 0, n)
}

// StringTail returns the last characters of the decoding of the valid JSON
// string raw (quotes included), as many whole characters as fit in n
// bytes. Its cost is proportional to n, not to the string: it decodes from
// an escape boundary found a little before the last n·6 raw bytes.
func StringTail(raw []byte, n int) []byte {
	body := raw[1 : len(raw)-1]
	from := escapeBoundary(body, max(0, len(body)-6*n-12))
	dec := AppendUnquoted(make([]byte, 0, len(body)-from), append(append([]byte{'"'}, body[from:]...), '"'))
	if len(dec) <= n {
		return dec
	}
	return dec[TailCut(dec, n):]
}

// escapeBoundary returns the first index at or after i in the valid JSON
// string body that does not fall inside an escape: a backslash starts an
// escape when an even number of backslashes precede it, and "\u" covers
// the four hex digits after it.
func escapeBoundary(body []byte, i int) int { return escapeBoundaryFrom(body, 0, i) }

// escapeBoundaryFrom is escapeBoundary for an i at or after from, an index
// known not to fall inside an escape: it reads nothing of body before from,
// so that a run of backslashes is counted from there, not from its start
// however far back (see EachUnquotedPiece).
func escapeBoundaryFrom(body []byte, from, i int) int {
	for i > from && i < len(body) {
		// Find the escape, if any, that covers i: it starts at most 5
		// bytes before it.
		covered := false
		for s := max(from, i-5); s < i; s++ {
			if body[s] != '\\' || !escapeStartFrom(body, from, s) {
				continue
			}
			end := s + 2
			if body[s+1] == 'u' {
				end = s + 6
			}
			if i < end {
				i, covered = end, true
				break
			}
		}
		if !covered {
			return i
		}
	}
	return i
}

// escapeStart reports whether the backslash body[s] starts an escape:
// whether an even number of backslashes precede it.
func escapeStart(body []byte, s int) bool { return escapeStartFrom(body, 0, s) }

// escapeStartFrom is escapeStart counting the backslashes before s back to
// from at most, an index known not to fall inside an escape.
func escapeStartFrom(body []byte, from, s int) bool {
	n := 0
	for k := s - 1; k >= from && body[k] == '\\'; k-- {
		n++
	}
	return n%2 == 0
}
