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

// TestLongLinePopulates writes a long line into its mapping as the reader
// does, 64 KiB at a time: the memory ahead of the bytes written is faulted
// in a run at a time (populate), never more than populateAhead past them.
func TestLongLinePopulates(t *testing.T) {
	page := unix.Getpagesize()
	var l longLine
	l.start(nil, true)
	if l.mapped == nil {
		t.Fatal("no mapping")
	}
	defer l.drop()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	for range 9 << 4 { // 9 MiB: the mapping grows twice
		l.write(chunk)
		if l.ready < 0 {
			t.Fatal("the system refused to populate the line's mapping")
		}
		if l.ready < l.n || l.ready > l.n+len(chunk)+populateAhead {
			t.Fatalf("%d bytes written, %d populated: want at least the bytes and at most %d past them", l.n, l.ready, populateAhead)
		}
		vec := make([]byte, (len(l.mapped)+page-1)/page)
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(l.mapped))), uintptr(len(l.mapped)), uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
			t.Fatal(errno)
		}
		resident := 0
		for _, v := range vec {
			resident += int(v & 1)
		}
		if want := (l.ready + page - 1) / page; resident != want {
			t.Fatalf("%d pages of the mapping resident, want the %d populated (%d bytes written)", resident, want, l.n)
		}
	}
	if !bytes.Equal(l.mapped[:len(chunk)], chunk) || !bytes.Equal(l.mapped[l.n-len(chunk):l.n], chunk) {
		t.Fatal("the line's bytes differ from those written")
	}
}
