package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxDepth is the deepest nesting the SDK decodes in a message
// (internal/json.defaultMaxDepth); a deeper message fails to decode as a
// whole, so the connection leaves it to the SDK to refuse.
const MaxDepth = 1000

// CodeProxy is the JSON-RPC error code of the errors the proxy writes in
// place of a downstream response it could not take (too large, not
// decodable, not a CallToolResult), so that the agent is told the proxy
// refused it rather than that the server answered with an error. It is in
// the range JSON-RPC reserves for implementation-defined server errors.
const CodeProxy = -32050

// clipLog bounds how much of a malformed line is quoted in a log line or an
// error message.
const clipLog = 200

// A Conn is a connection of newline-delimited JSON-RPC messages that
// survives bad input. On the server side (facing a client) it answers
// malformed requests itself; on the client side (facing a server) it skips
// lines that are not JSON-RPC, logging them, and answers the proxy's own
// pending calls with an error when their response cannot be taken.
//
// A Conn is an mcp.Connection (Read, Write, Close, SessionID) and is safe
// for concurrent use, as that interface requires.
type Conn struct {
	r      *bufio.Reader
	w      io.Writer
	closer io.Closer // closes what Read and Write use; may be nil
	max    int       // bound on an inbound line; negative: none
	server bool
	log    io.Writer // may be nil

	hooks Hooks // what the layers above see and change; set before the first Read

	calls Tracker // client side: this connection's calls awaiting a response

	rawMu   sync.Mutex
	rawWait map[jsonrpc.ID]*rawPending // client side, under rawMu: the raw calls awaiting a response, by their own id
	rawSeq  atomic.Uint64              // client side: numbers the raw calls' own ids
	wireSeq atomic.Int64               // client side: numbers the calls on the wire

	start    sync.Once
	incoming chan jsonrpc.Message
	workers  sync.WaitGroup // messages being taken apart from the read loop
	slots    chan struct{}  // one per worker running: at most maxLineWorkers
	readErr  error          // why reading stopped; valid once readDone is closed
	readDone chan struct{}  // closed when the read loop has stopped

	wmu sync.Mutex // serializes writes

	// The lines held for one write (batch.go): under hmu, which a writer
	// takes holding wmu.
	hmu       sync.Mutex
	held      []byte
	heldCalls []*rawPending // the raw calls whose requests are in held
	// spare and spareCalls are held and heldCalls once written, kept for
	// the next lines held (see reuseHeld): a small call would otherwise
	// allocate both anew on every connection it crosses.
	spare      []byte
	spareCalls []*rawPending
	batch      Batch // the read loop's: see Batch

	// taken is a request the Take hook took, whose memory the server
	// side's read loop, the only goroutine using it, makes its next
	// request in (see fromEnvelope): a call the layer above answers
	// would otherwise allocate one on every call.
	taken *jsonrpc.Request

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
	goneOnce  sync.Once // server side: see clientGone

	// The tests' seams: storing, when set, runs in Start just before a
	// call is stored; notes counts the goroutines writing a cancellation.
	storing func()
	notes   sync.WaitGroup
}

// Hooks are how the layers above a Conn see what it reads and writes, and
// change it, without the connection knowing them. Each may be nil. They
// are set with [Conn.SetHooks] before the first Read; the hooks on the
// client side run on the goroutine reading the connection (or one taking
// a large line apart), and must not wait for a Read.
type Hooks struct {
	// Fix (client side) rewrites the result of a response before it is
	// delivered, or refuses it with an error that replaces the response;
	// it is given the method and tag of the call the response answers (see
	// WithTag) and what is known of the result's line. The result is
	// valid JSON and valid UTF-8 (a line holding other bytes in a string
	// is read with each such byte as U+FFFD), and may be a slice of the
	// line: Fix must copy what it keeps. The call is not yet claimed for
	// the response as Fix runs: a raw call cancelled meanwhile (Start) may
	// be ending, its Done running with the cancellation's error, while Fix
	// runs for it.
	Fix func(method string, tag any, result json.RawMessage, line ResultLine) (json.RawMessage, *jsonrpc.Error)
	// Outline (client side) is what Fix is given of the outline of a
	// large result (see ResultLine).
	Outline Outline
	// Calling (client side) is shown each call Write sends, before it is
	// renumbered.
	Calling func(req *jsonrpc.Request)
	// Splices (client side) holds the arguments that Write writes in place
	// of their placeholders in a tools/call request (see Splices).
	Splices *Splices
	// Take (server side) is shown each request read before it is
	// delivered; when it reports true the request is not delivered: the
	// layer above answers it, and must not keep req, whose memory the
	// connection reuses (its ID, Method and Params it may keep). valid
	// reports that the request's params, if any, were read by the line's
	// own scan and are valid as jsontext.Valid reads JSON (see
	// ResultLine.Valid); false for a request the SDK's decoding read.
	Take func(req *jsonrpc.Request, valid bool) bool
	// Wrote (server side) is shown each response before Write writes it,
	// and reports whether to write it: false drops it (the response to a
	// request the client cancelled).
	Wrote func(resp *jsonrpc.Response) bool
	// ReadEnded (server side) is called once the peer's side of the
	// stream has ended, after the read loop has stopped.
	ReadEnded func()
	// Closing (server side) is called by Close before it closes the
	// streams, and may wait (for the calls the layer above is answering).
	Closing func()
	// Log, when not nil, receives the connection's log lines if NewConn
	// was given no log.
	Log io.Writer
}

// NewConn returns a connection reading lines from r and writing them to
// w; closer, when not nil, is closed by Close. max bounds the length of
// an inbound line in bytes (negative: no bound); a longer one is read
// through without being held and answered (server side) or ends the call
// it answers with an error (client side). server says which side the
// connection is on: facing a client (true) or a server. log receives one
// line for each message that could not be answered; nil discards them.
//
// When w has a method TryWrite(b []byte) (n int, err error) that writes
// what of b it can without waiting (n < len(b) when it must wait), a call
// made on the goroutine reading a client (Call.OnReader) uses it, so that
// a server that does not read never holds that goroutine.
func NewConn(r io.Reader, w io.Writer, closer io.Closer, max int, server bool, log io.Writer) *Conn {
	return &Conn{
		r:        bufio.NewReaderSize(r, 64<<10),
		w:        w,
		closer:   closer,
		max:      max,
		server:   server,
		log:      log,
		incoming: make(chan jsonrpc.Message),
		slots:    make(chan struct{}, maxLineWorkers),
		readDone: make(chan struct{}),
		closed:   make(chan struct{}),
	}
}

// SetHooks sets the connection's hooks. It must be called before the
// first Read, which starts reading.
func (c *Conn) SetHooks(h Hooks) {
	if c.log == nil {
		c.log = h.Log
	}
	c.hooks = h
}

// SessionID returns "": a line connection has no session of its own.
func (c *Conn) SessionID() string { return "" }

// Read returns the next message. Lines that yield no message (blank, or
// malformed and answered or logged) are skipped. The read loop starts with
// the first Read, so hooks may be set until then.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.start.Do(func() { go c.readLoop() })
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg, ok := <-c.incoming:
		if !ok {
			return nil, c.readErr
		}
		return msg, nil
	case <-c.closed:
		return nil, io.EOF
	}
}

// Broken reports whether reading has stopped: the peer closed its output or
// the stream failed.
func (c *Conn) Broken() bool {
	select {
	case <-c.readDone:
		return true
	default:
		return false
	}
}

func (c *Conn) readLoop() {
	ended := false // the stream ended, rather than the connection closing
	defer func() {
		if ended && c.hooks.ReadEnded != nil {
			c.hooks.ReadEnded() // last: a raw call it cancels sees Broken()
		}
	}()
	// readDone first: a call failed by the end of incoming sees Broken().
	defer close(c.incoming)
	defer c.endRaw() // after readDone: a raw call stored later sees Broken()
	defer close(c.readDone)
	defer c.workers.Wait() // what they deliver goes before the end
	defer c.batch.Flush()  // first: nothing is left held
	for {
		ln, err := c.readLine()
		if ln.size >= rawEnvelopeMin {
			Kick() // taking a large line apart, here or in a worker, may run long
		}
		switch {
		case ln.size == 0:
		case !c.server && !ln.over && ln.size >= rawEnvelopeMin:
			// A large response is taken and fixed (settle, Fix) apart, so
			// that the responses to other calls do not wait for it; by at
			// most maxLineWorkers at once.
			c.batch.Flush() // the wait for a worker is not work
			select {
			case c.slots <- struct{}{}:
			case <-c.closed:
				if ln.free != nil {
					ln.free()
				}
				c.readErr = io.EOF
				return
			}
			c.workers.Add(1)
			big := ln // the goroutine's own: ln, which every line is read into, stays on the stack
			go func() {
				defer c.workers.Done()
				defer func() { <-c.slots }()
				c.deliver(c.take(&big), nil)
			}()
		default:
			if !c.deliver(c.take(&ln), &c.batch) {
				c.readErr = io.EOF
				return
			}
		}
		if err != nil {
			c.readErr, ended = err, true
			return
		}
		if !c.lineReady() {
			c.batch.Flush() // reading may wait now
		}
	}
}

// maxLineWorkers bounds the large lines taken apart from the read loop at
// once (see readLoop). Past it reading waits for one to be taken: lines
// that come faster than they are taken (a server flooding large
// notifications) wait in the server's pipe rather than in memory.
const maxLineWorkers = 4

// deliver hands msg, if any, to Read, and reports false when the
// connection was closed first. b is the read loop's batch when the read
// loop calls it, else nil.
func (c *Conn) deliver(msg jsonrpc.Message, b *Batch) bool {
	if msg == nil {
		return true
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && !c.server && isRawID(resp.ID) {
		// A raw call's, never the SDK's: to its caller, or dropped when the
		// call is over (cancelled).
		c.deliverRaw(resp, b)
		return true
	}
	if b != nil {
		b.Flush() // handing msg on may wait for its reader
	}
	Kick() // what the SDK does with msg may run long
	select {
	case c.incoming <- msg:
		return true
	case <-c.closed:
		return false
	}
}

// Write sends msg on a line of its own. A call is remembered until its
// response arrives, so that a response that cannot be taken still ends it.
//
// On the client side the connection numbers the calls on the wire itself,
// the caller's and its own (Start) in one sequence, and gives each
// response its call's own id back (settle): the two never collide, and the
// server sees the ids it would see from the caller alone. A cancellation names
// the call by its number on the wire; one of a call already over is not
// sent, since its number names no call of the SDK's.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && c.hooks.Wrote != nil && !c.hooks.Wrote(resp) { // first: its id is free once the client can see it
		return nil
	}
	req, _ := msg.(*jsonrpc.Request)
	var wire jsonrpc.ID
	if req != nil && !c.server {
		switch {
		case req.IsCall():
			if c.hooks.Calling != nil {
				c.hooks.Calling(req)
			}
			wire = c.NextID()
			c.calls.Add(wire, Pending{Method: req.Method, Tag: TagOf(ctx), ID: req.ID})
			r := *req
			r.ID = wire
			msg = &r
		case req.Method == "notifications/cancelled":
			r, ok := c.calls.cancelled(req)
			if !ok {
				return nil
			}
			msg = r
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		if wire.IsValid() {
			c.calls.Done(wire)
		}
		return fmt.Errorf("mcpproxy: encoding a message: %w", err)
	}
	data = append(data, '\n')
	var args, after []byte
	if req != nil && !c.server {
		if before, a, rest, ok := c.hooks.Splices.find(data); ok && req.Method == "tools/call" {
			data, args, after = before, a, rest
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if args == nil {
		err = c.writeLocked(data)
	} else {
		err = c.writeLocked(data, args, after)
	}
	if err != nil && wire.IsValid() {
		c.calls.Done(wire) // never sent: no response will come
	}
	return err
}

// Waiting returns the ids on the wire of the calls of method (of every
// method when it is "") that the connection wrote and whose response has
// not come, in no order.
func (c *Conn) Waiting(method string) []jsonrpc.ID { return c.calls.waiting(method) }

// NextID returns the id on the wire of the connection's next call.
func (c *Conn) NextID() jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(c.wireSeq.Add(1)))
	return id
}

// Close stops reading and closes the underlying streams, once. Calls
// started with Start and still waiting end with ErrClosed; then the
// Closing hook runs (on the server side, it waits for the calls the layer
// above is answering, as the SDK's session waits for its handlers).
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.endRaw()
		if c.hooks.Closing != nil {
			c.hooks.Closing()
		}
		if c.server { // the responses to the calls Closing waited for
			c.wmu.Lock()
			c.writeLocked()
			c.wmu.Unlock()
		}
		if c.closer != nil {
			c.closeErr = c.closer.Close()
		}
	})
	return c.closeErr
}

// WriteLine writes data, one or more whole lines, at once.
func (c *Conn) WriteLine(data ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(data...)
}

// writeLocked is WriteLine with wmu held. The lines held for c (see
// Batch) go first.
func (c *Conn) writeLocked(data ...[]byte) error {
	held, calls := c.takeHeld()
	n := 0
	for _, d := range data {
		n += len(d)
	}
	var err error
	switch {
	case len(held) > 0 && n <= maxHeld: // one write: net.Buffers writes a file's pieces one by one
		for _, d := range data {
			held = append(held, d...)
		}
		_, err = c.w.Write(held) // held itself, not a slice holding it, which would escape
	case len(held) > 0:
		bufs := net.Buffers(append([][]byte{held}, data...))
		_, err = bufs.WriteTo(c.w)
	case len(data) == 0:
		return nil
	case len(data) == 1:
		_, err = c.w.Write(data[0])
	default:
		bufs := net.Buffers(data)
		_, err = bufs.WriteTo(c.w)
	}
	c.heldWritten(calls, err)
	if len(held) > 0 {
		c.reuseHeld(held, calls)
	}
	if err != nil && c.server {
		c.clientGone(err)
	}
	return err
}

// clientGone ends the connection, on the server side, once writing to the
// client has failed with err: a client that no longer reads (it closed its
// end of the pipe) gets nothing more, and the calls it still sends would
// run for nothing. Most responses are written where no one sees the
// error (a raw call's, one held in a batch), so the connection closes
// itself, as reading would close it at the end of the client's stream.
// A connection already closing is left to its Close.
func (c *Conn) clientGone(err error) {
	select {
	case <-c.closed:
		return
	default:
	}
	c.goneOnce.Do(func() {
		c.Logf("writing to the client failed (%v): closing the connection", err)
		go c.Close() // not here: the caller holds wmu, which Close takes
	})
}

// Logf writes a line to the connection's log, if it has one.
func (c *Conn) Logf(format string, args ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, "agentvalues: "+format+"\n", args...)
	}
}

// tagKey is the context key under which a call carries its tag, from the
// caller to the connection that writes the call (see WithTag).
type tagKey struct{}

// WithTag returns ctx carrying tag, which a connection's Write of a call
// under it keeps with the call and hands to the Fix hook with its result.
func WithTag(ctx context.Context, tag any) context.Context {
	return context.WithValue(ctx, tagKey{}, tag)
}

// TagOf returns the tag ctx carries, or nil.
func TagOf(ctx context.Context) any { return ctx.Value(tagKey{}) }
