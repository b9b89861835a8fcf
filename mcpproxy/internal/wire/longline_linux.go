package wire

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapLine returns a private anonymous mapping of size bytes, or nil when
// none can be made (the line is then read into blocks).
func mapLine(size int) []byte {
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	return m
}

// growLine returns the mapping m grown to size bytes, its contents kept,
// moved by the kernel if it must be; or false, m unchanged, when it cannot
// grow (memory is short).
func growLine(m []byte, size int) ([]byte, bool) {
	g, err := unix.Mremap(m, size, unix.MREMAP_MAYMOVE)
	return g, err == nil
}

// unmapLine frees a mapping of mapLine or growLine.
func unmapLine(m []byte) {
	unix.Munmap(m) // fails only for a slice that is no mapping
}

// releasePages gives the pages that lie wholly within b back to the
// system: b is part of the mapping of a line (only the goroutine taking a
// mapped line apart is handed releasePages: see resultLine), read for the
// last time, and the line is not unmapped until releasePages returns. The
// line's memory so shrinks as the value decoded from it grows, rather than
// the two being held whole at once. A page released reads as zeros.
func releasePages(b []byte) {
	from := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	page := uintptr(unix.Getpagesize())
	start, end := (from+page-1)&^(page-1), (from+uintptr(len(b)))&^(page-1)
	if end > start {
		unix.Madvise(b[start-from:end-from], unix.MADV_DONTNEED)
	}
}

// movePages moves the pages of src, a part of the mapping of a line that
// starts on a page and is a whole number of pages long, to dst, memory
// of the same length starting on a page, which nothing has written to
// (the value a result is decoded into, see ResultLine.Move): the kernel
// moves them, so that they are not faulted in again there. src stays
// mapped, and reads as zeros (MREMAP_DONTUNMAP): were it left a hole,
// the runtime could map memory of its own there, which unmapLine would
// then unmap with the line. It reports false, moving nothing, when the
// kernel refuses (before Linux 5.7; the caller then copies).
func movePages(dst, src []byte) bool {
	page := uintptr(unix.Getpagesize())
	d, s := uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	if len(src) == 0 || len(dst) != len(src) || d%page != 0 || s%page != 0 || uintptr(len(src))%page != 0 {
		return false
	}
	// The system call itself, not unix.MremapPtr, which makes a pointer
	// of the address it returns (dst): checkptr, under -race, refuses one
	// into the middle of a heap object.
	_, _, errno := unix.Syscall6(unix.SYS_MREMAP, s, uintptr(len(src)), uintptr(len(src)), unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED|unix.MREMAP_DONTUNMAP, d, 0)
	return errno == 0
}
