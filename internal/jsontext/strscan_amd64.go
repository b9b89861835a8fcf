//go:build !purego

package jsontext

import "golang.org/x/sys/cpu"

// haveStringBlocks says whether the machine runs stringBlocks.
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
	return stringBlocksAVX2(b)
}

//go:noescape
func stringBlocksAVX2(b []byte) (n int, closed bool, carry uint64)
