package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessage is the largest JSON-RPC message, in bytes, a
// [LineTransport] or [CommandTransport] reads. A message is held in memory
// several times over while the SDK decodes it, so the bound is what keeps
// one oversized result or argument from exhausting memory; 256 MiB is well
// past any result a model can use whole and leaves room for large values
// passed by reference.
//
// A longer line is never held: it is read through and dropped, and the
// request or call it belongs to, when its id can be found, is answered with
// an error that states both sizes.
const DefaultMaxMessage = 256 << 20

// sdkMaxDepth is the deepest nesting the SDK decodes in a message
// (internal/json.defaultMaxDepth); a deeper message fails to decode as a
// whole.
const sdkMaxDepth = 1000

// codeProxy is the JSON-RPC error code of the errors the proxy writes in
// place of a downstream response it could not take (too large, not
// decodable, not a CallToolResult), so that the agent is told the proxy
// refused it rather than that the server answered with an error. It is in
// the range JSON-RPC reserves for implementation-defined server errors.
const codeProxy = -32050

// clipLog bounds how much of a malformed line is quoted in a log line or an
// error message.
const clipLog = 200

// A LineTransport is an [mcp.Transport] that serves one client over
// newline-delimited JSON-RPC on Reader and Writer: the stdio transport of
// MCP, for the proxy command's standard input and output.
//
// Unlike [mcp.IOTransport], one bad line never ends the connection. A line
// that is not JSON is answered with a -32700 parse error; a message that is
// not a single JSON-RPC 2.0 request object (a batch, "jsonrpc":"1.0", an
// object id, two messages on one line, nesting past the 1000 levels the SDK
// decodes) with -32600 (or -32602 for a request whose params cannot be
// decoded), carrying the request's id when it has a usable one; malformed
// notifications and responses, which cannot be answered, go to Log. A UTF-8
// byte order mark and blank lines are skipped. A line longer than
// MaxMessage is read through without being held and answered with -32600.
//
// A LineTransport is used for one connection; the connection is safe for
// concurrent use, as [mcp.Connection] requires.
type LineTransport struct {
	// Reader carries the client's messages, one per line.
	Reader io.Reader
	// Writer receives the messages for the client, one per line.
	Writer io.Writer
	// MaxMessage bounds the length in bytes of one inbound line. Zero means
	// DefaultMaxMessage; negative means no bound.
	MaxMessage int
	// Log receives one line for each inbound message that could not be
	// answered (a malformed notification or response). Nil discards them.
	Log io.Writer

	raw rawCaller // set by Proxy.Run and Gateway.Run on their copy: see call_rawcall.go
}

// Connect returns the connection over Reader and Writer. Closing it does not
// close them.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("mcpproxy: LineTransport needs a Reader and a Writer")
	}
	c := newLineConn(t.Reader, t.Writer, nil, t.MaxMessage, true, t.Log)
	if t.raw != nil {
		u := newRawUpstream(t.raw, c)
		c.hooks = hooks{take: u.take, wrote: u.wrote, readEnded: u.readEnded, closing: u.wait}
	}
	return c, nil
}

// A lineConn is a connection of newline-delimited JSON-RPC messages that
// survives bad input. On the server side (facing a client) it answers
// malformed requests itself; on the client side (facing a server) it skips
// lines that are not JSON-RPC, logging them, and answers the proxy's own
// pending calls with an error when their response cannot be taken.
type lineConn struct {
	r      *bufio.Reader
	w      io.Writer
	closer io.Closer // closes what Read and Write use; may be nil
	max    int       // bound on an inbound line; negative: none
	server bool
	log    io.Writer // may be nil

	hooks hooks // what the layers above see and change; set before the first Read

	calls callTracker // client side: this connection's calls awaiting a response

	rawWait sync.Map      // client side: jsonrpc.ID -> *rawPending, the raw calls awaiting a response
	rawSeq  atomic.Uint64 // client side: numbers the raw calls' own ids
	wireSeq atomic.Int64  // client side: numbers the calls on the wire

	start    sync.Once
	incoming chan jsonrpc.Message
	workers  sync.WaitGroup // messages being taken apart from the read loop
	slots    chan struct{}  // one per worker running: at most maxLineWorkers
	readErr  error          // why reading stopped; valid once readDone is closed
	readDone chan struct{}  // closed when the read loop has stopped

	wmu sync.Mutex // serializes writes

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// hooks are how the layers above a lineConn see what it reads and writes,
// and change it, without the connection knowing them. Each may be nil.
// They are set before the first Read.
type hooks struct {
	// fix (client side) rewrites the result of a response before it is
	// delivered, or refuses it with an error that replaces the response;
	// it is given the method and tag of the call the response answers
	// (see [Proxy.fixResult]).
	fix fixFunc
	// outline (client side) is what fix is given of a large result's
	// outline (see resultLine).
	outline outline
	// calling (client side) is shown each call Write sends, before it is
	// renumbered.
	calling func(req *jsonrpc.Request)
	// take (server side) is shown each request read before it is
	// delivered; when it reports true the request is not delivered: the
	// layer above answers it (see rawUpstream).
	take func(req *jsonrpc.Request) bool
	// wrote (server side) is shown each response before Write writes it.
	wrote func(resp *jsonrpc.Response)
	// readEnded (server side) is called once the peer's side of the
	// stream has ended, after the read loop has stopped.
	readEnded func()
	// closing (server side) is called by Close before it closes the
	// streams, and may wait (for the calls the layer above is answering).
	closing func()
}

func newLineConn(r io.Reader, w io.Writer, closer io.Closer, max int, server bool, log io.Writer) *lineConn {
	if max == 0 {
		max = DefaultMaxMessage
	}
	return &lineConn{
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

func (c *lineConn) SessionID() string { return "" }

// Read returns the next message. Lines that yield no message (blank, or
// malformed and answered or logged) are skipped. The read loop starts with
// the first Read, so hooks and log may be set until then.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
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

// broken reports whether reading has stopped: the peer closed its output or
// the stream failed.
func (c *lineConn) broken() bool {
	select {
	case <-c.readDone:
		return true
	default:
		return false
	}
}

func (c *lineConn) readLoop() {
	ended := false // the stream ended, rather than the connection closing
	defer func() {
		if ended && c.hooks.readEnded != nil {
			c.hooks.readEnded() // last: a raw call it cancels sees broken()
		}
	}()
	// readDone first: a call failed by the end of incoming sees broken().
	defer close(c.incoming)
	defer c.endRaw() // after readDone: a raw call stored later sees broken()
	defer close(c.readDone)
	defer c.workers.Wait() // what they deliver goes before the end
	for {
		ln, err := c.readLine()
		switch {
		case ln.size == 0:
		case !c.server && !ln.over && ln.size >= rawEnvelopeMin:
			// A large response is taken and stored (settle, fix) apart, so
			// that the responses to other calls do not wait for it; by at
			// most maxLineWorkers at once.
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
			go func() {
				defer c.workers.Done()
				defer func() { <-c.slots }()
				c.deliver(c.take(&ln))
			}()
		default:
			if !c.deliver(c.take(&ln)) {
				c.readErr = io.EOF
				return
			}
		}
		if err != nil {
			c.readErr, ended = err, true
			return
		}
	}
}

// maxLineWorkers bounds the large lines taken apart from the read loop at
// once (see readLoop). Past it reading waits for one to be taken: lines
// that come faster than they are taken (a server flooding large
// notifications) wait in the server's pipe rather than in memory.
const maxLineWorkers = 4

// deliver hands msg, if any, to Read, and reports false when the
// connection was closed first.
func (c *lineConn) deliver(msg jsonrpc.Message) bool {
	if msg == nil {
		return true
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && !c.server && isRawID(resp.ID) {
		// A raw call's, never the SDK's: to its caller, or dropped when the
		// call is over (cancelled).
		c.deliverRaw(resp)
		return true
	}
	select {
	case c.incoming <- msg:
		return true
	case <-c.closed:
		return false
	}
}

// A line is one inbound line: whole, or, past the bound, only its size and
// its first and last bytes (enough to find its id).
type line struct {
	data       []byte // the whole line, without its newline; nil when over
	size       int
	over       bool
	head, tail []byte // of an over line
	free       func() // when not nil, frees data, which nothing may hold then (see longLine)
}

// idWindow is how much of the start and of the end of an oversized line is
// kept to find its id.
const idWindow = 4 << 10

// readLine reads up to the next newline, or the end of the stream. Past the
// bound it keeps only the line's head and tail. A line longer than
// lineBlock is read as a longLine.
func (c *lineConn) readLine() (line, error) {
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
			ln.tail = appendTail(ln.tail, chunk)
		case c.max >= 0 && ln.size > c.max:
			ln.over = true
			if inLong {
				ln.head, ln.tail = long.edges(idWindow)
				long.drop()
				ln.tail = appendTail(ln.tail, chunk)
			} else {
				whole := append(ln.data, chunk...)
				ln.head = bytes.Clone(whole[:min(idWindow, len(whole))])
				ln.tail = appendTail(nil, whole)
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

// appendBlocks appends b to the blocks of a long line.
func appendBlocks(blocks [][]byte, b []byte) [][]byte {
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

// joinBlocks returns head and the blocks after it as one slice of their
// length.
func joinBlocks(head []byte, blocks [][]byte) []byte {
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

// appendTail appends b to tail, keeping only the last idWindow bytes.
func appendTail(tail, b []byte) []byte {
	if len(b) >= idWindow {
		return append(tail[:0], b[len(b)-idWindow:]...)
	}
	tail = append(tail, b...)
	if len(tail) > idWindow {
		tail = append(tail[:0], tail[len(tail)-idWindow:]...)
	}
	return tail
}

// take returns the message of a line (see message), and frees the line
// when it is to be freed, copying first what the message holds of it.
func (c *lineConn) take(ln *line) jsonrpc.Message {
	msg := c.message(*ln)
	if ln.free != nil {
		msg = detach(msg, ln.data)
		ln.free()
		ln.data, ln.free = nil, nil // no pointer into the unmapped range is left for the collector to find
	}
	return msg
}

// bom is the UTF-8 byte order mark, which some writers put before a line.
var bom = []byte("\xef\xbb\xbf")

// message turns one line into the message to deliver, or nil when there is
// none: the line was blank, or was malformed and has been answered or
// logged.
func (c *lineConn) message(ln line) jsonrpc.Message {
	if ln.over {
		return c.tooLarge(ln)
	}
	data := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(ln.data), bom))
	if len(data) == 0 {
		return nil
	}
	mapped := ln.free != nil // a line in a mapping of its own
	env, ok := plainEnvelope(data, c.hooks.outline)
	if !ok && !c.server && !utf8.Valid(data) {
		// A string holding bytes that are not UTF-8, which the scan
		// refuses and the SDK takes: read as the SDK reads them, each such
		// byte as U+FFFD, whichever path takes the message (see doc.go).
		data = jsontext.AppendValidUTF8(make([]byte, 0, len(data)+len(data)/8+8), data)
		mapped = false
		env, ok = plainEnvelope(data, c.hooks.outline)
	}
	if ok {
		if mapped {
			env.line.release = releasePages
		}
		if msg := c.fromEnvelope(env); msg != nil {
			return c.offer(msg)
		}
	}
	if c.server && !json.Valid(data) {
		// The SDK decodes the first value of a line and drops the rest.
		c.reply(nil, jsonrpc.CodeParseError, "Parse error: "+jsonProblem(data))
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err == nil {
		if resp, ok := msg.(*jsonrpc.Response); ok && !c.server {
			// The SDK makes an integer of any number id (8.5 is 8): the id
			// as written must be one idOf takes, or it names no call.
			raw, id, exact := responseID(data)
			if !exact || !c.settle(resp, resultLine{}) {
				// Its id is no call's (any more: a call cancelled is
				// forgotten), and names none of the SDK's.
				c.stray(raw, id, exact)
				return nil
			}
		}
		return c.offer(msg)
	}
	if c.server {
		c.answer(data, err)
		return nil
	}
	return c.salvage(data, err)
}

// offer shows a request from the client to the raw path, if any, and
// returns the message to deliver: nil when the raw path took it.
func (c *lineConn) offer(msg jsonrpc.Message) jsonrpc.Message {
	if req, ok := msg.(*jsonrpc.Request); ok && c.hooks.take != nil && c.hooks.take(req) {
		return nil
	}
	return msg
}

// rawEnvelopeMin is the size from which the client side takes a response
// apart from the read loop.
const rawEnvelopeMin = 64 << 10

// An envelope is the members of a plain JSON-RPC message, read from its
// bytes: slices of the line, nil when absent.
type envelope struct {
	id, method, params, result []byte

	line resultLine // of a response's result
}

// A resultLine is what fix is told of the line a result came in: the
// outline of the result the hooks asked for (see outline), its spans in
// the result and its depths from the result's members (1), nil when the
// line's scan made none; and, for a line in a mapping of its own, the
// function that gives pages of it back (releasePages), nil otherwise.
type resultLine struct {
	outline []jsontext.Part
	release func([]byte)
}

// plainEnvelope reads data as a plain JSON-RPC 2.0 message: a valid object
// whose members are "jsonrpc":"2.0" and any of id, method, params and
// result, with no member twice, no null and no escape in the method. The
// SDK's decoding costs a full scan and copy of the message and a 32 KiB
// buffer per call; anything but a plain message (errors, extra members,
// keys in another case, which the SDK matches) reports false and is left
// to the SDK, as is a message nested deeper than sdkMaxDepth, so that it
// fails as the SDK fails it.
//
// A line of outlineMin bytes or more has its result outlined as ol says.
func plainEnvelope(data []byte, ol outline) (envelope, bool) {
	return scanEnvelope(data, ol, len(data) >= outlineMin)
}

// scanEnvelope is plainEnvelope, outlining the result as ol says when
// outlined is set.
func scanEnvelope(data []byte, ol outline, outlined bool) (envelope, bool) {
	var env envelope
	if data[0] != '{' {
		return env, false
	}
	// One pass validates the line, measures its depth and finds its
	// members, which are never more than envelopeMembers; for a large
	// line, it also outlines a result, so that fix finds the large values
	// in it without reading past them again.
	lim := jsontext.Limits{Head: envelopeMembers + 1}
	if outlined && ol.envelope != nil {
		lim.Outline, lim.Descend = ol.max, ol.envelope
	}
	_, sh, err := jsontext.Scan(data, lim)
	if err != nil || sh.Count > envelopeMembers || sh.Depth > sdkMaxDepth {
		return env, false
	}
	var version []byte
	for _, c := range sh.Head {
		k, v := c.Key.Of(data), c.Val.Of(data)
		var at *[]byte
		switch {
		case jsontext.KeyEquals(k, "jsonrpc"):
			at = &version
		case jsontext.KeyEquals(k, "id"):
			at = &env.id
		case jsontext.KeyEquals(k, "method"):
			at = &env.method
		case jsontext.KeyEquals(k, "params"):
			at = &env.params
		case jsontext.KeyEquals(k, "result"):
			at = &env.result
		}
		if at == nil || *at != nil || v[0] == 'n' {
			return env, false
		}
		*at = v
	}
	if env.result != nil && sh.Outline != nil {
		env.line.outline = resultOutline(sh.Outline, offsetIn(data, env.result))
	}
	ok := version != nil && version[0] == '"' && jsontext.KeyEquals(version, "2.0") &&
		(env.method == nil || env.method[0] == '"' && bytes.IndexByte(env.method, '\\') < 0) &&
		(env.method == nil) != (env.result == nil) && (env.params == nil || env.method != nil)
	return env, ok
}

// envelopeMembers is the most members a plain envelope has: jsonrpc, id,
// method, params and result, each once.
const envelopeMembers = 5

// outlineMin is the size from which a line's scan outlines its result:
// below it, reading a result again costs less than the outline.
const outlineMin = 64 << 10

// An outline says what a client-side connection outlines of the result of
// a response line of outlineMin bytes or more as it scans the line, for
// fix (see resultLine): at most max parts, of the containers that descend
// names (its depths are from the result's members, 1). The zero value
// outlines nothing.
type outline struct {
	max      int
	descend  jsontext.Descend
	envelope jsontext.Descend // descend from the envelope's members
}

// newOutline returns the outline of at most max parts that descend names.
func newOutline(max int, descend jsontext.Descend) outline {
	return outline{max: max, descend: descend, envelope: func(depth int, key []byte) bool {
		if depth == 1 {
			return key != nil && jsontext.KeyEquals(key, "result")
		}
		return descend(depth-1, key)
	}}
}

// resultOf returns the result of the plain response line, and its outline
// as fix is told it for a line of outlineMin bytes or more whatever the
// line's size (nil when the result has more parts than ol keeps); ok is
// false when line is not a plain response.
func (ol outline) resultOf(line []byte) (result []byte, parts []jsontext.Part, ok bool) {
	env, ok := scanEnvelope(line, ol, true)
	if !ok || env.result == nil {
		return nil, nil, false
	}
	return env.result, env.line.outline, true
}

// resultOutline returns the parts of the outline of an envelope that are
// in its result, which starts at offset at: their spans made relative to
// the result, their depths to its members. It reuses ol's memory.
func resultOutline(ol []jsontext.Part, at int) []jsontext.Part {
	out := ol[:0]
	for _, p := range ol {
		if p.Depth < 2 {
			continue
		}
		p.Depth--
		p.Val.Start, p.Val.End = p.Val.Start-at, p.Val.End-at
		if p.Key != (jsontext.Span{}) {
			p.Key.Start, p.Key.End = p.Key.Start-at, p.Key.End-at
		}
		out = append(out, p)
	}
	return out
}

// fromEnvelope makes the message the SDK would decode from a plain
// envelope: a request or notification, or, on the client side, a response
// to a pending call, which it settles. It returns nil for anything else,
// which the SDK is left to decode.
func (c *lineConn) fromEnvelope(env envelope) jsonrpc.Message {
	var id jsonrpc.ID
	if env.id != nil {
		var ok bool
		if id, ok = idOf(env.id); !ok {
			return nil
		}
	}
	if env.method != nil {
		req := &jsonrpc.Request{ID: id, Method: string(env.method[1 : len(env.method)-1])}
		if env.params != nil {
			req.Params = json.RawMessage(env.params)
		}
		return req
	}
	if _, pending := c.calls.method(id); c.server || !id.IsValid() || !pending {
		return nil
	}
	// The result is a slice of the line: the SDK would scan it again and
	// copy it.
	resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(env.result)}
	if !c.settle(resp, env.line) {
		// The call ended (cancelled) since it was found pending: its
		// response goes where that of a call ended before goes (nowhere),
		// not to the SDK under its number on the wire, which may be one of
		// the SDK's own ids.
		return nil
	}
	return resp
}

// settle ends the call a response answers: it gives the response the
// call's own id in place of the one on the wire, and applies fix (to which
// it passes what it knows of the result's line). It reports false when
// the response answers no pending call.
func (c *lineConn) settle(resp *jsonrpc.Response, line resultLine) bool {
	call, ok := c.calls.done(resp.ID)
	if !ok {
		return false
	}
	resp.ID = call.id
	if c.hooks.fix == nil || resp.Error != nil {
		return true
	}
	res, werr := c.hooks.fix(call.method, call.tag, resp.Result, line)
	if werr != nil {
		resp.Result, resp.Error = nil, werr
		return true
	}
	resp.Result = res
	return true
}

// answer replies to a malformed message from the client, or logs it when
// it cannot be answered.
func (c *lineConn) answer(data []byte, decodeErr error) {
	if !json.Valid(data) {
		c.reply(nil, jsonrpc.CodeParseError, "Parse error: "+jsonProblem(data))
		return
	}
	switch data[0] {
	case '[':
		c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send each message on a line of its own")
		return
	case '{':
	default:
		c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a JSON-RPC message is a JSON object, not "+kindName(data[0]))
		return
	}
	id, idOK := messageID(data)
	method, hasMethod := jsontext.Member(data, "method")
	version, _ := jsontext.Member(data, "jsonrpc")
	rawID, hasID := jsontext.Member(data, "id")
	switch {
	case len(version) == 0 || version[0] != '"' || !jsontext.KeyEquals(version, "2.0"):
		c.replyOrLog(id, idOK, hasMethod, jsonrpc.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
	case !idOK && hasID:
		c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: an id is a string or a number, not "+clipText(string(rawID)))
	case hasMethod && method[0] != '"':
		c.replyOrLog(id, idOK, true, jsonrpc.CodeInvalidRequest, `Invalid Request: "method" must be a string`)
	case hasMethod:
		c.replyOrLog(id, idOK, true, jsonrpc.CodeInvalidParams, "Invalid params: "+decodeProblem(data, decodeErr))
	default:
		c.logf("ignored a malformed response from the client: %s", decodeProblem(data, decodeErr))
	}
}

// replyOrLog answers a request that has an id; a notification, or a
// message that is not a request, cannot be answered and is logged.
func (c *lineConn) replyOrLog(id jsonrpc.ID, idOK, request bool, code int64, msg string) {
	if idOK && request {
		c.reply(&id, code, msg)
		return
	}
	c.logf("ignored a malformed message from the client: %s", msg)
}

// reply writes a JSON-RPC error response with id (nil: null).
func (c *lineConn) reply(id *jsonrpc.ID, code int64, msg string) {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	if id == nil || !id.IsValid() {
		b = append(b, "null"...)
	} else {
		raw, _ := json.Marshal(id.Raw())
		b = append(b, raw...)
	}
	b = fmt.Appendf(b, `,"error":{"code":%d,"message":`, code)
	m, _ := json.Marshal(msg)
	b = append(b, m...)
	b = append(b, "}}\n"...)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(b) // a failed write shows on the next one the session makes
}

// salvage handles a line from the server that the SDK cannot decode. A
// line that is not JSON is, when it begins as a response to a pending call
// (its id found as tooLarge finds one), the end of that call, with an
// error, so the call does not wait for ever; any other (a log line on
// standard output) is logged and skipped. A response to a pending call is
// rebuilt from its parts when it is only too deep for the SDK (fix,
// applied first, may make it shallow enough) and otherwise answered with
// an error; anything else is logged and skipped.
func (c *lineConn) salvage(data []byte, decodeErr error) jsonrpc.Message {
	if !json.Valid(data) {
		if id, ok := brokenResponseID(data); ok {
			if call, pending := c.calls.done(id); pending {
				return &jsonrpc.Response{ID: call.id, Error: &jsonrpc.Error{Code: codeProxy, Message: "the downstream server's response is " + jsonProblem(data)}}
			}
		}
		c.logf("ignored a line from the downstream server that is not JSON-RPC: %s", clipText(string(data)))
		return nil
	}
	id, idOK := messageID(data)
	if _, hasMethod := jsontext.Member(data, "method"); !idOK || hasMethod {
		c.logf("ignored a message from the downstream server that could not be decoded: %s", decodeProblem(data, decodeErr))
		return nil
	}
	if _, pending := c.calls.method(id); !pending {
		c.logf("ignored a response from the downstream server that could not be decoded: %s", decodeProblem(data, decodeErr))
		return nil
	}
	resp := &jsonrpc.Response{ID: id}
	result, hasResult := jsontext.Member(data, "result")
	_, hasError := jsontext.Member(data, "error")
	version, _ := jsontext.Member(data, "jsonrpc")
	if hasResult && !hasError && len(version) > 0 && version[0] == '"' && jsontext.KeyEquals(version, "2.0") {
		resp.Result = json.RawMessage(result)
		if !c.settle(resp, resultLine{}) { // ended since it was found pending: see fromEnvelope
			return nil
		}
		if resp.Error != nil {
			return resp
		}
		// The depth is the fixed result's, what the SDK would be given.
		d := jsontext.Depth(resp.Result) + 1 // in the message
		if d <= sdkMaxDepth {
			return resp
		}
		resp.Result = nil
		resp.Error = &jsonrpc.Error{Code: codeProxy, Message: fmt.Sprintf("the downstream server's response could not be decoded: the message nests %d levels deep; at most %d can be decoded", d, sdkMaxDepth)}
		return resp
	} else {
		call, _ := c.calls.done(id)
		resp.ID = call.id
	}
	resp.Result = nil
	resp.Error = &jsonrpc.Error{Code: codeProxy, Message: "the downstream server's response could not be decoded: " + decodeProblem(data, decodeErr)}
	return resp
}

// stray drops a response from the server whose id, raw as written and
// id as idOf makes it (exact: it could), names no call in flight,
// logging it unless it names, exactly, a call this connection sent that
// ended before its response came (cancelled). Ids are matched by type and
// value, as JSON-RPC has them: the string "8" is not the number 8, nor is
// 8.5; a response with either is dropped, and call 8 goes on waiting for
// its own.
func (c *lineConn) stray(raw []byte, id jsonrpc.ID, exact bool) {
	if n, ok := id.Raw().(int64); exact && ok && n > 0 && n <= c.wireSeq.Load() {
		return
	}
	c.logf("ignored a response from the downstream server: its id %s names no call in flight", clipText(string(raw)))
}

// responseID returns the id of the message data, which the SDK decoded,
// as written and as idOf makes it; exact is false when idOf does not take
// it (or data has none).
func responseID(data []byte) (raw []byte, id jsonrpc.ID, exact bool) {
	// encoding/json, as the SDK, takes invalid UTF-8 in a string; the
	// structure is all Member needs.
	if !json.Valid(data) {
		return nil, id, false
	}
	raw, ok := jsontext.Member(data, "id")
	if !ok {
		return nil, id, false
	}
	id, exact = idOf(raw)
	return raw, id, exact
}

// tooLarge handles a line over the bound: the server side answers the
// request it carries, the client side the call it answers, when the id can
// be found in the line's head or tail.
func (c *lineConn) tooLarge(ln line) jsonrpc.Message {
	why := fmt.Sprintf("the message is %d bytes, over the limit of %d", ln.size, c.max)
	id, ok := findID(ln.head, ln.tail)
	if c.server {
		if ok {
			c.reply(&id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why)
		} else {
			c.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why+" (and its id could not be found)")
		}
		return nil
	}
	if ok {
		if call, pending := c.calls.done(id); pending {
			return &jsonrpc.Response{ID: call.id, Error: &jsonrpc.Error{Code: codeProxy, Message: "the downstream server's response was dropped: " + why}}
		}
	}
	c.logf("dropped a message from the downstream server: %s", why)
	return nil
}

// Write sends msg on a line of its own. A call is remembered until its
// response arrives, so that a response that cannot be taken still ends it.
//
// On the client side the connection numbers the calls on the wire itself,
// the SDK's and the raw path's (call_rawcall.go) in one sequence, and gives each
// response its call's own id back (settle): the two never collide, and the
// server sees the ids it would see from the SDK alone. A cancellation names
// the call by its number on the wire; one of a call already over is not
// sent, since its number names no call of the SDK's.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && c.hooks.wrote != nil {
		c.hooks.wrote(resp) // first: its id is free once the client can see it
	}
	req, _ := msg.(*jsonrpc.Request)
	var wire jsonrpc.ID
	if req != nil && !c.server {
		switch {
		case req.IsCall():
			if c.hooks.calling != nil {
				c.hooks.calling(req)
			}
			wire = c.nextWireID()
			c.calls.add(wire, pendingCall{method: req.Method, tag: tagOf(ctx), id: req.ID})
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
			c.calls.done(wire)
		}
		return fmt.Errorf("mcpproxy: encoding a message: %w", err)
	}
	data = append(data, '\n')
	var args, after []byte
	if req != nil && !c.server {
		if before, a, rest, ok := spliced(data); ok && req.Method == "tools/call" {
			data, args, after = before, a, rest
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if args == nil {
		_, err = c.w.Write(data)
	} else {
		bufs := net.Buffers{data, args, after}
		_, err = bufs.WriteTo(c.w)
	}
	if err != nil && wire.IsValid() {
		c.calls.done(wire) // never sent: no response will come
	}
	return err
}

// nextWireID returns the id on the wire of the connection's next call.
func (c *lineConn) nextWireID() jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(c.wireSeq.Add(1)))
	return id
}

// Close stops reading and closes the underlying streams, once.
// On the server side it first waits for the calls the raw path is
// answering, as the SDK's session waits for its handlers.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.endRaw()
		if c.hooks.closing != nil {
			c.hooks.closing()
		}
		if c.closer != nil {
			c.closeErr = c.closer.Close()
		}
	})
	return c.closeErr
}

// writeLine writes data, one or more whole lines, at once.
func (c *lineConn) writeLine(data ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(data...)
}

// writeLocked is writeLine with wmu held.
func (c *lineConn) writeLocked(data ...[]byte) error {
	if len(data) == 1 {
		_, err := c.w.Write(data[0])
		return err
	}
	bufs := net.Buffers(data)
	_, err := bufs.WriteTo(c.w)
	return err
}

func (c *lineConn) logf(format string, args ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, "agentvalues: "+format+"\n", args...)
	}
}

// A callTracker remembers each call awaiting its response, by its id on
// the wire: its method, its tag, and its own id. A
// call is forgotten when its response comes, when it is cancelled, or when
// it could not be sent.
type callTracker struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]pendingCall
	wire    map[jsonrpc.ID]jsonrpc.ID // the wire id of each pending call, by its own id
}

// A pendingCall is a call awaiting its response: its method, its tag
// (what the caller gave it for fix: see withTag), and its own id, which
// its response gets back (the same as on the wire on a connection that
// does not renumber calls).
type pendingCall struct {
	method string
	tag    any
	id     jsonrpc.ID
}

// fixFunc is the type of [Proxy.fixResult]: it is given a response's
// result with the method and tag of the call it answers.
type fixFunc func(method string, tag any, result json.RawMessage, line resultLine) (json.RawMessage, *jsonrpc.Error)

// tagKey is the context key under which a call carries its tag, from the
// caller to the connection that writes the call (see withTag).
type tagKey struct{}

// withTag returns ctx carrying tag, which a connection's Write of a call
// under it keeps with the call and hands to fix with its result.
func withTag(ctx context.Context, tag any) context.Context {
	return context.WithValue(ctx, tagKey{}, tag)
}

// tagOf returns the tag ctx carries, or nil.
func tagOf(ctx context.Context) any { return ctx.Value(tagKey{}) }

// add remembers call, sent as wire.
func (t *callTracker) add(wire jsonrpc.ID, call pendingCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[jsonrpc.ID]pendingCall)
		t.wire = make(map[jsonrpc.ID]jsonrpc.ID)
	}
	t.pending[wire] = call
	t.wire[call.id] = wire
}

// method returns the method of the pending call id.
func (t *callTracker) method(id jsonrpc.ID) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.pending[id]
	return m.method, ok
}

// done forgets the pending call sent as id and returns it.
func (t *callTracker) done(id jsonrpc.ID) (pendingCall, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.pending[id]
	if ok {
		delete(t.pending, id)
		if t.wire[m.id] == id {
			delete(t.wire, m.id)
		}
	}
	return m, ok
}

// cancelled returns the notifications/cancelled request req with the call
// it names by its own id named by its id on the wire, and forgets the
// call; it reports false when no pending call has that id (it is over).
// A request it cannot read is returned as it is.
func (t *callTracker) cancelled(req *jsonrpc.Request) (*jsonrpc.Request, bool) {
	if len(req.Params) == 0 || jsontext.Valid(req.Params) != nil {
		return req, true
	}
	v, ok := jsontext.Member(req.Params, "requestId")
	if !ok {
		return req, true
	}
	id, ok := idOf(v)
	if !ok {
		return req, true
	}
	t.mu.Lock()
	wire, ok := t.wire[id]
	t.mu.Unlock()
	if !ok {
		return nil, false
	}
	t.done(wire)
	raw, _ := json.Marshal(wire.Raw())
	at := offsetIn(req.Params, v)
	params := append([]byte(nil), req.Params[:at]...)
	params = append(params, raw...)
	params = append(params, req.Params[at+len(v):]...)
	r := *req
	r.Params = params
	return &r, true
}

// forgetCancelled forgets the call a notifications/cancelled request names:
// the server need not answer it, and its entry would keep its store.
func (t *callTracker) forgetCancelled(req *jsonrpc.Request) {
	if req.Method != "notifications/cancelled" || len(req.Params) == 0 || jsontext.Valid(req.Params) != nil {
		return
	}
	if v, ok := jsontext.Member(req.Params, "requestId"); ok {
		if id, ok := idOf(v); ok {
			t.done(id)
		}
	}
}

// messageID returns the id of the valid JSON object data, if it has a
// usable one (a string or a number).
func messageID(data []byte) (jsonrpc.ID, bool) {
	v, ok := jsontext.Member(data, "id")
	if !ok {
		return jsonrpc.ID{}, false
	}
	return idOf(v)
}

// idOf makes an id of the valid JSON value v, a string or a number. A
// number must be an integer of at most maxExactID in magnitude (8.0 is 8):
// the SDK makes an integer of any number, so that 8.5 would name call 8.
func idOf(v []byte) (jsonrpc.ID, bool) {
	var raw any
	switch v[0] {
	case '"':
		raw = string(jsontext.AppendUnquoted(nil, v))
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(v), 64) // as the SDK decodes an id
		if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExactID {
			return jsonrpc.ID{}, false
		}
		raw = f
	default:
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(raw)
	return id, err == nil && id.IsValid()
}

// maxExactID is the largest integer magnitude up to which every integer
// is a float64, as the SDK decodes a number id: past it two ids may be
// decoded as one.
const maxExactID = 1 << 53

// findID finds the top-level id of a message known only by its first and
// last bytes: in the head when the id comes before the large part (as the Go
// SDK writes it), else as the last member of the object (as the TypeScript
// SDK writes it).
func findID(head, tail []byte) (jsonrpc.ID, bool) {
	if id, ok := headID(head); ok {
		return id, true
	}
	return tailID(tail)
}

// headID looks for "id" among the top-level members of the object whose
// first bytes are head, those that end before head does.
func headID(head []byte) (jsonrpc.ID, bool) {
	found, ok := jsonrpc.ID{}, false
	var w jsontext.Walker
	w.Walk(head, func(start, end int) error { // head is cut: the walk ends in an error
		if w.Depth() == 1 && end < len(head) && head[jsontext.SkipSpace(head, 0)] == '{' && w.Pointer(head) == "/id" {
			found, ok = idOf(head[start:end])
			return errFound
		}
		return nil
	})
	return found, ok
}

// brokenResponseID finds the id of a line that is not valid JSON but
// begins as a response: an object whose id comes before the fault, with
// no method before it, or whose id ends it (see tailID).
func brokenResponseID(data []byte) (jsonrpc.ID, bool) {
	if data[0] != '{' {
		return jsonrpc.ID{}, false
	}
	found, ok, method := jsonrpc.ID{}, false, false
	var w jsontext.Walker
	w.Walk(data, func(start, end int) error { // data is not JSON: the walk ends in an error
		if w.Depth() == 1 {
			switch w.Pointer(data) {
			case "/id":
				found, ok = idOf(data[start:end])
			case "/method":
				method = true
			}
		}
		return nil
	})
	if method {
		return jsonrpc.ID{}, false
	}
	if ok {
		return found, true
	}
	return tailID(data)
}

// errFound ends a walk that found what it looked for.
var errFound = errors.New("found")

// tailID matches `,"id":<number or string>}` at the end of tail.
func tailID(tail []byte) (jsonrpc.ID, bool) {
	t := bytes.TrimRight(tail, " \t\r\n")
	if len(t) == 0 || t[len(t)-1] != '}' {
		return jsonrpc.ID{}, false
	}
	t = bytes.TrimRight(t[:len(t)-1], " \t\r\n")
	var start int
	switch {
	case len(t) > 0 && t[len(t)-1] == '"':
		start = -1
		for i := len(t) - 2; i >= 0; i-- {
			if t[i] != '"' {
				continue
			}
			bs := 0
			for j := i - 1; j >= 0 && t[j] == '\\'; j-- {
				bs++
			}
			if bs%2 == 0 {
				start = i
				break
			}
		}
		if start < 0 {
			return jsonrpc.ID{}, false
		}
	default:
		start = len(t)
		for start > 0 && bytes.IndexByte([]byte("0123456789+-.eE"), t[start-1]) >= 0 {
			start--
		}
		if start == len(t) {
			return jsonrpc.ID{}, false
		}
	}
	val := t[start:]
	rest := bytes.TrimRight(t[:start], " \t\r\n")
	if !bytes.HasSuffix(rest, []byte(":")) {
		return jsonrpc.ID{}, false
	}
	rest = bytes.TrimRight(rest[:len(rest)-1], " \t\r\n")
	if !bytes.HasSuffix(rest, []byte(`"id"`)) {
		return jsonrpc.ID{}, false
	}
	rest = bytes.TrimRight(rest[:len(rest)-4], " \t\r\n")
	if !bytes.HasSuffix(rest, []byte(",")) && !bytes.HasSuffix(rest, []byte("{")) {
		return jsonrpc.ID{}, false
	}
	if jsontext.Valid(val) != nil {
		return jsonrpc.ID{}, false
	}
	return idOf(val)
}

// jsonProblem says why data is not a JSON value.
func jsonProblem(data []byte) string {
	var v json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		return "not valid JSON: " + clipText(err.Error())
	}
	return fmt.Sprintf("not one JSON value: more data after byte %d (one message per line)", dec.InputOffset())
}

// decodeProblem says why the SDK could not decode the valid JSON data.
func decodeProblem(data []byte, err error) string {
	if d := jsontext.Depth(data); d > sdkMaxDepth {
		return fmt.Sprintf("the message nests %d levels deep; at most %d can be decoded", d, sdkMaxDepth)
	}
	return clipText(err.Error())
}

// kindName names the kind of JSON value that starts with c.
func kindName(c byte) string {
	switch c {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "a number"
}

// clipText clips s to clipLog bytes, quoting it, for a log line or an error.
func clipText(s string) string {
	if len(s) <= clipLog {
		return strconv.Quote(s)
	}
	cut := clipLog
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", len(s))
}
