//go:build !purego

package jsontext

import "golang.org/x/sys/cpu"

// haveStringBlocks says whether the machine runs stringBlocks and
// unquoteBlocks.
var haveStringBlocks = cpu.X86.HasAVX2

// stringBlocks validates the body of a string that goes on at b[0] (not
// inside an escape nor a character) 64 bytes at a time and returns, when
// the string ends and all of it is valid, the index after its closing
// quote with closed true. Otherwise it returns the start n of the first
// block that holds anything invalid (a control character, a bad escape or
// \u digit, invalid UTF-8), or after the last whole block of b, and carry:
// bit 0 set when b[n] is escaped (by the backslash b[n-1]), bits 1-4 set
// for the bytes from b[n] that must be the digits of a \u escape begun
// before n (from 1 to 4 of them). All of b[:n] is valid in a string body
// but a character that starts in its last three bytes, which may run on
// past n or miss its continuation bytes. It reads no byte past b.
func stringBlocks(b []byte) (n int, closed bool, carry uint64) {
	if haveAVX512 {
		return stringBlocksAVX512(b)
	}
	return stringBlocksAVX2(b)
}

//go:noescape
func stringBlocksAVX2(b []byte) (n int, closed bool, carry uint64)

//go:noescape
func stringBlocksAVX512(b []byte) (n int, closed bool, carry uint64)

// unquoteBlocks decodes the body of a valid JSON string, raw (not inside
// an escape), into out, 64 bytes at a time, and returns how far it went in
// each: up to the first block that holds a \u escape, or up to where fewer
// than 128 bytes of raw are left (it stops not inside an escape, and
// decodes all of raw[:i] into out[:n]). out must be at least as long as
// raw, and is written up to 64 bytes past n.
func unquoteBlocks(out, raw []byte) (i, n int) {
	_ = out[:len(raw)]
	if haveAVX512 {
		return unquoteBlocksAVX512(out, raw)
	}
	return unquoteBlocksAVX2(out, raw)
}

// haveAVX512 says whether the machine runs stringBlocksAVX512 and
// unquoteBlocksAVX512.
var haveAVX512 = cpu.X86.HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasPOPCNT

//go:noescape
func unquoteBlocksAVX2(out, raw []byte) (i, n int)

//go:noescape
func unquoteBlocksAVX512(out, raw []byte) (i, n int)
