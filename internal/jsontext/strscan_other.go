//go:build !amd64 || purego

package jsontext

// haveStringBlocks says whether the machine runs stringBlocks: only amd64
// with AVX2 has the kernel.
const haveStringBlocks = false

// stringBlocks is never called here: it vouches for no byte.
func stringBlocks(b []byte) (n int, closed bool, carry uint64) { return 0, false, 0 }

// unquoteBlocks is never called here: it decodes nothing.
func unquoteBlocks(out, raw []byte) (i, n int) { return 0, 0 }
