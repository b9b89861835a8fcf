package wire

import (
	"bufio"
	"bytes"
)

// A line is one inbound line: whole, or, past the bound, only its size and
// its first and last bytes (enough to find its id).
type line struct {
	data       []byte // the whole line, without its newline; nil when over
	size       int
	over       bool
	head, tail []byte // of an over line
	free       func() // when not nil, frees data, which nothing may hold then (see longLine)
}

// IDWindow is how much of the start and of the end of an oversized
// message is kept to find its id (see FindID).
const IDWindow = 4 << 10

// readLine reads up to the next newline, or the end of the stream. Past the
// bound it keeps only the line's head and tail. A line longer than
// lineBlock is read as a longLine.
func (c *Conn) readLine() (line, error) {
	var ln line
	var long longLine
	inLong := false
	for {
		chunk, err := c.r.ReadSlice('\n')
		ln.size += len(chunk)
		if err == nil {
			chunk = chunk[:len(chunk)-1] // the newline
			ln.size--
		}
		switch {
		case ln.over:
			ln.tail = AppendTail(ln.tail, chunk)
		case c.max >= 0 && ln.size > c.max:
			ln.over = true
			if inLong {
				ln.head, ln.tail = long.edges(IDWindow)
				long.drop()
				ln.tail = AppendTail(ln.tail, chunk)
			} else {
				whole := append(ln.data, chunk...)
				ln.head = bytes.Clone(whole[:min(IDWindow, len(whole))])
				ln.tail = AppendTail(nil, whole)
			}
			ln.data, inLong = nil, false
		case inLong:
			long.write(chunk)
		case len(ln.data)+len(chunk) > lineBlock:
			long.start(ln.data, !c.server)
			long.write(chunk)
			ln.data, inLong = nil, true
		default:
			ln.data = append(ln.data, chunk...)
		}
		if err != bufio.ErrBufferFull {
			if inLong {
				ln.data, ln.free = long.finish()
			}
			return ln, err
		}
	}
}

// lineBlock is the size from which a line is read as a longLine, and of the
// blocks one is read into when it is not mapped.
const lineBlock = 1 << 20

// AppendBlocks appends b to blocks of a long message: blocks of a fixed
// size, so that reading one never copies what was read before (see
// JoinBlocks).
func AppendBlocks(blocks [][]byte, b []byte) [][]byte {
	for len(b) > 0 {
		if len(blocks) == 0 || len(blocks[len(blocks)-1]) == lineBlock {
			blocks = append(blocks, make([]byte, 0, lineBlock))
		}
		last := &blocks[len(blocks)-1]
		n := min(len(b), lineBlock-len(*last))
		*last = append(*last, b[:n]...)
		b = b[n:]
	}
	return blocks
}

// JoinBlocks returns head and the blocks after it as one slice of their
// length.
func JoinBlocks(head []byte, blocks [][]byte) []byte {
	n := len(head)
	for _, b := range blocks {
		n += len(b)
	}
	out := make([]byte, 0, n)
	out = append(out, head...)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

// AppendTail appends b to tail, the last bytes of a message read so far,
// keeping only the last IDWindow bytes.
func AppendTail(tail, b []byte) []byte {
	if len(b) >= IDWindow {
		return append(tail[:0], b[len(b)-IDWindow:]...)
	}
	tail = append(tail, b...)
	if len(tail) > IDWindow {
		tail = append(tail[:0], tail[len(tail)-IDWindow:]...)
	}
	return tail
}
