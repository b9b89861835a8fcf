//go:build !amd64 || purego

package jsontext

// unquoteKernels are the kernels of unquoteBlocks the machine runs: none.
var unquoteKernels []func(out, raw []byte) (int, int)

// scanKernels are the kernels of stringBlocks the machine runs: none.
var scanKernels []func(b []byte) (int, bool, uint64)
