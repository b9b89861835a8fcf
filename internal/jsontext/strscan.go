package jsontext

import "math/bits"

// This file hands the body of a long string to a kernel of vector
// instructions where the machine has one (stringBlocks and unquoteBlocks:
// AVX2 on amd64, AVX-512 where it has that too, in strscan_amd64.s; none
// with the purego build tag), which validates it 64 bytes at a time as
// simdjson's string stage does: masks of the quotes, backslashes and control
// characters of a block, the escaped bytes found from the backslashes with
// a carry from block to block, the letters and \u digits of the escapes
// looked up by nibble, and UTF-8 checked with Keiser and Lemire's lookup
// algorithm. scanString's loop stops at every byte that is not ASCII and at
// every escape; the kernel has no such stops, so log text in a string, with
// a name that is not ASCII or an escape on every line, is validated at the
// speed of memory rather than of its stops. unquoteBlocks decodes a valid
// body the same way, a block at a time.
//
// The kernel produces no error. It returns at the first block that holds
// one (or at the last whole block), from where scanString's loop goes on
// and reports it: so Scan's result, its end and its error with its
// offset, is the same with and without the kernel.

// useStringBlocks says whether scanString and appendUnquotedBody hand
// long strings to the kernels; tests turn it off to compare.
var useStringBlocks = haveStringBlocks

// kernelWait is how far scanString's own loop takes a string before it
// hands the rest to the kernel: keys and short values, most strings,
// keep the loop the caller inlines and pay no call.
const kernelWait = 64

// kernelString validates the body of the string that goes on at d[i]
// (i not inside an escape nor a character) with the kernel and returns the
// index after its closing quote; or 0 and the index, not inside an escape
// nor a character, up to which the body is valid and from which
// scanString's loop must go on (to an error in the next 64 bytes, or to an
// end fewer than 64 bytes away).
func kernelString(d []byte, i int) (end, j int) {
	n, closed, carry := stringBlocks(d[i:])
	if closed {
		return i + n, 0
	}
	j = i + n
	switch {
	case carry&1 != 0:
		// The block starts with the byte a backslash escapes.
		return 0, j - 1
	case carry > 1:
		// It starts within the digits of a \u escape: the bits are those
		// of them left, from 1 to 4, so the escape's backslash is 6 bytes
		// before its end.
		return 0, j + bits.Len64(carry>>1) - 6
	}
	// A character that starts in the last three bytes may end past them,
	// or be invalid in a way only the bytes past them show (a lead byte
	// not followed by enough continuation bytes): the loop takes it again.
	for k := j - 1; k >= max(i, j-3); k-- {
		if d[k] >= 0xc0 {
			return 0, k
		}
	}
	return 0, j
}
