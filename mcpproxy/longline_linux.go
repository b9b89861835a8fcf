package mcpproxy

import (
	"sync"
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

// mappedLines are the mappings of the lines read whole and not yet freed:
// the only memory releaseRead may give back.
var mappedLines struct {
	sync.Mutex
	spans [][2]uintptr // start and end addresses
}

// addressRange returns the addresses b spans.
func addressRange(b []byte) (start, end uintptr) {
	start = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return start, start + uintptr(len(b))
}

// holdLine records the mapping m of a line read whole, until dropLine.
func holdLine(m []byte) {
	s, e := addressRange(m)
	mappedLines.Lock()
	mappedLines.spans = append(mappedLines.spans, [2]uintptr{s, e})
	mappedLines.Unlock()
}

// dropLine forgets the mapping m of holdLine, before it is unmapped.
func dropLine(m []byte) {
	s, _ := addressRange(m)
	mappedLines.Lock()
	defer mappedLines.Unlock()
	for i, sp := range mappedLines.spans {
		if sp[0] == s {
			mappedLines.spans = append(mappedLines.spans[:i], mappedLines.spans[i+1:]...)
			return
		}
	}
}

// releaseRead gives the pages that lie wholly within b back to the system
// when b is part of the mapping of a line (and does nothing otherwise): b
// has been read for the last time, and its line is still mapped, so that
// the line's memory shrinks as the value decoded from it grows, rather
// than the two being held whole at once. A page released reads as zeros.
// The caller must not let b's line be freed until releaseRead returns (the
// goroutine taking a line apart frees it once done: see lineConn.take).
func releaseRead(b []byte) {
	from, to := addressRange(b)
	page := uintptr(unix.Getpagesize())
	start, end := (from+page-1)&^(page-1), to&^(page-1)
	if end <= start {
		return
	}
	pages := b[start-from : end-from]
	mappedLines.Lock()
	in := false
	for _, sp := range mappedLines.spans {
		if in = sp[0] <= start && end <= sp[1]; in {
			break
		}
	}
	mappedLines.Unlock()
	// b is a slice of its line, which is not unmapped while the caller
	// holds b: the lock need not be held for the call.
	if in {
		unix.Madvise(pages, unix.MADV_DONTNEED)
	}
}
