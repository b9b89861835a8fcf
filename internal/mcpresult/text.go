package mcpresult

import (
	"bytes"
	"runtime"
	"strings"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
)

// TextOver reports whether the text of the text blocks joined by
// newlines ([Content.Text]) is longer than n bytes, decoding none of it
// when the JSON lengths decide: a string's text is at most its JSON less
// the quotes, and at least a sixth of that (every byte escaped as \u00XX).
// It is for a result whose blocks are all text.
func (res *Result) TextOver(n int) bool {
	most, least := max(res.n-1, 0), max(res.n-1, 0)
	res.eachText(func(t []byte) {
		most += len(t) - 2
		least += (len(t) - 2) / 6
	})
	if most <= n || least > n {
		return least > n
	}
	l := max(res.n-1, 0)
	res.eachText(func(t []byte) {
		tl, _ := jsontext.StringStats(t)
		l += tl
	})
	return l > n
}

// Text decodes the text of the text blocks joined by newlines, into a
// buffer of its own, each time it is called.
func (res *Result) Text() []byte {
	b := make([]byte, 0, res.textCap())
	first := true
	res.eachText(func(t []byte) {
		if !first {
			b = append(b, '\n')
		}
		first = false
		b = jsontext.AppendUnquoted(b, t)
	})
	return b
}

// textCap is room enough for the text of the blocks joined by newlines:
// a decoding is never longer than its JSON.
func (res *Result) textCap() int {
	n := 0
	res.eachText(func(t []byte) { n += len(t) + 1 })
	return n
}

// firstText returns the JSON string of the first text block.
func (res *Result) firstText() []byte {
	var first []byte
	res.eachText(func(t []byte) {
		if first == nil {
			first = t
		}
	})
	return first
}

// takeText is text for the last reader of the blocks. It decodes them a
// piece at a time into memory the runtime does not clear first (see
// valueBuf), and gives the memory of the line behind the decoding back
// (res.release) every releaseStep bytes: a 100 MB text costs the proxy
// the larger of its line and its value, not both.
func (res *Result) takeText() []byte {
	if res.move != nil && res.blocks == nil && len(res.texts) == 1 && len(res.texts[0]) >= moveMin {
		return res.takeInPlace()
	}
	v := newValueBuf(res.textCap())
	buf := make([]byte, 0, decodePiece+16)
	first := true
	if res.blocks != nil {
		// Many blocks, most of them small: the content array is given
		// back behind the decoding as a whole.
		back := behind{b: res.blocks, release: res.release}
		res.eachText(func(t []byte) {
			if !first {
				v.b.WriteByte('\n')
			}
			first = false
			back.read(offsetIn(res.blocks, t) - back.n) // up to the text
			jsontext.EachUnquotedPiece(t, decodePiece, buf, func(dec, piece []byte) {
				v.b.Write(dec)
				back.read(len(piece))
			})
		})
		back.read(len(res.blocks) - back.n) // the rest, to the closing bracket
		return v.bytes()
	}
	for _, t := range res.texts {
		if !first {
			v.b.WriteByte('\n')
		}
		first = false
		back := behind{b: t, release: res.release}
		jsontext.EachUnquotedPiece(t, decodePiece, buf, func(dec, piece []byte) {
			v.b.Write(dec)
			back.read(len(piece))
		})
	}
	return v.bytes()
}

const (
	// decodePiece is how much of a long text is decoded at a time, into a
	// buffer that stays in the processor's cache.
	decodePiece = 256 << 10
	// releaseStep is how much of a line is read between releases.
	releaseStep = 4 << 20
)

// behind gives the memory of b back to the system behind a reader of it,
// releaseStep bytes at a time and at its end, when release is not nil.
type behind struct {
	b       []byte
	release func([]byte)
	n, done int // bytes of b read, and released
}

// read tells that the next n bytes of b have been read.
func (r *behind) read(n int) {
	r.n += n
	if r.release != nil && (r.n-r.done >= releaseStep || r.n == len(r.b)) {
		r.release(r.b[r.done:r.n])
		r.done = r.n
	}
}

// A valueBuf holds a large value being built, in memory the runtime does
// not clear first. make([]byte, n) of 100 MB clears every byte of it
// before one is written when the heap has been used before (it has): a
// pass over the whole value, which touches all its pages at once, so that
// it and the line it is decoded from are held whole together. The Grow of
// a strings.Builder takes its memory uncleared.
type valueBuf struct{ b strings.Builder }

// newValueBuf returns a valueBuf with room for n bytes.
func newValueBuf(n int) *valueBuf {
	v := &valueBuf{}
	v.b.Grow(n)
	return v
}

// bytes returns what was written, which nothing may write to: its memory
// is a string's (the store only reads the values it keeps).
func (v *valueBuf) bytes() []byte {
	s := v.b.String()
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// cloneLarge returns a copy of b, which it reads for the last time: the
// copy is made in memory the runtime does not clear first (valueBuf), and
// the memory of b given back behind it when release is not nil (see
// behind).
// The copy is made a block at a time so that the goroutine copying can be
// stopped between blocks: a single copy of 100 MB into fresh memory runs
// for a second or more, during which the collector, needing to stop the
// goroutine to scan its stack, signals it again and again and spins
// waiting (measured: a tenth of the proxy's CPU for a 100 MB structured
// result, and a slower copy under the signals).
func cloneLarge(b []byte, release func([]byte)) []byte {
	const block = 1 << 20
	if len(b) <= block {
		return bytes.Clone(b)
	}
	v := newValueBuf(len(b))
	back := behind{b: b, release: release}
	for i := 0; i < len(b); i += block {
		end := min(i+block, len(b))
		v.b.Write(b[i:end])
		back.read(end - i)
		runtime.Gosched()
	}
	return v.bytes()
}

// offsetIn returns the offset of sub within outer; sub must be a subslice.
func offsetIn(outer, sub []byte) int { return cap(outer) - cap(sub) }
