package mcpresult

import (
	"os"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
)

// moveMin is the size of a text block's JSON from which takeText decodes
// it in place, in the line it came in, when the line's pages can be moved
// (see SetMove): below it the copy costs less than the system calls.
const moveMin = 1 << 20

// SetMove sets the function that moves pages of the bytes the result was
// read from into a value's memory (wire.ResultLine.Move): with it, the
// text of a large text block is decoded in place and its pages handed to
// the value, so that the value's memory is not faulted in afresh.
func (res *Result) SetMove(move func(dst, src []byte) bool) { res.move = move }

// takeInPlace is takeText for a result of one large text block whose line
// res.move can take pages of. The text is decoded a piece at a time into
// the line itself, over the bytes already read (a decoding is never
// longer than its JSON); each run of whole pages of the decoding is then
// moved into the value's buffer, at the same offset in a page, so that
// the pages the line was read into become the value's. The bytes of the
// decoding in the partial pages at its two ends are copied. The line is
// never read again where pages were moved from: the text is its last
// reader (see Store).
func (res *Result) takeInPlace() []byte {
	t := res.texts[0]
	body := t[1:] // the decoding is written here, never past what was read
	dst, head, page := pageTwin(body)
	p := pagesMover{move: res.move, dst: dst, src: body, moved: head}
	n := 0 // bytes decoded
	buf := make([]byte, 0, decodePiece+16)
	jsontext.EachUnquotedPiece(t, decodePiece, buf, func(dec, _ []byte) {
		n += copy(body[n:], dec)
		if whole := head + max(n-head, 0)/page*page; whole-p.moved >= releaseStep {
			p.to(whole)
		}
	})
	if n > head {
		p.to(head + (n-head)/page*page)
		copy(dst[:head], body[:head])
		copy(dst[p.moved:n], body[p.moved:n])
	} else {
		copy(dst[:n], body[:n])
	}
	return dst[:n:n]
}

// pageTwin returns memory for a value made from src, as long as src, at
// the same offset in a page as src (so that whole pages of src can be
// moved into it), in memory the runtime does not clear first (valueBuf)
// and nothing has written to; head is the number of bytes of src before
// its first whole page.
func pageTwin(src []byte) (dst []byte, head, page int) {
	page = os.Getpagesize()
	start := int(uintptr(unsafe.Pointer(unsafe.SliceData(src))) % uintptr(page))
	v := newValueBuf(len(src) + page)
	v.b.WriteByte(0)
	s := v.b.String()
	d := unsafe.Slice(unsafe.StringData(s), v.b.Cap())
	o := (start - int(uintptr(unsafe.Pointer(unsafe.SliceData(d)))%uintptr(page)) + page) % page
	return d[o : o+len(src)], (page - start) % page, page
}

// A pagesMover moves the whole pages of src into dst, its pageTwin, a run
// at a time; once a move fails, it copies.
type pagesMover struct {
	move     func(dst, src []byte) bool
	dst, src []byte
	moved    int // src[:moved] is done with (its head is copied by the caller)
	failed   bool
}

// to moves src[p.moved:end], whole pages, into dst.
func (p *pagesMover) to(end int) {
	if end <= p.moved {
		return
	}
	if p.failed || !p.move(p.dst[p.moved:end], p.src[p.moved:end]) {
		p.failed = true
		copy(p.dst[p.moved:end], p.src[p.moved:end])
	}
	p.moved = end
}

// cloneStructured is cloneLarge of the structured content b, a part of
// the bytes the result was read from, which it reads for the last time:
// when res.move can take their pages and b is large, its whole pages are
// moved into the copy rather than copied into memory faulted in afresh.
func (res *Result) cloneStructured(b []byte) []byte {
	if res.move == nil || len(b) < moveMin {
		return cloneLarge(b, res.release)
	}
	dst, head, page := pageTwin(b)
	p := pagesMover{move: res.move, dst: dst, src: b, moved: head}
	whole := head + (len(b)-head)/page*page
	for p.moved < whole {
		p.to(min(p.moved+releaseStep, whole))
	}
	copy(dst[:head], b[:head])
	copy(dst[whole:], b[whole:])
	return dst[:len(b):len(b)]
}
