//go:build !purego

package jsontext

// scanKernels are the kernels of stringBlocks the machine runs, for tests
// to hold each to the contract.
var scanKernels = func() (ks []func(b []byte) (int, bool, uint64)) {
	if haveStringBlocks {
		ks = append(ks, stringBlocksAVX2)
	}
	if haveAVX512 {
		ks = append(ks, stringBlocksAVX512)
	}
	return ks
}()

// unquoteKernels are the kernels of unquoteBlocks the machine runs, for
// tests to hold each to the contract.
var unquoteKernels = func() (ks []func(out, raw []byte) (int, int)) {
	if haveStringBlocks {
		ks = append(ks, unquoteBlocksAVX2)
	}
	if haveAVX512 {
		ks = append(ks, unquoteBlocksAVX512)
	}
	return ks
}()
