package wire

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The own id of every call made with Start is a negative number (on the
// wire it has a number of the connection's, as every call has: see
// Conn.Write), by which its response comes back to it rather than to
// Read, whose caller (the SDK client) numbers its calls from 1 up. Its
// id never leaves the connection: the response is given it by settle,
// from the call's number on the wire.

// isRawID reports whether id is that of a call made with Start.
func isRawID(id jsonrpc.ID) bool {
	n, ok := id.Raw().(int64)
	return ok && n < 0
}

// ErrClosed is why a call made with Start ends when the connection can no
// longer deliver its response: reading has stopped, or the connection is
// closed.
var ErrClosed = errors.New("mcpproxy: the connection is closed")

// A Call is a call a Conn makes by bytes for the layer above (see
// [Conn.Start]).
type Call struct {
	// Tag is handed to the Fix hook with the call's result.
	Tag any
	// Inline lets Done run on the goroutine reading the connection; set it
	// only when Fix and Done do no I/O.
	Inline bool
	// OnReader says the caller is the goroutine reading the client, which
	// the call must not hold up (see sendRaw).
	OnReader bool
	// Batch, with OnReader, is the batch of that goroutine (see Batch):
	// the request is held in it, and written when it is flushed.
	Batch *Batch
	// Cancelled returns the line of the notifications/cancelled request
	// that names the call by its id on the wire, for the reason why.
	Cancelled func(id jsonrpc.ID, why string) []byte
	// Done is handed the call's response, or why it ended without one;
	// and, when it runs on the goroutine reading the connection (see
	// Inline), that goroutine's batch (see Batch), else nil.
	Done func(*jsonrpc.Response, *Batch, error)
}

// A rawPending is a call made with Start awaiting its response.
type rawPending struct {
	c         *Conn
	id, wire  jsonrpc.ID  // the call's own id, and its number on the wire
	claimed   atomic.Bool // by the first of the response, the cancellation, the connection's end, a failed write
	done      func(*jsonrpc.Response, *Batch, error)
	cancelled func(id jsonrpc.ID, why string) []byte // Call.Cancelled
	inline    bool                                   // done may run on the goroutine reading the connection
	// sent is set once the request has been written, or will never be
	// (the call ended first); wrote says whether any of it was. Only a
	// cancellation waits for it, on sentCh, made when it waits.
	sentMu sync.Mutex
	sent   bool
	sentCh chan struct{}
	wrote  atomic.Bool
}

// claim reports whether the caller is the one to end the call.
func (p *rawPending) claim() bool { return p.claimed.CompareAndSwap(false, true) }

// markSent notes that the request has been written, or never will be.
func (p *rawPending) markSent() {
	p.sentMu.Lock()
	if !p.sent {
		p.sent = true
		if p.sentCh != nil {
			close(p.sentCh)
		}
	}
	p.sentMu.Unlock()
}

// waitSent waits until markSent has been called.
func (p *rawPending) waitSent() {
	p.sentMu.Lock()
	if p.sent {
		p.sentMu.Unlock()
		return
	}
	if p.sentCh == nil {
		p.sentCh = make(chan struct{})
	}
	ch := p.sentCh
	p.sentMu.Unlock()
	<-ch
}

// cancel ends the call, unless it has ended, as its Cancel was cancelled
// with err and the server is to be given reason.
func (p *rawPending) cancel(err error, reason string) {
	if !p.claim() {
		return
	}
	c := p.c
	c.forgetRaw(p)
	// As the SDK client does: off the caller's path, so that a server
	// that does not read cannot hold the call; and after the request,
	// when it was sent, so that the server knows the id it names.
	note := p.cancelled(p.wire, reason)
	c.notes.Add(1)
	go func() {
		defer c.notes.Done()
		if p.waitSent(); p.wrote.Load() {
			c.WriteLine(note)
		}
	}()
	go p.done(nil, nil, err) // Done may wait; the one cancelling must not
}

// Start writes frame, the request line of a call whose id on the wire is
// wire (from NextID) and whose method is method (pieces written one after
// another; one piece with call.OnReader), and returns; the call's
// response, fixed as a response to a call written by Write is (see
// settle; the Fix hook is given call.Tag), is handed to call.Done once it
// arrives, and never to Read. With call.Inline, Done runs on the
// goroutine that reads the connection, which reads nothing else meanwhile
// (a response line of rawEnvelopeMin bytes or more is taken apart on a
// goroutine of its own, where Done runs too): it must not wait. Otherwise
// Done runs on a goroutine of its own.
//
// When stop is cancelled first (see [Cancel]), Done gets its error, and
// the server, if it was sent the request, is sent call.Cancelled's line
// after it; when the connection breaks or closes, ErrClosed; when the
// request cannot be written, the write's error. Done is called exactly
// once, and never on the caller's goroutine but for a stop already
// cancelled: with call.OnReader (the caller is the goroutine reading the
// client) the caller is not held up either by a server that does not
// read (see sendRaw).
func (c *Conn) Start(stop *Cancel, wire jsonrpc.ID, method string, frame [][]byte, call Call) {
	p := &rawPending{c: c, wire: wire, done: call.Done, cancelled: call.Cancelled, inline: call.Inline}
	p.id, _ = jsonrpc.MakeID(-float64(c.rawSeq.Add(1)))
	if err := stop.watch(p); err != nil {
		call.Done(nil, nil, err)
		return
	}
	c.calls.Add(p.wire, Pending{Method: method, Tag: call.Tag, ID: p.id})
	if c.storing != nil {
		c.storing()
	}
	c.rawMu.Lock()
	if c.rawWait == nil {
		c.rawWait = make(map[jsonrpc.ID]*rawPending)
	}
	c.rawWait[p.id] = p
	c.rawMu.Unlock()
	switch {
	case p.claimed.Load():
		// Cancelled while it was being stored: the cancellation found
		// nothing to forget.
		c.forgetRaw(p)
		p.markSent()
		return
	case c.Broken() || c.isClosed():
		// Reading stopped before the call was stored, or is stopping: the
		// end of reading (endRaw) may have missed it.
		c.failRaw(p)
		p.markSent()
		return
	}
	if call.OnReader && len(frame) > 1 {
		frame = [][]byte{bytes.Join(frame, nil)} // one piece, for TryWrite
	}
	if call.OnReader && call.Batch != nil && c.holdRaw(p, frame[0], call.Batch) {
		return
	}
	c.sendRaw(p, frame, call.OnReader)
}

// holdRaw holds the request line of the raw call p in b (see Batch),
// unless the call has ended first, and reports true; false when it is to
// be written at once (see hold).
func (c *Conn) holdRaw(p *rawPending, line []byte, b *Batch) bool {
	if p.claimed.Load() {
		p.markSent()
		return true
	}
	// Held is as good as written: whatever is written to c next, the
	// cancellation of p among it, goes after it.
	p.wrote.Store(true)
	if !c.hold(b, line, p) {
		p.wrote.Store(false)
		return false
	}
	p.markSent()
	return true
}

// sendRaw writes the request frame of the raw call p, unless the call has
// ended first, and ends the call when the write fails. With onReader it
// does not wait, so that a server that stops reading its input does not
// stop the goroutine reading the client: when another write holds the
// connection, or the frame (one line) does not fit in the server's pipe
// at once, what is left of it is written by a goroutine of its own.
func (c *Conn) sendRaw(p *rawPending, frame [][]byte, onReader bool) {
	// write writes what is left of the frame, holding wmu, and releases it.
	write := func(left [][]byte) {
		err := c.writeLocked(left...)
		c.wmu.Unlock()
		p.markSent()
		c.failedRaw(p, err)
	}
	// start begins the write, holding wmu; false when the call has ended.
	start := func() bool {
		if p.claimed.Load() {
			c.wmu.Unlock()
			p.markSent()
			return false
		}
		p.wrote.Store(true)
		return true
	}
	tw, try := c.w.(interface{ TryWrite([]byte) (int, error) })
	if !onReader || !try || !c.wmu.TryLock() {
		send := func() {
			c.wmu.Lock()
			if start() {
				write(frame)
			}
		}
		if onReader {
			go send()
		} else {
			send()
		}
		return
	}
	if !start() {
		return
	}
	held, calls := c.takeHeld() // first, as writeLocked writes them
	line := frame[0]
	if len(held) > 0 {
		line = append(held, line...)
	}
	n, err := tw.TryWrite(line)
	if err == nil && n < len(line) {
		// Still holding wmu: the rest of the line comes next.
		go func() {
			p.markSent()
			c.finishLocked(line[n:], append(calls, p))
		}()
		return
	}
	c.wmu.Unlock()
	p.markSent()
	c.heldWritten(append(calls, p), err)
	if len(held) > 0 {
		c.reuseHeld(line, calls)
	}
}

// failedRaw ends the raw call p with the error of writing its request, if
// err is not nil and the call has not ended.
func (c *Conn) failedRaw(p *rawPending, err error) {
	if err != nil && p.claim() {
		c.forgetRaw(p)
		p.done(nil, nil, err)
	}
}

// forgetRaw forgets the raw call p: its response, should it come, is
// dropped.
func (c *Conn) forgetRaw(p *rawPending) {
	c.rawMu.Lock()
	delete(c.rawWait, p.id)
	c.rawMu.Unlock()
	c.calls.Done(p.wire)
}

// failRaw ends the raw call p, if it is still waiting, with ErrClosed.
func (c *Conn) failRaw(p *rawPending) {
	if !p.claim() {
		return
	}
	c.forgetRaw(p)
	go p.done(nil, nil, ErrClosed) // Done may wait (for the server's end)
}

// endRaw ends every raw call still waiting, once the connection can no
// longer deliver their responses: reading has stopped, or the connection
// is closed. A response delivered before then has ended its call.
func (c *Conn) endRaw() {
	c.rawMu.Lock()
	waiting := slices.Collect(maps.Values(c.rawWait))
	c.rawMu.Unlock()
	for _, p := range waiting {
		c.failRaw(p)
	}
}

// deliverRaw hands the response of a raw call to it, or drops it when the
// call is over (cancelled). b is the read loop's batch when the read loop
// calls it, else nil.
func (c *Conn) deliverRaw(resp *jsonrpc.Response, b *Batch) {
	c.rawMu.Lock()
	p, ok := c.rawWait[resp.ID]
	delete(c.rawWait, resp.ID)
	c.rawMu.Unlock()
	if !ok || !p.claim() {
		return
	}
	if p.inline {
		p.done(resp, b, nil)
		return
	}
	go p.done(resp, nil, nil)
}

// isClosed reports whether Close has been called.
func (c *Conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// A Cancel cancels a call made with Start: before Start, while it runs,
// or once it has returned (after the call has ended, it does nothing).
// The one cancelling calls it directly, with no context watching another:
// a call's cancellation costs nothing until it happens. Its zero value is
// ready for one call; a nil *Cancel is never cancelled. A Cancel is safe
// for concurrent use, and must not be copied after first use.
type Cancel struct {
	mu     sync.Mutex
	err    error       // what Done gets, once cancelled
	reason string      // the reason the server is given
	call   *rawPending // the call (set by Start), until cancelled
}

// Cancel cancels the call with cause, the first time it is called (later
// calls do nothing): Done gets context.Canceled, and the server, if it was
// sent the request, is given cause's text as the reason (as
// context.WithCancelCause's cause would be; context.Canceled's text for a
// nil cause).
func (c *Cancel) Cancel(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.cancel(context.Canceled, cause.Error())
}

// Watch has c cancelled once ctx is done, with ctx's error and its cause
// (see cancelReason), unless it is cancelled first. It returns the
// function that stops the watch (see context.AfterFunc).
func (c *Cancel) Watch(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() { c.cancel(ctx.Err(), cancelReason(ctx)) })
}

// Err returns what Done gets for the cancellation: nil until c is
// cancelled.
func (c *Cancel) Err() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// cancel cancels c with err, the server given reason, the first time.
func (c *Cancel) cancel(err error, reason string) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err, c.reason = err, reason
	p := c.call
	c.call = nil
	c.mu.Unlock()
	if p != nil {
		p.cancel(err, reason)
	}
}

// watch has the call p cancelled when c is, or returns c's error when it
// already is.
func (c *Cancel) watch(p *rawPending) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.call = p
	return nil
}

// cancelReason is the reason a cancellation of a call made under ctx gives:
// the cause ctx was cancelled with, when it has one of its own (the
// reason the client gave for cancelling its request), else ctx's error.
func cancelReason(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return cause.Error()
	}
	return ctx.Err().Error()
}
