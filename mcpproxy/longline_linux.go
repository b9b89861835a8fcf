package mcpproxy

import "golang.org/x/sys/unix"

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
// moved by the kernel if it must be. A mapping that cannot grow (memory is
// short) is copied to the heap, where the line goes on growing as a slice
// (unmapLine then ignores it); if the heap cannot hold it either, the
// process fails with "out of memory", as for any allocation.
func growLine(m []byte, size int) []byte {
	g, err := unix.Mremap(m, size, unix.MREMAP_MAYMOVE)
	if err == nil {
		return g
	}
	c := make([]byte, size)
	copy(c, m)
	unmapLine(m)
	return c
}

// unmapLine frees a mapping of mapLine or growLine; a slice growLine made
// on the heap is left to the collector.
func unmapLine(m []byte) {
	unix.Munmap(m) // fails only for a slice that is no mapping
}
