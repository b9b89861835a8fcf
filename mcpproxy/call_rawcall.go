package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw call route: see the package documentation (How a call travels)
// for what it takes, its steps and the files that hold them.

// A rawCaller is what answers tools/call requests on the raw call route: a
// [Proxy], or a [Gateway] for its servers.
type rawCaller interface {
	// rawCall readies the call req for req.start, which makes it, and
	// reports true; false when the call is to take the SDK route.
	rawCall(req *rawRequest) bool
}

// A rawPlan is what rawCall found for a call: the proxy that makes it,
// the tool, the link to its server, and the SDK client's _meta that the
// request carries (see callToolRaw).
type rawPlan struct {
	p        *Proxy
	m        *mirroredTool
	l        *link
	downMeta *sdkMeta
}

// start makes the call r, which rawCall readied, and hands its response
// line (of the id r.id) to done, once. ctx is cancelled when the client
// cancels the call. start returns once the request is sent (or the call
// has failed): done may be called before it returns, or later on another
// goroutine, among them the one reading the downstream connection (see
// wire.Conn.Start).
func (r *rawRequest) start(ctx context.Context, done rawDone) {
	pl := &r.plan
	pl.p.rawN.Add(1) // here: a call refused after rawCall is not run
	// What the server asks during the call goes to r.ss (over HTTP; on a
	// line connection, to its one session).
	r.end = pl.p.beginCall(ctx, r.ss)
	r.done = done
	pl.p.callToolRaw(ctx, r.vals, pl.m, pl.l, r, pl.downMeta)
}

// rawDone is what a raw call's response line is handed to (see start):
// the session layer that took the call, which writes it. An interface, so
// that the line connection's, a rawTaken, costs no allocation of its own.
type rawDone interface {
	answered(line []byte)
}

// doneFunc is a rawDone of a function.
type doneFunc func(line []byte)

func (f doneFunc) answered(line []byte) { f(line) }

// rawLight bounds the arguments of a call that the goroutine reading the
// client's requests sends downstream itself, when they hold no reference
// ('$' nowhere in them): checking them against the tool's schema and
// writing a line of that size costs microseconds, less than handing the
// call to another goroutine and waking it. A call with references (whose
// resolution may read values back from a durable store, and make a large
// frame) or larger arguments is sent from a worker, so that reading goes on.
const rawLight = 4 << 10

// light reports whether the call req is sent from the reading goroutine:
// see rawLight.
func (r *rawRequest) light() bool {
	return len(r.args) <= rawLight && bytes.IndexByte(r.args, '$') < 0
}

// A rawRequest is a nominal tools/call, read from its params.
type rawRequest struct {
	id   jsonrpc.ID // the client's, which the response line carries
	name string
	args []byte   // the arguments object; nil for none
	meta mcp.Meta // the request's _meta, decoded as the SDK decodes it; nil for none
	// serverInfo, at protocol 2026-07-28, is what the SDK server puts in
	// every result's _meta under mcp.MetaKeyServerInfo; nil before.
	serverInfo json.RawMessage
	// onReader is set when the call is made by the goroutine reading the
	// client (see rawLight), which must not wait for the server to read;
	// the request is then held in that goroutine's batch, sendIn (see
	// wire.Batch).
	onReader bool
	sendIn   *wire.Batch
	// answerIn is the batch of the goroutine handing the response to done
	// (the one reading the server, when the result was taken there: see
	// wire.Call.Done), or nil; it is set just before done is called, on
	// that goroutine, and the response line is held in it.
	answerIn *wire.Batch
	// stop, when not nil, is how the caller cancels the downstream call,
	// directly, when it cancels the call's context (see rawStop); nil:
	// the call watches its context.
	stop *wire.Cancel
	// end and done, set as the call runs, end the call: end what
	// Proxy.beginCall began, and hand the response line to the caller
	// (answerRaw).
	end  begun
	done rawDone
	// doneCopies is set when done is through with the line as it returns
	// (it has written it, or copied it): rawLine may then write the line
	// into the memory of answer, which is reused.
	doneCopies bool
	// answer is the memory the call's answer is made in, from the
	// response on (see rawAnswer); nil before, and for a call that ends
	// without one.
	answer *rawAnswer
	// fixed is the answer fixResult read the response's result into (the
	// line's scan had validated it: see rawDecoded); nil otherwise, when it
	// is read from the response. fixResult may run as the call is
	// cancelled, whose end (Done, with an error) then neither reads nor
	// waits for it: only the Done of the response it was read from, which
	// runs once fixResult has returned, takes it.
	fixed atomic.Pointer[rawAnswer]
	// Over Streamable HTTP (httpfast.go): the session making the call, to
	// which what the server asks during the call goes (see upstreamFor),
	// and its store; nil on a line connection, where rawCall sets vals to
	// the proxy's one store.
	ss   *mcp.ServerSession
	vals *values.SessionValues
	// plan is what rawCall found for the call (see start).
	plan rawPlan
	// frame holds the request's frame when it is one piece (callFrame).
	frame [1][]byte
}

// withRawCalls returns upstream with the raw call route answering for rc when it
// is a *LineTransport (a copy of it), else upstream.
func withRawCalls(upstream mcp.Transport, rc rawCaller) mcp.Transport {
	lt, ok := upstream.(*LineTransport)
	if !ok {
		return upstream
	}
	t := *lt
	t.raw = rc
	return &t
}

// protocolRaw is the first protocol version the raw call route leaves to the SDK:
// from it on, results carry a resultType and requests a per-request _meta.
const protocolRaw = "2026-07-28"

// A rawUpstream is the raw call route's side of one upstream line connection:
// what it knows of the session, and the calls it is answering.
type rawUpstream struct {
	caller rawCaller
	conn   *wire.Conn
	ctx    context.Context // ended by wait, when the connection closes
	cancel context.CancelFunc
	calls  sync.WaitGroup
	work   chan func() // to an idle worker; see run

	mu       sync.Mutex
	initID   *jsonrpc.ID             // the initialize request's, until it is answered
	version  string                  // the protocol version the initialize response gave
	ready    bool                    // initialized at a version the raw call route takes
	discover map[jsonrpc.ID][]byte   // server/discover requests awaiting their response: their _meta
	newMeta  []byte                  // the _meta of the last server/discover the SDK answered
	newSeen  *rawNewProtocol         // what the raw call route needs of that discover, once answered
	closing  bool                    // the connection is closing: no more raw calls
	inFlight map[jsonrpc.ID]*rawStop // the raw calls being answered
	sdkCalls map[jsonrpc.ID]struct{} // the requests handed to the SDK, until their response is written
	// cancelled holds the requests in flight that the client cancelled:
	// their response is not written (the specification: the receiver of a
	// cancellation does not answer the request). Each is forgotten as its
	// response is dropped, so it holds no more than the requests in flight.
	cancelled map[jsonrpc.ID]struct{}
}

// rawNewProtocol is what the raw call route keeps of a session initialized at
// protocol 2026-07-28: the _meta a call must carry, decoded, and the
// serverInfo results carry.
type rawNewProtocol struct {
	meta       mcp.Meta
	serverInfo json.RawMessage
}

func newRawUpstream(rc rawCaller, c *wire.Conn) *rawUpstream {
	u := &rawUpstream{
		caller:    rc,
		conn:      c,
		inFlight:  make(map[jsonrpc.ID]*rawStop),
		sdkCalls:  make(map[jsonrpc.ID]struct{}),
		cancelled: make(map[jsonrpc.ID]struct{}),
		discover:  make(map[jsonrpc.ID][]byte),
		work:      make(chan func()),
	}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	return u
}

// take looks at a request from the client before the SDK does: it follows
// the session's initialization, cancels a raw call the client cancels, and
// takes a nominal tools/call, reporting true; the connection then delivers
// nothing to the SDK and the call's response is written by the raw call route.
// A call whose id is in flight, on either path, is dropped (reporting
// true), as the SDK drops one: answering it would give the client two
// responses of one id. valid is the connection's word on the params (see
// wire.Hooks.Take).
func (u *rawUpstream) take(req *jsonrpc.Request, valid bool) bool {
	if req.IsCall() {
		if req.Method == "tools/call" {
			if u.call(req, valid) {
				return true
			}
		} else if !u.toSDK(req) {
			return true
		}
	}
	switch req.Method {
	case "initialize":
		if req.IsCall() {
			u.mu.Lock()
			if u.initID == nil && u.version == "" {
				id := req.ID
				u.initID = &id
			}
			u.mu.Unlock()
		}
	case "server/discover":
		if meta, ok := paramsMeta(req.Params); ok && req.IsCall() {
			u.mu.Lock()
			if len(u.discover) >= maxDiscoverPending {
				for id := range u.discover { // one the SDK never answered, most likely
					delete(u.discover, id)
					break
				}
			}
			u.discover[req.ID] = meta
			u.mu.Unlock()
		}
	case "notifications/initialized":
		u.mu.Lock()
		u.ready = u.version != "" && u.version < protocolRaw
		u.mu.Unlock()
	case "notifications/cancelled":
		// Either way the response is not written. A raw call knows by its
		// context's cause that the client cancelled it, and the SDK is not
		// told: it handles notifications apart from the reading, so it
		// could take the cancellation for a later request that reuses
		// the id. A request of the SDK's is noted in cancelled, for wrote
		// to drop its response, and the SDK cancels its handler.
		if id, ok := wire.CancelledID(req.Params); ok {
			u.mu.Lock()
			stop := u.inFlight[id]
			_, sdk := u.sdkCalls[id]
			if sdk {
				u.cancelled[id] = struct{}{}
			}
			u.mu.Unlock()
			if stop != nil {
				stop.stop(clientCancelled{cancelCause(req.Params)})
			}
			if !sdk {
				return true // not the SDK's request: nothing for it to cancel
			}
		}
	}
	return false
}

// wrote notes a response the SDK writes: its request is no longer in
// flight; it reports false, for the response not to be written, when the
// client cancelled the request. It also notes the protocol version of the initialize response,
// when resp is it, and the serverInfo of a server/discover response, and
// the _meta of its request, when resp is one.
func (u *rawUpstream) wrote(resp *jsonrpc.Response) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.sdkCalls, resp.ID)
	if _, ok := u.cancelled[resp.ID]; ok {
		delete(u.cancelled, resp.ID)
		return false
	}
	if meta, ok := u.discover[resp.ID]; ok {
		delete(u.discover, resp.ID)
		if resp.Error == nil && len(resp.Result) > 0 && jsontext.Valid(resp.Result) == nil {
			n := &rawNewProtocol{}
			rmeta, _ := jsontext.Member(resp.Result, "_meta")
			if len(rmeta) > 0 && rmeta[0] == '{' {
				n.serverInfo, _ = jsontext.Member(rmeta, mcp.MetaKeyServerInfo)
			}
			// A progress token in it would be on every call: those take the
			// SDK route, which gives the downstream call a token of its own.
			if json.Unmarshal(meta, &n.meta) == nil && n.serverInfo != nil && !hasKey(n.meta, progressTokenKey) {
				n.serverInfo = bytes.Clone(n.serverInfo)
				u.newMeta, u.newSeen = meta, n
			}
		}
		return true
	}
	if u.initID == nil || *u.initID != resp.ID {
		return true
	}
	u.initID = nil
	if resp.Error == nil {
		u.version = initializeVersion(resp.Result)
	}
	return true
}

// maxDiscoverPending bounds the server/discover requests remembered while
// they await their response, so that a client sending many cannot grow
// the map without bound; at it, one remembered is forgotten (should it be
// answered after all, its session takes the SDK route until another is).
const maxDiscoverPending = 16

// paramsMeta returns the raw _meta of request params, if they are an
// object that has one.
func paramsMeta(params json.RawMessage) ([]byte, bool) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || p[0] != '{' || jsontext.Valid(p) != nil {
		return nil, false
	}
	m, ok := jsontext.Member(p, "_meta")
	if !ok || m[0] != '{' {
		return nil, false
	}
	return bytes.Clone(m), true
}

// toSDK notes the call req, which the SDK is to answer, in sdkCalls, and
// reports true; false, when a request of its id is in flight (on either
// path), which is dropped.
func (u *rawUpstream) toSDK(req *jsonrpc.Request) bool {
	u.mu.Lock()
	dup := u.inFlightLocked(req.ID)
	if !dup {
		u.sdkCalls[req.ID] = struct{}{}
	}
	u.mu.Unlock()
	if dup {
		u.dropped(req)
	}
	return !dup
}

// inFlightLocked reports whether a request of the id is in flight, on
// either path.
func (u *rawUpstream) inFlightLocked(id jsonrpc.ID) bool {
	_, raw := u.inFlight[id]
	_, sdk := u.sdkCalls[id]
	return raw || sdk
}

// dropped logs the request req, dropped because its id is in flight.
func (u *rawUpstream) dropped(req *jsonrpc.Request) {
	u.conn.Logf("ignored a %s request from the client: its id %v is that of a request still in flight", wire.ClipText(req.Method), req.ID.Raw())
}

// call takes the call req if it is nominal and runs it in a goroutine of
// its own, which writes the response, reporting true; it drops it, also
// reporting true, when a request of its id is in flight. It reports false
// for a call the SDK is to answer, noted in sdkCalls (see toSDK). valid is
// take's.
//
// It takes u.mu once for a call it takes (and once as the call ends): the
// call is noted in flight as it is found ready, before the caller is asked
// for it (rawCall), and forgotten in the rare case the caller refuses it.
// Nothing sees the call in flight meanwhile but take and readEnded, which
// run on this goroutine, the one reading the client.
func (u *rawUpstream) call(req *jsonrpc.Request, valid bool) bool {
	name, args, meta, ok := callParams(req.Params, valid)
	if !ok {
		return !u.toSDK(req)
	}
	lc := &rawTaken{req: rawRequest{id: req.ID, name: name, args: args}}
	r, stop := &lc.req, &lc.stop
	u.mu.Lock()
	if u.inFlightLocked(req.ID) {
		u.mu.Unlock()
		u.dropped(req)
		return true
	}
	ready := !u.closing
	switch {
	case meta == nil:
		ready = ready && u.ready
	case u.newSeen != nil && bytes.Equal(meta, u.newMeta):
		r.meta, r.serverInfo = u.newSeen.meta, u.newSeen.serverInfo
	default:
		ready = false
	}
	if !ready {
		u.sdkCalls[req.ID] = struct{}{}
		u.mu.Unlock()
		return false
	}
	u.inFlight[req.ID] = stop
	u.calls.Add(1)
	u.mu.Unlock()
	if !u.caller.rawCall(r) {
		u.mu.Lock()
		delete(u.inFlight, req.ID)
		u.sdkCalls[req.ID] = struct{}{}
		u.mu.Unlock()
		u.calls.Done()
		return false
	}
	// readEnded stops the calls in flight itself (see begin).
	ctx := lc.begin()
	lc.u, lc.ctx = u, ctx
	r.doneCopies = true // WriteLineIn copies the line, or writes it before it returns
	if r.light() {
		r.onReader, r.sendIn = true, u.conn.Batch() // take runs on the reading goroutine
		r.start(ctx, lc)
	} else {
		u.run(func() { r.start(ctx, lc) })
	}
	return true
}

// answered writes the response line of the call t took on a line
// connection (its rawDone), unless the client cancelled it or reading has
// stopped, and forgets the call.
func (t *rawTaken) answered(line []byte) {
	u := t.u
	defer u.calls.Done()
	u.mu.Lock()
	delete(u.inFlight, t.req.id)
	u.mu.Unlock()
	if t.end(t.ctx) || u.conn.Broken() {
		return // as the SDK writes no response once reading has stopped
	}
	u.conn.WriteLineIn(t.req.answerIn, line) // a failed write shows on the next one the session makes
}

// A rawTaken is what a raw call the session layer takes (on a line
// connection, or on the HTTP fast path) keeps, in one allocation: on a
// line connection, also the connection and the call's context, for
// answered.
type rawTaken struct {
	req  rawRequest
	stop rawStop
	u    *rawUpstream
	ctx  context.Context
}

// begin returns the context the call runs under, which t.stop cancels
// along with the downstream call. It is not a child of the session's: the
// session layer stops its calls in flight itself as it ends, and a
// context with no parent to watch costs no registration.
func (t *rawTaken) begin() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.stop.cancel, t.req.stop = cancel, &t.stop.wire
	return ctx
}

// end ends the call's context ctx (begin's) and reports whether the
// client cancelled the call: then its response is not written. The cause
// the client's cancellation gives is read as it is.
func (t *rawTaken) end(ctx context.Context) (byClient bool) {
	_, byClient = context.Cause(ctx).(clientCancelled)
	t.stop.cancel(nil)
	return byClient
}

// A rawStop cancels a raw call in flight that the session layer took: the
// context the call runs under, and then the downstream call itself
// (wire.Cancel), directly rather than by a context watching the other,
// each of which would cost a registration and a goroutine-less callback
// on every call.
type rawStop struct {
	cancel context.CancelCauseFunc
	wire   wire.Cancel
}

// stop cancels the call with cause, as cancelling a context with cause
// would cancel both: the context first, so that the call's end, which
// the downstream call's cancellation brings, sees it cancelled.
func (s *rawStop) stop(cause error) {
	if s.cancel == nil {
		return // not yet running: see call
	}
	s.cancel(cause)
	s.wire.Cancel(cause)
}

// clientCancelled is the cause of a raw call's context when the client
// cancelled the call: its response is not written. It unwraps to the
// reason, which the downstream server is given.
type clientCancelled struct{ reason error }

func (c clientCancelled) Error() string { return c.reason.Error() }
func (c clientCancelled) Unwrap() error { return c.reason }

// cancelCause is the cause a raw call the client cancelled with params
// is cancelled with: the reason it gave, which the downstream server is
// given in turn (wire.Call.Cancelled); context.Canceled without one.
func cancelCause(params json.RawMessage) error {
	raw, ok := jsontext.Member(params, "reason") // params are valid JSON: CancelledID read them
	if !ok || raw[0] != '"' {
		return context.Canceled
	}
	reason := string(jsontext.AppendUnquoted(nil, raw))
	if reason == "" {
		return context.Canceled
	}
	return errors.New(reason)
}

// progressTokenKey is the _meta key of a progress token, which the SDK
// path replaces with one of the proxy's own (see Proxy.progressToken).
const progressTokenKey = "progressToken"

// hasKey reports whether m has the key k.
func hasKey(m mcp.Meta, k string) bool {
	_, ok := m[k]
	return ok
}

// readEnded cancels the raw calls in flight once the client's side of the
// connection has ended, as the SDK cancels its handlers then: no
// cancellation can come any more, and no response be written.
func (u *rawUpstream) readEnded() {
	u.mu.Lock()
	u.closing = true
	stops := slices.Collect(maps.Values(u.inFlight))
	u.mu.Unlock()
	for _, s := range stops {
		s.stop(nil)
	}
	u.cancel()
}

// run runs call on an idle worker, or on a new one when none is idle. A
// worker waits for its next call until the connection closes: there are
// never more than the most calls in flight at once, and a worker's stack,
// grown by the first call (schema validation, encoding), is not grown
// again for every call, as a goroutine per call's would be.
func (u *rawUpstream) run(call func()) {
	wire.Kick() // the call may run long: references resolved, a large frame
	select {
	case u.work <- call:
		return
	default:
	}
	go func() {
		for {
			call()
			select {
			case call = <-u.work:
			case <-u.ctx.Done():
				return
			}
		}
	}()
}

// wait waits for the raw calls in flight, once the connection is closing.
// They are not cancelled, as the SDK does not cancel its handlers when a
// session is closed; Proxy.Close cancels them downstream. (When the
// client's side ended, readEnded has cancelled them.)
func (u *rawUpstream) wait() {
	u.mu.Lock()
	u.closing = true
	u.mu.Unlock()
	u.calls.Wait()
	u.cancel()
}

// rawCall implements rawCaller for the proxy's mirrored tools.
func (p *Proxy) rawCall(req *rawRequest) bool {
	vals := p.stores.shared
	if req.vals != nil {
		vals = req.vals
	}
	tools := p.offered.Load()
	if p.rawOff || vals == nil || tools == nil {
		return false
	}
	m := (*tools)[req.name]
	if m == nil {
		return false
	}
	l := p.rawLink()
	if l == nil || l.conn == nil {
		return false
	}
	init := l.down.InitializeResult()
	if init == nil {
		return false
	}
	if req.serverInfo != nil && init.ProtocolVersion < protocolRaw {
		return false // a client at 2026-07-28, a server before it: the SDK route bridges them (bridge.go)
	}
	var downMeta *sdkMeta // the SDK client's own _meta at 2026-07-28
	if init.ProtocolVersion >= protocolRaw {
		if downMeta = l.conn.discoverMeta(); downMeta == nil {
			return false
		}
	}
	req.vals = vals // read by fixResult too (see rawDecoded)
	req.plan = rawPlan{p: p, m: m, l: l, downMeta: downMeta}
	return true
}

// answerRaw ends the raw call req, observed by o under ctx, whose result
// went to vals, with the outcome res or err (see rawCaller).
func (p *Proxy) answerRaw(ctx context.Context, o *observed, vals *values.SessionValues, req *rawRequest, res *mcp.CallToolResult, err error) {
	o.endCall(ctx, vals, res, err)
	req.end.end()
	a := req.answer
	if a == nil {
		req.done.answered(rawLine(nil, req, res, err))
		return
	}
	req.answer = nil
	var dst []byte
	if req.doneCopies {
		dst = a.line
	}
	line := rawLine(dst, req, res, err)
	req.done.answered(line)
	if req.doneCopies {
		a.line = line
	}
	a.release()
}

// rawDecoded reads the result r of the response to the raw call req, valid
// as jsontext.Valid reads JSON (wire.ResultLine.Valid), as textResult
// does but without validating it again, into an answer for the call,
// req.fixed, and reports whether it did: fixResult, which must tell
// whether r is a result of text blocks alone to pass it on as it is, so
// reads it once, where the raw call route would read it again with
// textResult, which validates it (the response's Done then takes the
// answer, whose read is the result). Anything else is left as it is, for
// decodeResult to read.
func rawDecoded(req *rawRequest, r []byte) bool {
	a := takeRawAnswer()
	if _, ok := readTextResult(r, &a.read); !ok {
		a.release()
		return false
	}
	req.fixed.Store(a)
	return true
}

// A rawAnswer is the memory the raw call route answers a call in: the
// downstream result as textResult reads it, the result present makes of
// it, and the response line. A call takes one as its response comes and
// answerRaw puts it back once the line is written, to be reset and taken
// by the next call: a small call's answer is then made in memory that the
// last one left in the processor's cache, rather than in new memory,
// which would cost an allocation and a cache miss for each of its lines
// and, in time, a collection. Nothing the answer is made of outlives the
// call: what the store, the notes and telemetry keep of it are strings,
// which are not reused.
type rawAnswer struct {
	read textRead
	pr   presented
	line []byte
}

// rawAnswers are the rawAnswers put back.
var rawAnswers = sync.Pool{New: func() any { return new(rawAnswer) }}

// takeRawAnswer returns a rawAnswer reset, for a call's answer.
func takeRawAnswer() *rawAnswer { return rawAnswers.Get().(*rawAnswer) }

// maxAnswerLine bounds the memory of a response line a rawAnswer keeps:
// a larger one, made for a large result shown whole, is left to the
// collector rather than held by the pool.
const maxAnswerLine = 16 << 10

// release resets a and puts it back. Its _meta map is kept, emptied (the
// room for its entries is what it costs), as is the line's memory, up to
// maxAnswerLine.
func (a *rawAnswer) release() {
	a.reset()
	rawAnswers.Put(a)
}

// reset makes a as a new rawAnswer but for the memory release keeps.
func (a *rawAnswer) reset() {
	meta, line := a.pr.meta, a.line[:0]
	clear(meta)
	if cap(line) > maxAnswerLine {
		line = nil
	}
	*a = rawAnswer{line: line}
	a.pr.meta = meta
}

// callToolRaw is callTool on the raw call route: the same steps, results and
// errors, over the link l's line connection, with the outcome handed to
// req.done (see rawCaller, answerRaw). downMeta, when not nil, is the SDK
// client's _meta, which the request carries as the SDK client would add it.
func (p *Proxy) callToolRaw(ctx context.Context, vals *values.SessionValues, m *mirroredTool, l *link, req *rawRequest, downMeta *sdkMeta) {
	ctx, o := p.observe(ctx, "tools/call", req.name, req.meta) // telemetry.go
	args := req.args
	if args == nil {
		args = []byte("{}")
	}
	prepared, resolved, err := vals.Prepare(m.schema, args)
	o.prepared(args, prepared, resolved, err)
	if err != nil {
		p.answerRaw(ctx, o, vals, req, errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil)
		return
	}
	downCtx, meta := o.sending(ctx, p.requestMeta(req.meta))
	metaJSON, err := callMeta(meta, downMeta)
	if err != nil {
		p.answerRaw(ctx, o, vals, req, errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil)
		return
	}

	// stop is what callCtx is on the SDK route: cancelled when the call's
	// context is (by the caller, or by watching downCtx when the caller
	// does not, or when telemetry gave a context of its own), and by Close.
	stop, unwatch := req.stop, func() bool { return false }
	if stop == nil {
		stop = new(wire.Cancel)
	}
	if req.stop == nil || o != nil {
		unwatch = stop.Watch(downCtx)
	}
	p.rawCalls.add(stop)
	id := l.conn.NextID()
	frame := callFrame(id, req.onReader, metaJSON, m.name, prepared, &req.frame)
	l.conn.Start(stop, id, "tools/call", frame, wire.Call{
		Tag:       req,             // for fixResult: see rawDecoded
		Inline:    !vals.Durable(), // as p.stores.memoryOnly, for a session's own store too
		OnReader:  req.onReader,
		Batch:     req.sendIn,
		Cancelled: cancelNote,
		Done: func(resp *jsonrpc.Response, b *wire.Batch, err error) {
			p.rawCalls.remove(stop)
			unwatch()
			var res *mcp.CallToolResult
			switch {
			case err == nil:
				if req.answer = req.fixed.Load(); req.answer != nil { // read by fixResult: see rawDecoded
					res = &req.answer.read.res
					break
				}
				req.answer = takeRawAnswer()
				res, err = decodeResult(resp, &req.answer.read)
			case stop.Err() == nil: // not cancelled: the connection's end, or a failed write
				err = callError(err)
			}
			o.answered(err)
			if err == nil && res.NeedsInput() {
				// The server asks for input (multi round-trip requests,
				// protocol 2026-07-28): a client at that version is passed
				// the requests and calls again with the answers (on the
				// SDK route); for one before it the proxy asks the client
				// and calls again through the SDK client, off this
				// goroutine, which may be the one reading the server.
				if req.serverInfo != nil {
					req.answerIn = b
					p.answerRaw(ctx, o, vals, req, inputRequired(res), nil)
					return
				}
				res, err := res, err // the goroutine's: a call that asks for no input allocates none
				go func() {
					callCtx, cancel := context.WithCancel(downCtx)
					defer cancel()
					defer context.AfterFunc(p.ctx, cancel)()
					params := &mcp.CallToolParams{Meta: p.requestMeta(req.meta), Name: m.name, Arguments: json.RawMessage(prepared)}
					for round := 1; err == nil && res.NeedsInput(); round++ {
						if round > maxInputRounds {
							err = fmt.Errorf("mcpproxy: the server asked for input %d times for one call", maxInputRounds)
							break
						}
						params.InputResponses, err = p.fulfilInput(callCtx, res.InputRequests)
						if err != nil {
							break
						}
						params.RequestState = res.RequestState
						res, err = l.down.CallTool(wire.WithTag(callCtx, vals), params) // tagged for fixResult
					}
					out, err := p.finishCall(ctx, callCtx, l, m, vals, res, err, nil)
					p.answerRaw(ctx, o, vals, req, out, err)
				}()
				return
			}
			var pr *presented
			if req.answer != nil {
				pr = &req.answer.pr
			}
			out, err := p.finishCall(ctx, stop, l, m, vals, res, err, pr)
			req.answerIn = b
			p.answerRaw(ctx, o, vals, req, out, err)
		},
	})
}

// rawCalls are the downstream calls of the raw call route in flight,
// which the end of the proxy's context (Close) cancels, as it cancels
// the SDK route's calls: one watch of the context for them all, rather
// than one per call.
type rawCalls struct {
	mu     sync.Mutex
	closed bool
	calls  map[*wire.Cancel]struct{}
}

// add adds the call that stop cancels, cancelling it at once when the
// proxy's context has ended.
func (r *rawCalls) add(stop *wire.Cancel) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		stop.Cancel(nil)
		return
	}
	if r.calls == nil {
		r.calls = make(map[*wire.Cancel]struct{})
	}
	r.calls[stop] = struct{}{}
	r.mu.Unlock()
}

// remove forgets the call that stop cancels, once it has ended.
func (r *rawCalls) remove(stop *wire.Cancel) {
	r.mu.Lock()
	delete(r.calls, stop)
	r.mu.Unlock()
}

// close cancels the calls in flight, and every call added later.
func (r *rawCalls) close() {
	r.mu.Lock()
	r.closed = true
	calls := r.calls
	r.calls = nil
	r.mu.Unlock()
	for stop := range calls {
		stop.Cancel(nil)
	}
}

// discoverMeta returns what noteDiscover kept, or nil.
func (c *ownLine) discoverMeta() *sdkMeta {
	return c.sdkMeta.Load()
}
