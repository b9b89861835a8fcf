package jsontext

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// This file looks at a long JSON string 64 bytes at a time, as simdjson
// does with vector registers, here with eight words and bit tricks: a mask
// of one bit per byte for each kind of byte, and the escaped bytes found
// from the backslashes with one subtraction. JSON text held in a string has an
// escaped quote every few bytes; a loop that leaves its fast path at each
// escape is bound by the latency from one escape to the next, where a
// block of masks has no such chain.

// blockLen is the number of bytes a block covers: one bit each in a mask.
const blockLen = 64

const (
	ones    = 0x0101010101010101
	low7    = 0x7f7f7f7f7f7f7f7f
	highs   = 0x8080808080808080
	oddBits = 0xaaaaaaaaaaaaaaaa
)

// gatherHighs multiplies the high bits of a word's bytes into its top
// byte, byte k's as bit 56+k: no two products meet, so no carry disturbs
// them.
const gatherHighs = 0x0002040810204081

// asciiEq returns the bytes of w, all ASCII, that are the byte of c (c is
// ones times it) as eight bits, byte k's as bit k. t+low7 carries into the
// high bit of a byte unless the byte is c, and no carry leaves a byte.
func asciiEq(w, c uint64) uint64 {
	t := w ^ c
	return (^(t + low7 | t) & highs * gatherHighs) >> 56
}

// escapes returns, of a block whose first byte is not escaped, the
// backslashes that start an escape and the bytes they escape (the byte
// after each; one past the block is dropped), given its backslashes. A
// backslash starts an escape when an even number of backslashes precede
// it in its run. Subtracting the run from the bits above it borrows
// through the run, to an even or odd bit by its length (simdjson's trick).
func escapes(slashes uint64) (starts, escaped uint64) {
	code := ((slashes<<1 | oddBits) - slashes) ^ oddBits
	return code & slashes, code &^ slashes
}

// blockMasks returns the quotes and backslashes of the 64 bytes of b as
// masks (bit k for b[k]), and false when any of them is a control
// character or not ASCII (then the masks are not computed exactly).
func blockMasks(b []byte) (quotes, slashes uint64, ok bool) {
	b = b[:blockLen]
	q0, s0, o0 := scanWord(binary.LittleEndian.Uint64(b[0:]))
	q1, s1, o1 := scanWord(binary.LittleEndian.Uint64(b[8:]))
	q2, s2, o2 := scanWord(binary.LittleEndian.Uint64(b[16:]))
	q3, s3, o3 := scanWord(binary.LittleEndian.Uint64(b[24:]))
	q4, s4, o4 := scanWord(binary.LittleEndian.Uint64(b[32:]))
	q5, s5, o5 := scanWord(binary.LittleEndian.Uint64(b[40:]))
	q6, s6, o6 := scanWord(binary.LittleEndian.Uint64(b[48:]))
	q7, s7, o7 := scanWord(binary.LittleEndian.Uint64(b[56:]))
	quotes = q0 | q1<<8 | q2<<16 | q3<<24 | q4<<32 | q5<<40 | q6<<48 | q7<<56
	slashes = s0 | s1<<8 | s2<<16 | s3<<24 | s4<<32 | s5<<40 | s6<<48 | s7<<56
	return quotes, slashes, (o0|o1|o2|o3|o4|o5|o6|o7)&highs == 0
}

// scanWord returns the quotes and backslashes of w, if all ASCII, as
// eight bits each, byte k's as bit k, and a word whose high bits are all
// clear only when no byte of w is a control character or not ASCII: a
// byte below 0x20 borrows into its high bit, and a byte borrowed from is
// below 0x20 itself.
func scanWord(w uint64) (quotes, slashes, odd uint64) {
	return asciiEq(w, ones*'"'), asciiEq(w, ones*'\\'), w | (w - ones*0x20)
}

// scanBlocks validates the string body from d[i], not inside an escape, a
// block of 64 bytes at a time, and returns the index after the closing
// quote; or 0 and the index, not inside an escape, of the block that needs
// a closer look (a \u escape past the block, a bad escape, a control
// character or invalid UTF-8), or after a block with fewer than
// denseEscapes escapes, or from which fewer than blockLen bytes are left.
func scanBlocks(d []byte, i int) (end, j int) {
	for i+blockLen <= len(d) {
		b := d[i : i+blockLen]
		quotes, slashes, ascii := blockMasks(b)
		var ctrl uint64
		if !ascii {
			quotes, slashes, ctrl = exactMasks(b)
		}
		starts, escaped := escapes(slashes)
		// The block is passed up to the closing quote, or whole but for a
		// backslash that starts an escape at its end: the next block
		// starts there.
		n := blockLen - int(starts>>63)
		valid := uint64(1)<<n - 1
		ends := quotes &^ escaped
		if ends != 0 {
			n = bits.TrailingZeros64(ends)
			valid = uint64(1)<<n - 1
		}
		// Every escaped byte must make an escape; '"' and '\\' do (the
		// common case: JSON in a string), the others are looked up.
		m := escaped &^ (quotes | slashes) & valid
		for ; m != 0; m &= m - 1 {
			k := bits.TrailingZeros64(m)
			if shortEscapes[b[k]] {
				continue
			}
			if b[k] != 'u' || k+5 > blockLen || !isHex4(b[k+1:k+5]) {
				break
			}
		}
		if m != 0 {
			break
		}
		if !ascii {
			// A control character is for the closer look, which reports
			// it. The bytes that are not ASCII must be valid UTF-8, up to
			// a character that runs past the block, which the next block
			// starts with.
			if ctrl&valid != 0 {
				break
			}
			if ends == 0 {
				n = runeCut(b, n)
			}
			if !utf8.Valid(b[:n]) {
				break
			}
		}
		if ends != 0 {
			return i + n + 1, 0
		}
		i += n
		if bits.OnesCount64(starts) < denseEscapes {
			break
		}
	}
	return 0, i
}

// exactMasks returns the quotes, backslashes and control characters of
// the 64 bytes of b as masks, bit k for b[k], whatever the bytes.
func exactMasks(b []byte) (quotes, slashes, ctrl uint64) {
	b = b[:blockLen]
	for k := 0; k < blockLen; k += 8 {
		w := binary.LittleEndian.Uint64(b[k:])
		quotes |= gatherEq(w, ones*'"') << k
		slashes |= gatherEq(w, ones*'\\') << k
		ctrl |= (^(w&low7 + ones*0x60 | w) & highs * gatherHighs) >> 56 << k
	}
	return quotes, slashes, ctrl
}

// runeCut returns the start of the character of b that starts before n
// and ends past it, or n when there is none.
func runeCut(b []byte, n int) int {
	for k := n - 1; k >= n-utf8.UTFMax+1; k-- {
		if c := b[k]; c < utf8.RuneSelf {
			return n
		} else if utf8.RuneStart(c) {
			if utf8.FullRune(b[k:n]) {
				return n
			}
			return k
		}
	}
	return n
}

// blockWait is how far scanString looks at a string a word at a time
// before it may take it a block at a time, and again after a block that
// needed a closer look; blockMiss is how far when that was the first
// block it tried.
const (
	blockWait = blockLen
	blockMiss = 4 * blockLen
)

// denseEscapes is the number of escapes in about blockLen bytes from which
// scanString, appendUnquotedBody and SkipString take a string a block at a
// time, and below which a block sends them back to their loops: where
// escapes are sparser (text with a newline or a quoted word now and then),
// a loop that leaves its fast path at each escape, or a search for the
// next one, is faster than building a block's masks.
const denseEscapes = 4

// slashMask returns the backslashes of the 64 bytes of b as a mask, bit k
// for b[k], whatever the bytes.
func slashMask(b []byte) uint64 { return eqMask(b, ones*'\\') }

// quoteMask returns the quotes of the 64 bytes of b as a mask, bit k for
// b[k], whatever the bytes.
func quoteMask(b []byte) uint64 { return eqMask(b, ones*'"') }

// eqMask returns the bytes of the 64 bytes of b that are the byte of c (c
// is ones times it) as a mask, bit k for b[k], whatever the bytes.
func eqMask(b []byte, c uint64) uint64 {
	b = b[:blockLen]
	return gatherEq(binary.LittleEndian.Uint64(b[0:]), c) |
		gatherEq(binary.LittleEndian.Uint64(b[8:]), c)<<8 |
		gatherEq(binary.LittleEndian.Uint64(b[16:]), c)<<16 |
		gatherEq(binary.LittleEndian.Uint64(b[24:]), c)<<24 |
		gatherEq(binary.LittleEndian.Uint64(b[32:]), c)<<32 |
		gatherEq(binary.LittleEndian.Uint64(b[40:]), c)<<40 |
		gatherEq(binary.LittleEndian.Uint64(b[48:]), c)<<48 |
		gatherEq(binary.LittleEndian.Uint64(b[56:]), c)<<56
}

// gatherEq returns the bytes of w that are the byte of c (c is ones times
// it) as eight bits, byte k's as bit k, whatever the bytes.
func gatherEq(w, c uint64) uint64 { return (eqHighs(w, c) * gatherHighs) >> 56 }

// unescapes is the byte each two-byte escape stands for, by its second
// byte ('n' for "\n").
var unescapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// decodeBlocks decodes the body of a valid JSON string raw from i, not
// inside an escape, into out from n, a block of 64 bytes at a time: the
// runs between the escapes of a block, found from its mask of
// backslashes, are copied two words at a time, with no search for the
// next escape. It returns where it stopped in raw and in out: after a
// block with fewer than denseEscapes escapes (runs long enough for the
// caller's loop, which leaves it at each escape), or where fewer than
// blockLen+16 bytes are left. out must have room for the decoding of all
// of raw, at n-i past the decoding's start (decoding never lengthens), and
// may be written up to that.
func decodeBlocks(out, raw []byte, i, n int) (int, int) {
	for i+blockLen+16 <= len(raw) {
		b := (*[blockLen + 16]byte)(raw[i:])
		starts, _ := escapes(slashMask(b[:blockLen]))
		escs := bits.OnesCount64(starts)
		from := 0 // the block's bytes before it are decoded (an escape may end past it)
		for starts != 0 {
			k := bits.TrailingZeros64(starts)
			n = copyRun(out, n, b[from:], k-from)
			if c := b[k+1]; c != 'u' {
				out[n] = unescapes[c]
				n, from = n+1, k+2
				starts &= starts - 1
				continue
			}
			r, w := DecodeEscape(b[:], k) // a pair ends within the block's 16 bytes more
			n += utf8.EncodeRune(out[n:], r)
			from = k + w
			starts &= ^uint64(0) << from // none inside the escape
		}
		// The rest of the block, if any, without a branch on it (which the
		// varying length of the last run would mispredict).
		r := min(from, blockLen)
		n = copyRun(out, n, b[r:], blockLen-r)
		i += max(from, blockLen)
		if escs < denseEscapes {
			break
		}
	}
	return i, n
}

// copyRun copies the l bytes at the start of run to out at n, two words
// at a time, and returns n+l. It reads and writes up to 15 bytes past
// them.
func copyRun(out []byte, n int, run []byte, l int) int {
	o, r := (*[16]byte)(out[n:]), (*[16]byte)(run)
	binary.LittleEndian.PutUint64(o[:8], binary.LittleEndian.Uint64(r[:8]))
	binary.LittleEndian.PutUint64(o[8:], binary.LittleEndian.Uint64(r[8:]))
	for k := 16; k < l; k += 8 {
		binary.LittleEndian.PutUint64(out[n+k:], binary.LittleEndian.Uint64(run[k:]))
	}
	return n + l
}

// skipBlocks returns the index after the closing quote of the valid
// string whose body goes on at d[i], not inside an escape, looking at it a
// block of 64 bytes at a time; or 0 and the index from which a block holds
// no quote (a run a search for the next quote takes faster), or fewer than
// blockLen bytes are left.
func skipBlocks(d []byte, i int) (end, j int) {
	for i+blockLen <= len(d) {
		b := d[i : i+blockLen]
		quotes, slashes := quoteMask(b), slashMask(b)
		if quotes == 0 {
			break
		}
		starts, escaped := escapes(slashes)
		if ends := quotes &^ escaped; ends != 0 {
			return i + bits.TrailingZeros64(ends) + 1, 0
		}
		i += blockLen - int(starts>>63)
	}
	return 0, i
}

// eqHighs returns the high bit of each byte of w that is the byte of c (c
// is ones times it), whatever the bytes: no carry crosses a byte.
func eqHighs(w, c uint64) uint64 {
	t := w ^ c
	return ^((t&low7 + low7) | t | low7)
}
