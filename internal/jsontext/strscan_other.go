//go:build !amd64 || purego

package jsontext

// haveStringBlocks says whether the machine runs stringBlocks: only amd64
// with AVX2 has the kernel.
const haveStringBlocks = false

// stringBlocks is never called here: it vouches for no byte.
func stringBlocks(b []byte) (n int, closed bool, carry uint64) { return 0, false, 0 }

// unquoteBlocks is never called here: it decodes nothing.
func unquoteBlocks(out, raw []byte) (i, n int) { return 0, 0 }

// unquoteKernels are the kernels of unquoteBlocks the machine runs: none.
var unquoteKernels []func(out, raw []byte) (int, int)

// scanKernels are the kernels of stringBlocks the machine runs: none.
var scanKernels []func(b []byte) (int, bool, uint64)
