package wire

import "bytes"

// A goroutine reading a connection (the read loop) often holds several
// messages already read: a client with calls in flight sends its requests
// close together, and a server answers them close together. What the
// layer above writes for them, on the same goroutine, is held for the
// connection written to, and written at once when the reader has no whole
// line left to take: one write, and one wake-up of the peer reading it,
// for what a relay copying bytes would carry in one, instead of one per
// message. A message is held only while the reader takes lines it already
// holds, so it waits for work, never for a peer.

// maxHeld bounds the bytes held for one connection; a line that takes the
// held bytes past it is written at once with them. It only bounds memory:
// the lines a reader holds at once come from one read (64 KiB), and what
// is written for them is of a like size.
const maxHeld = 64 << 10

// A Batch is the connections a read loop holds lines for (see above). Only
// that goroutine uses it: a hook running on it (Take, or a Done run
// inline, which is handed it).
type Batch struct {
	conns []*Conn
}

// Flush writes the lines held for each connection of b.
func (b *Batch) Flush() {
	for i, c := range b.conns {
		c.flushHeld()
		b.conns[i] = nil
	}
	b.conns = b.conns[:0]
}

// add notes that c holds lines for b.
func (b *Batch) add(c *Conn) {
	for _, x := range b.conns {
		if x == c {
			return
		}
	}
	b.conns = append(b.conns, c)
}

// Batch returns the batch of the goroutine reading c. Only a hook running
// on that goroutine may use it (see Batch).
func (c *Conn) Batch() *Batch { return &c.batch }

// WriteLineIn writes data, one or more whole lines, as WriteLine does;
// with b not nil (the batch of the goroutine calling it) it holds them
// until b is flushed, or until anything else is written to c, which writes
// them first: the lines of c go out in the order they were given.
func (c *Conn) WriteLineIn(b *Batch, data []byte) error {
	if b == nil || !c.hold(b, data, nil) {
		return c.WriteLine(data)
	}
	return nil
}

// hold appends data, the request line of the raw call p when p is not
// nil, to the lines held for c in b, and reports true; false (nothing
// held) when they would go past maxHeld: then they are written at once.
func (c *Conn) hold(b *Batch, data []byte, p *rawPending) bool {
	c.hmu.Lock()
	if len(c.held)+len(data) > maxHeld {
		c.hmu.Unlock()
		return false
	}
	c.held = append(c.held, data...)
	if p != nil {
		c.heldCalls = append(c.heldCalls, p)
	}
	c.hmu.Unlock()
	b.add(c)
	return true
}

// takeHeld returns the lines held for c and the raw calls whose requests
// are among them, and holds none. The caller holds wmu, and writes them
// before anything else.
func (c *Conn) takeHeld() ([]byte, []*rawPending) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	held, calls := c.held, c.heldCalls
	c.held, c.heldCalls = c.spare, c.spareCalls
	c.spare, c.spareCalls = nil, nil
	return held, calls
}

// maxSpare bounds the capacity of the buffer of held lines kept once
// written (see Conn.spare): a larger one, grown by a long line written with
// the held ones, is left to the collector rather than held for the life of
// the connection.
const maxSpare = 2 * maxHeld

// reuseHeld keeps held and calls, returned by takeHeld and now written in
// full (no write holds them any more) and handed to heldWritten, for the
// next lines held.
func (c *Conn) reuseHeld(held []byte, calls []*rawPending) {
	if cap(held) > maxSpare {
		held = nil
	}
	clear(calls[:cap(calls)]) // the calls ended are not kept alive by it
	c.hmu.Lock()
	if c.spare == nil {
		c.spare, c.spareCalls = held[:0], calls[:0]
	}
	c.hmu.Unlock()
}

// heldWritten ends the raw calls whose requests were held, when writing
// them failed with err.
func (c *Conn) heldWritten(calls []*rawPending, err error) {
	if err == nil {
		return
	}
	for _, p := range calls {
		go c.failedRaw(p, err) // Done may wait (for the server's end)
	}
}

// flushHeld writes the lines held for c. To a writer with TryWrite (a
// server's input: see sendRaw) it does not wait: what the server does not
// take at once is written by a goroutine of its own, as is all of it when
// another write holds the connection.
func (c *Conn) flushHeld() {
	tw, try := c.w.(tryWriter)
	if !try {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		c.writeLocked() // the held lines alone
		return
	}
	if !c.wmu.TryLock() {
		go func() {
			c.wmu.Lock()
			defer c.wmu.Unlock()
			c.writeLocked()
		}()
		return
	}
	held, calls := c.takeHeld()
	if len(held) == 0 {
		c.wmu.Unlock()
		return
	}
	n, err := tw.TryWrite(held)
	if err == nil && n < len(held) {
		go c.finishLocked(held[n:], calls) // still holding wmu
		return
	}
	c.heldWritten(calls, err)
	c.reuseHeld(held, calls)
	c.wmu.Unlock()
}

// finishLocked writes rest, the end of a line begun, then the lines held
// since, and releases wmu; calls are the raw calls whose requests are in
// rest.
func (c *Conn) finishLocked(rest []byte, calls []*rawPending) {
	_, err := c.w.Write(rest)
	c.heldWritten(calls, err)
	if err == nil {
		c.writeLocked()
	}
	c.wmu.Unlock()
}

// lineReady reports whether the reader holds a whole line not yet taken,
// which the read loop takes without waiting for the peer.
func (c *Conn) lineReady() bool {
	n := c.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// tryWriter is a writer that writes what it can without waiting (see
// NewConn).
type tryWriter interface {
	TryWrite(b []byte) (n int, err error)
}
