package wire

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMovePages moves pages of a line's mapping into heap memory at the
// same offset in a page: the bytes arrive, and the line's range stays
// mapped (reading as zeros), so that no other mapping can be made in it
// before the line is unmapped whole.
func TestMovePages(t *testing.T) {
	page := unix.Getpagesize()
	m := mapLine(8 * page)
	if m == nil {
		t.Fatal("no mapping")
	}
	defer unmapLine(m)
	for i := range m {
		m[i] = byte(i%251) + 1
	}
	want := bytes.Clone(m[2*page : 5*page])
	heap := make([]byte, 5*page)
	off := (page - int(uintptr(unsafe.Pointer(unsafe.SliceData(heap)))%uintptr(page))) % page
	dst := heap[off : off+3*page]
	if movePages(dst[1:], m[2*page+1:5*page]) {
		t.Fatal("moved pages that do not start on a page")
	}
	if !movePages(dst, m[2*page:5*page]) {
		t.Fatal("the pages were not moved")
	}
	if !bytes.Equal(dst, want) {
		t.Fatal("the moved pages differ from the line's")
	}
	if !bytes.Equal(m[2*page:5*page], make([]byte, 3*page)) {
		t.Fatal("the line's range does not read as zeros after the move")
	}
	if m[2*page-1] != byte((2*page-1)%251)+1 || m[5*page] != byte((5*page)%251)+1 {
		t.Fatal("the pages around the moved ones changed")
	}
}
