package wire

import (
	"encoding/json"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A longLine holds a line longer than lineBlock while it is read. On the
// client side (a downstream server's responses, the large ones) on Linux it
// is read into memory mapped for it alone: the mapping grows in place (the
// kernel moves pages, never bytes), a page costs only when the line reaches
// it, and the line is unmapped as soon as it has been taken apart, so that
// a 100 MB result costs the proxy its line once and the value it stores,
// rather than blocks of the line, the line joined from them, and the value.
// Elsewhere, and on the server side, whose requests the layer above may
// keep slices of while it answers them (the Take hook), it is read into
// blocks of lineBlock bytes, joined once at the end: growing one buffer
// would copy it at every doubling and leave it up to twice as large as
// the line.
type longLine struct {
	mapped []byte // the mapping, when the line is in one; its length is the mapping's
	n      int    // bytes of the mapping in use
	blocks [][]byte
}

// start begins a long line with head, in a mapping when mapping is set and
// one can be made.
func (l *longLine) start(head []byte, mapping bool) {
	if mapping {
		l.mapped = mapLine(2 * lineBlock)
	}
	l.write(head)
}

// write appends b to the line.
func (l *longLine) write(b []byte) {
	if l.mapped != nil && l.n+len(b) > len(l.mapped) {
		g, ok := growLine(l.mapped, max(2*len(l.mapped), l.n+len(b)))
		if !ok {
			// Memory is short: the line goes on in blocks, as where
			// lines are not mapped (if the heap cannot hold them either,
			// the process fails with "out of memory", as for any
			// allocation).
			l.blocks = AppendBlocks(nil, l.mapped[:l.n])
			unmapLine(l.mapped)
			g, l.n = nil, 0
		}
		l.mapped = g
	}
	if l.mapped != nil {
		l.n += copy(l.mapped[l.n:], b)
		return
	}
	l.blocks = AppendBlocks(l.blocks, b)
}

// edges returns copies of the first and last n bytes of the line.
func (l *longLine) edges(n int) (head, tail []byte) {
	if l.mapped != nil {
		data := l.mapped[:l.n]
		return append([]byte(nil), data[:min(n, len(data))]...), AppendTail(nil, data)
	}
	if len(l.blocks) > 0 {
		head = append(head, l.blocks[0][:min(n, len(l.blocks[0]))]...)
	}
	for _, b := range l.blocks {
		tail = AppendTail(tail, b)
	}
	return head, tail
}

// finish returns the line, and the function that frees it (nil for a line
// the collector frees) once nothing holds a slice of it.
func (l *longLine) finish() (data []byte, free func()) {
	if l.mapped == nil {
		return JoinBlocks(nil, l.blocks), nil
	}
	m := l.mapped
	return m[:l.n:l.n], func() { unmapLine(m) }
}

// drop frees the line without returning it.
func (l *longLine) drop() {
	if l.mapped != nil {
		unmapLine(l.mapped)
	}
	*l = longLine{}
}

// detach returns msg with none of its bytes in line: each raw member of
// it (params, result, error data) that points into line is copied, so that
// line can be freed while the message lives on.
func detach(msg jsonrpc.Message, line []byte) jsonrpc.Message {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		m.Params = copyIfIn(m.Params, line)
	case *jsonrpc.Response:
		m.Result = copyIfIn(m.Result, line)
		if werr, ok := m.Error.(*jsonrpc.Error); ok && werr != nil {
			werr.Data = copyIfIn(werr.Data, line)
		}
	}
	return msg
}

// copyIfIn returns b, or a copy of it when it lies in line.
func copyIfIn(b json.RawMessage, line []byte) json.RawMessage {
	if len(b) == 0 || len(line) == 0 {
		return b
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(line)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < start || p >= start+uintptr(len(line)) {
		return b
	}
	return append(json.RawMessage(nil), b...)
}
