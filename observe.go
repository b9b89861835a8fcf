package values

import (
	"unsafe"
)

// This file holds what an agent loop puts in the transcript for a stored
// value: the value whole when small, else its preview and hint.

// Observation is what an agent loop puts in the transcript for one tool
// result: see [SessionValues.Observe] and [SessionValues.Transcript].
type Observation struct {
	Handle    string // the handle the result is stored under
	Text      string // the text for the transcript
	Previewed bool   // whether Text is a preview rather than the whole result
}

// Observe stores a tool's raw output with [SessionValues.PutOutput] and
// returns what the agent loop puts in the transcript in its place, as
// [SessionValues.Transcript] gives it.
func (s *SessionValues) Observe(out []byte) Observation {
	x := classify(out, s.cfg.inline())
	h := s.add(x)
	return s.transcript(h, x) // with its bytes, even if the store has dropped them
}

// Transcript returns what an agent loop puts in the transcript for the
// value under handle, and false for an unknown handle.
//
// A value whose stored size is at most the inline limit ([WithInlineLimit];
// by default the preview bound) is shown whole (text as it is, JSON as
// stored) followed by [StoredLine]: its handle, what it is and how to pass
// it. A larger value, and every binary value, is shown as [RenderPreview]
// followed by [ReferenceHintFor].
// Either way the text is at most the inline limit or the preview bound,
// plus one hint line. A value kept only in the durable store is read back
// to be shown whole; when that fails it is previewed.
func (s *SessionValues) Transcript(handle string) (Observation, bool) {
	v, ok := s.Get(handle)
	if !ok {
		return Observation{}, false
	}
	x := v.get()
	if x.disk != nil && x.size <= s.cfg.inline() && x.kind != KindBinary {
		if m, _, err := x.loaded(); err == nil {
			x = m
		}
	}
	return s.transcript(handle, x), true
}

// transcript is Transcript for the value x under handle h.
func (s *SessionValues) transcript(h string, x *value) Observation {
	if x.kind == KindBinary || x.disk != nil || len(x.raw) > s.cfg.inline() {
		b := make([]byte, 0, min(x.max, DefaultMaxPreview)+64+hintLen+5*len(h))
		b = appendHint(appendPreview(b, h, Value{x}), h, partsOf(x))
		return Observation{Handle: h, Text: string(b), Previewed: true} // a copy of its size: b has room to spare
	}
	// The line is formatted first, and the text made of the value, a
	// newline and the line in one concatenation: one allocation of the
	// text's size, each byte written once.
	var buf [257]byte
	line := append(buf[:0], '\n')
	line = appendStoredLine(line, h, x)
	if len(x.raw) == 0 || x.raw[len(x.raw)-1] == '\n' {
		line = line[1:]
	}
	text := unsafe.String(unsafe.SliceData(x.raw), len(x.raw)) + unsafe.String(unsafe.SliceData(line), len(line))
	return Observation{Handle: h, Text: text}
}
