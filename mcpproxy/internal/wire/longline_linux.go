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
