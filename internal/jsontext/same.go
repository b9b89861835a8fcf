package jsontext

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// SameJSON reports whether b is the valid JSON value a again, white space
// outside strings aside: whether b is valid JSON and json.Compact would
// turn both into the same bytes. It reads each at most once and allocates
// nothing; a must be valid JSON, b may be anything.
func SameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	return sameCompact(&source{b: a}, &source{b: b})
}

// SameJSONString is SameJSON(v, the text of s) for the valid JSON value v
// and the valid JSON string s (quotes included), without decoding s into
// memory: it tells whether a string holds a value's JSON again, as MCP
// servers send a tool's structured content beside it as text.
func SameJSONString(v, s []byte) bool {
	body := s[1 : len(s)-1]
	if len(body) >= samePiece {
		if equalPieces(v, body, samePiece) {
			return true
		}
	} else if equalDecoded(v, body) {
		return true
	}
	return sameCompact(&source{b: v}, &source{b: body, escaped: true})
}

// equalDecoded reports whether the decoding of the body of a valid JSON
// string is exactly v. It compares eight bytes at a time up to the next
// escape, and decodes escapes in place: JSON held in a string has an
// escaped quote every few bytes.
func equalDecoded(v, body []byte) bool {
	i, j := 0, 0 // in body, in v
	for {
		for i+8 <= len(body) && j+8 <= len(v) {
			bw := binary.LittleEndian.Uint64(body[i:])
			vw := binary.LittleEndian.Uint64(v[j:])
			m := byteMask(bw, '\\')
			if m == 0 {
				if bw != vw {
					return false
				}
				i, j = i+8, j+8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3 // bytes before the backslash
			if (bw^vw)&(1<<(8*k)-1) != 0 {
				return false
			}
			i, j = i+k, j+k
			// A two-byte escape is compared here, without leaving the
			// loop; a \u escape is for the decoding below.
			if c, short := shortEscape(body[i+1]); short {
				if v[j] != c {
					return false
				}
				i, j = i+2, j+1
				continue
			}
			break
		}
		if i >= len(body) {
			return j == len(v)
		}
		c := body[i]
		if c == '\\' {
			var short bool
			if c, short = shortEscape(body[i+1]); !short {
				r, n := DecodeEscape(body, i)
				var buf [utf8.UTFMax]byte
				w := utf8.EncodeRune(buf[:], r)
				if len(v)-j < w || string(v[j:j+w]) != string(buf[:w]) {
					return false
				}
				i, j = i+n, j+w
				continue
			}
			i++ // the backslash; the escaped byte is passed below
		}
		if j >= len(v) || v[j] != c {
			return false
		}
		i, j = i+1, j+1
	}
}

// samePiece is how much of a long string SameJSONString decodes at a
// time, into a buffer that stays in the processor's cache, to compare it
// with the value: the decoder takes JSON held in a string a block of 64
// bytes at a time (block.go), faster than equalDecoded's walk from one
// escape to the next, and the comparison of the decoding costs little.
const samePiece = 16 << 10

// equalPieces is equalDecoded, decoding body about every bytes at a time
// and comparing each piece's decoding with the value; it stops at the
// first piece that differs.
func equalPieces(v, body []byte, every int) bool {
	j := 0 // in v
	return decodePieces(body, every, make([]byte, 0, every+16), func(dec []byte, _ int) bool {
		if len(v)-j < len(dec) || !bytes.Equal(v[j:j+len(dec)], dec) {
			return false
		}
		j += len(dec)
		return true
	}) && j == len(v)
}

// byteMask returns a mask whose lowest set bit is the high bit of the first
// byte of w (in memory order) equal to c, and 0 when there is none. Bits
// above the lowest may be spurious (borrows), so only the lowest is used.
func byteMask(w uint64, c byte) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	x := w ^ ones*uint64(c)
	return (x - ones) &^ x & highs
}

// A source yields the bytes of a JSON text one at a time: of b itself, or,
// when escaped, of the decoding of b, the body of a JSON string.
type source struct {
	b       []byte
	i       int
	escaped bool
	pend    [utf8.UTFMax]byte // the rest of a decoded escape
	np, ip  int
}

// next returns the next byte, and false at the end.
func (s *source) next() (byte, bool) {
	if s.ip < s.np {
		s.ip++
		return s.pend[s.ip-1], true
	}
	if s.i >= len(s.b) {
		return 0, false
	}
	c := s.b[s.i]
	if !s.escaped || c != '\\' {
		s.i++
		return c, true
	}
	r, n := DecodeEscape(s.b, s.i)
	s.i += n
	s.np, s.ip = utf8.EncodeRune(s.pend[:], r), 1
	return s.pend[0], true
}

// sameCompact compares a, valid JSON, with b byte by byte, dropping white
// space outside strings from both. Both are read with the same string
// state, which is right as long as what was read so far is equal. White
// space in b is dropped only next to a structural character, a quote or
// an end, where valid JSON can have it, so that b matches only if it is
// valid too ("tr ue" and "1 2" do not match "true" and "12").
func sameCompact(a, b *source) bool {
	inString, escaped := false, false
	var last byte // the last byte compared, 0 at the start
	for {
		ca, oka := a.next()
		for oka && !inString && IsSpace(ca) {
			ca, oka = a.next()
		}
		cb, okb := b.next()
		if !inString && okb && IsSpace(cb) {
			for okb && IsSpace(cb) {
				cb, okb = b.next()
			}
			if !structural(last) && okb && !structural(cb) {
				return false
			}
		}
		if oka != okb || ca != cb {
			return false
		}
		if !oka {
			return true
		}
		switch {
		case escaped:
			escaped = false
		case inString && ca == '\\':
			escaped = true
		case ca == '"':
			inString = !inString
		}
		last = ca
	}
}

// structural reports whether c may stand next to white space in valid
// JSON: a bracket, a comma, a colon, a quote, or the start (0).
func structural(c byte) bool {
	switch c {
	case 0, '{', '}', '[', ']', ',', ':', '"':
		return true
	}
	return false
}
