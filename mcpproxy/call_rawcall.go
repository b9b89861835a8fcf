package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw path for tools/call. Through the SDK a call costs, in the proxy,
// the SDK server's decoding of the request and its dispatch, the SDK
// client's encoding of the downstream request, its dispatch and its
// decoding of the response (a 32 KiB buffer per message), and the
// goroutines and channels of both sides; for a small call that is most of
// what the proxy adds. [Proxy.Run] and [Gateway.Run] over a
// [LineTransport] answer the nominal call of a mirrored tool themselves:
// the upstream line connection hands the request to the raw path before
// the SDK sees it, the arguments are prepared by the library, the
// downstream request is written on the proxy's own line connection with
// an id of the raw path's own (a string: the SDK client's are numbers),
// its response, taken apart and fixed as the SDK path's is, comes back to
// the call rather than to the SDK client, and the result is stored and
// built by the functions the SDK path uses ([Proxy.present]) and encoded
// as the SDK server encodes it. Tests hold the two paths to byte-identical
// responses and stored values.
//
// Nominal means: the request's params are a name, at most an arguments
// object, and a _meta only as below, with no progress token (the SDK path
// gives the downstream call a token of the proxy's own); the upstream
// session is initialized, either (before protocol 2026-07-28) by an
// initialize the SDK answered and notifications/initialized, with the
// request carrying no _meta, or (2026-07-28) by a server/discover the SDK
// answered, with the request's _meta byte for byte that of the discover
// request (the per-request protocol version, client info and
// capabilities a client repeats on every request): the SDK's validation of
// it is then known to pass, and the raw path adds to the result what the
// SDK adds at that version (resultType, and the serverInfo the discover
// response carried); the tool is a mirrored one; the proxy has one store
// (not Options.PerSession); the downstream server is up, reached over the
// proxy's own line connection ([CommandTransport]), and (at 2026-07-28)
// was sent a server/discover by the SDK client, whose _meta the raw path's
// requests carry too. Anything else takes the SDK path, untouched. Once
// taken, every outcome is the SDK path's: errors (bad
// arguments, a downstream error, a result that is not a CallToolResult, the
// server dying), and a result of any shape, which is decoded with the SDK's
// own types unless it is only text blocks, the common case, which is read
// from its bytes. An upstream notifications/cancelled for a raw call
// cancels it, and the downstream server is sent notifications/cancelled
// with the raw call's id, as the SDK client sends one with its own.
//
// The upstream connection keeps the ids of the requests in flight on
// either path, and drops a request whose id is one of them, as the SDK
// does when it alone reads the connection: the tool is not called a second
// time. When the client's side of the connection ends (standard input
// closed), the raw calls in flight are cancelled, downstream too, and
// their responses are not written, as the SDK cancels its handlers and
// writes nothing once reading has stopped.
//
// No goroutine waits for a raw call's response, and no call is handed from
// one goroutine to another when it need not be: waking another thread costs
// more than the rest of a small call. A call whose arguments are small and
// hold no reference is checked and sent downstream by the goroutine that
// read it from the client (see rawLight), others by a worker; the response
// is stored, built and written to the client by the goroutine that read
// it from the server, when the store is the proxy's own (in memory),
// otherwise by a goroutine of its own (see startRaw).
//
// Middleware added to the SDK server ([Proxy.Server]) does not see the
// calls the raw path answers.

// A rawCaller is what answers tools/call requests on the raw path: a
// [Proxy], or a [Gateway] for its servers.
type rawCaller interface {
	// rawCall returns the function that makes the call req and hands its
	// response, without its id, to done, once; or nil when the call is to
	// take the SDK path. The function's context is cancelled when the
	// client cancels the call. The function returns once the request is
	// sent (or the call has failed): done may be called before it returns,
	// or later on another goroutine, among them the one reading the
	// downstream connection (see startRaw).
	rawCall(req *rawRequest) func(ctx context.Context, done func(*jsonrpc.Response))
}

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
	name string
	args []byte   // the arguments object; nil for none
	meta mcp.Meta // the request's _meta, decoded as the SDK decodes it; nil for none
	// serverInfo, at protocol 2026-07-28, is what the SDK server puts in
	// every result's _meta under mcp.MetaKeyServerInfo; nil before.
	serverInfo json.RawMessage
	// onReader is set when the call is made by the goroutine reading the
	// client (see rawLight), which must not wait for the server to read.
	onReader bool
}

// withRawCalls returns upstream with the raw path answering for rc when it
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

// protocolRaw is the first protocol version the raw path leaves to the SDK:
// from it on, results carry a resultType and requests a per-request _meta.
const protocolRaw = "2026-07-28"

// A rawUpstream is the raw path's side of one upstream line connection:
// what it knows of the session, and the calls it is answering.
type rawUpstream struct {
	caller rawCaller
	conn   *wire.Conn
	ctx    context.Context // ended by wait, when the connection closes
	cancel context.CancelFunc
	calls  sync.WaitGroup
	work   chan func() // to an idle worker; see run

	mu       sync.Mutex
	initID   *jsonrpc.ID                       // the initialize request's, until it is answered
	version  string                            // the protocol version the initialize response gave
	ready    bool                              // initialized at a version the raw path takes
	discover map[jsonrpc.ID][]byte             // server/discover requests awaiting their response: their _meta
	newMeta  []byte                            // the _meta of the last server/discover the SDK answered
	newSeen  *rawNewProtocol                   // what the raw path needs of that discover, once answered
	closing  bool                              // the connection is closing: no more raw calls
	inFlight map[jsonrpc.ID]context.CancelFunc // the raw calls being answered
	sdkCalls map[jsonrpc.ID]struct{}           // the requests handed to the SDK, until their response is written
}

// rawNewProtocol is what the raw path keeps of a session initialized at
// protocol 2026-07-28: the _meta a call must carry, decoded, and the
// serverInfo results carry.
type rawNewProtocol struct {
	meta       mcp.Meta
	serverInfo json.RawMessage
}

func newRawUpstream(rc rawCaller, c *wire.Conn) *rawUpstream {
	u := &rawUpstream{
		caller:   rc,
		conn:     c,
		inFlight: make(map[jsonrpc.ID]context.CancelFunc),
		sdkCalls: make(map[jsonrpc.ID]struct{}),
		discover: make(map[jsonrpc.ID][]byte),
		work:     make(chan func()),
	}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	return u
}

// take looks at a request from the client before the SDK does: it follows
// the session's initialization, cancels a raw call the client cancels, and
// takes a nominal tools/call, reporting true; the connection then delivers
// nothing to the SDK and the call's response is written by the raw path.
// A call whose id is in flight, on either path, is dropped (reporting
// true), as the SDK drops one: answering it would give the client two
// responses of one id.
func (u *rawUpstream) take(req *jsonrpc.Request) bool {
	if req.IsCall() {
		u.mu.Lock()
		_, raw := u.inFlight[req.ID]
		_, sdk := u.sdkCalls[req.ID]
		u.mu.Unlock()
		if raw || sdk {
			u.conn.Logf("ignored a %s request from the client: its id %v is that of a request still in flight", wire.ClipText(req.Method), req.ID.Raw())
			return true
		}
		if req.Method == "tools/call" && u.call(req) {
			return true
		}
		u.mu.Lock()
		u.sdkCalls[req.ID] = struct{}{}
		u.mu.Unlock()
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
		// Passed on to the SDK as well, which finds no call of that id.
		if id, ok := wire.CancelledID(req.Params); ok {
			u.mu.Lock()
			cancel := u.inFlight[id]
			u.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	}
	return false
}

// wrote notes a response the SDK writes: its request is no longer in
// flight. It also notes the protocol version of the initialize response,
// when resp is it, and the serverInfo of a server/discover response, and
// the _meta of its request, when resp is one.
func (u *rawUpstream) wrote(resp *jsonrpc.Response) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.sdkCalls, resp.ID)
	if meta, ok := u.discover[resp.ID]; ok {
		delete(u.discover, resp.ID)
		if resp.Error == nil && len(resp.Result) > 0 && jsontext.Valid(resp.Result) == nil {
			n := &rawNewProtocol{}
			rmeta, _ := jsontext.Member(resp.Result, "_meta")
			if len(rmeta) > 0 && rmeta[0] == '{' {
				n.serverInfo, _ = jsontext.Member(rmeta, mcp.MetaKeyServerInfo)
			}
			// A progress token in it would be on every call: those take the
			// SDK path, which gives the downstream call a token of its own.
			if json.Unmarshal(meta, &n.meta) == nil && n.serverInfo != nil && !hasKey(n.meta, progressTokenKey) {
				n.serverInfo = bytes.Clone(n.serverInfo)
				u.newMeta, u.newSeen = meta, n
			}
		}
		return
	}
	if u.initID == nil || *u.initID != resp.ID {
		return
	}
	u.initID = nil
	if resp.Error == nil {
		u.version = initializeVersion(resp.Result)
	}
}

// maxDiscoverPending bounds the server/discover requests remembered while
// they await their response, so that a client sending many cannot grow
// the map without bound; at it, one remembered is forgotten (should it be
// answered after all, its session takes the SDK path until another is).
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

// call takes the call req if it is nominal and runs it in a goroutine of
// its own, which writes the response.
func (u *rawUpstream) call(req *jsonrpc.Request) bool {
	name, args, meta, ok := callParams(req.Params)
	if !ok {
		return false
	}
	r := &rawRequest{name: name, args: args}
	u.mu.Lock()
	ready := !u.closing
	switch {
	case meta == nil:
		ready = ready && u.ready
	case u.newSeen != nil && bytes.Equal(meta, u.newMeta):
		r.meta, r.serverInfo = u.newSeen.meta, u.newSeen.serverInfo
	default:
		ready = false
	}
	u.mu.Unlock()
	if !ready {
		return false
	}
	run := u.caller.rawCall(r)
	if run == nil {
		return false
	}
	ctx, cancel := context.WithCancel(u.ctx)
	u.mu.Lock()
	if u.closing {
		u.mu.Unlock()
		cancel()
		return false
	}
	u.inFlight[req.ID] = cancel
	u.calls.Add(1)
	u.mu.Unlock()
	done := func(resp *jsonrpc.Response) {
		defer u.calls.Done()
		u.mu.Lock()
		delete(u.inFlight, req.ID)
		u.mu.Unlock()
		cancel()
		if u.conn.Broken() {
			return // as the SDK writes no response once reading has stopped
		}
		resp.ID = req.ID
		u.conn.WriteLine(encodeResponse(resp)) // a failed write shows on the next one the session makes
	}
	if r.light() {
		r.onReader = true
		run(ctx, done)
	} else {
		u.run(func() { run(ctx, done) })
	}
	return true
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
	u.mu.Unlock()
	u.cancel()
}

// run runs call on an idle worker, or on a new one when none is idle. A
// worker waits for its next call until the connection closes: there are
// never more than the most calls in flight at once, and a worker's stack,
// grown by the first call (schema validation, encoding), is not grown
// again for every call, as a goroutine per call's would be.
func (u *rawUpstream) run(call func()) {
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

// encodeResponse returns the line of resp as the SDK writes it. A result
// with a number id, the common case, is written around the result's bytes
// (which the SDK would compact again: they are compact).
func encodeResponse(resp *jsonrpc.Response) []byte {
	if n, ok := resp.ID.Raw().(int64); ok && resp.Error == nil && len(resp.Result) > 0 {
		b := make([]byte, 0, len(resp.Result)+48)
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, `,"result":`...)
		b = append(b, resp.Result...)
		return append(b, "}\n"...)
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil { // cannot happen: the result is JSON the proxy made
		data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: resp.ID, Error: fmt.Errorf("mcpproxy: encoding a result: %w", err)})
	}
	return append(data, '\n')
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

// callParams reads the params of a nominal tools/call: an object of a
// string name and, if any, an arguments object and a _meta object, and
// nothing else.
func callParams(params json.RawMessage) (name string, args, meta []byte, ok bool) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || p[0] != '{' || jsontext.Valid(p) != nil {
		return "", nil, nil, false
	}
	var rawName []byte
	ok = true
	jsontext.EachChild(p, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "name") && rawName == nil && v[0] == '"':
			rawName = v
		case jsontext.KeyEquals(k, "arguments") && args == nil && (v[0] == '{' || v[0] == 'n'):
			args = v
		case jsontext.KeyEquals(k, "_meta") && meta == nil && v[0] == '{':
			meta = v
		default:
			ok = false
		}
		return ok
	})
	if !ok || rawName == nil {
		return "", nil, nil, false
	}
	if len(args) > 0 && args[0] == 'n' {
		args = nil // null: none, as toolArgs reads it
	}
	return string(jsontext.AppendUnquoted(nil, rawName)), args, meta, true
}

// rawJoinMax is the size up to which a raw call's request is joined into
// one buffer; a larger one is written in its parts, its arguments never
// copied.
const rawJoinMax = 16 << 10

// errRawClosed is why a raw call fails when the downstream connection
// ends under it (wire.ErrClosed), worded as the SDK words its own.
var errRawClosed = fmt.Errorf("%w: calling %q: the downstream connection is closed", mcp.ErrConnectionClosed, "tools/call")

// callFrame returns the line of a tools/call request whose id on the wire
// is wire and whose params are params (pieces, one after the other), as
// the SDK client writes it: in one piece up to rawJoinMax bytes, or for a
// call made by the goroutine reading the client (onReader, whose
// arguments are small); otherwise in pieces, the arguments not copied.
func callFrame(wire jsonrpc.ID, onReader bool, params ...[]byte) [][]byte {
	const before, after = `{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":`
	var num [20]byte
	wireNum := strconv.AppendInt(num[:0], wire.Raw().(int64), 10)
	size := len(before) + len(wireNum) + len(after)
	n := size + len("}\n")
	for _, b := range params {
		n += len(b)
	}
	join := n <= rawJoinMax || onReader // one buffer, one write (a light call's is small)
	if join {
		size = n
	}
	head := append(append(append(make([]byte, 0, size), before...), wireNum...), after...)
	if join {
		for _, b := range params {
			head = append(head, b...)
		}
		return [][]byte{append(head, "}\n"...)}
	}
	return append(append(append(make([][]byte, 0, len(params)+2), head), params...), []byte("}\n"))
}

// cancelNote returns the line of the notifications/cancelled request that
// cancels the call whose id on the wire is wire, for the reason why, as
// the SDK client writes it.
func cancelNote(wire jsonrpc.ID, why string) []byte {
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":`)
	note = jsontext.AppendQuote(note, []byte(why))
	note = append(note, `,"requestId":`...)
	note = strconv.AppendInt(note, wire.Raw().(int64), 10)
	return append(note, "}}\n"...)
}

// rawCall implements rawCaller for the proxy's mirrored tools.
func (p *Proxy) rawCall(req *rawRequest) func(context.Context, func(*jsonrpc.Response)) {
	vals := p.stores.shared
	tools := p.offered.Load()
	if p.rawOff || vals == nil || tools == nil {
		return nil
	}
	m := (*tools)[req.name]
	if m == nil || p.downstreamErr() != nil {
		return nil
	}
	l := p.current()
	if l.conn == nil {
		return nil
	}
	init := l.down.InitializeResult()
	if init == nil {
		return nil
	}
	var downMeta *sdkMeta // the SDK client's own _meta at 2026-07-28
	if init.ProtocolVersion >= protocolRaw {
		if downMeta = l.conn.discoverMeta(); downMeta == nil {
			return nil
		}
	}
	return func(ctx context.Context, done func(*jsonrpc.Response)) {
		p.rawN.Add(1) // here: a call refused after rawCall is not run
		p.callToolRaw(ctx, vals, m, l, req, downMeta, func(res *mcp.CallToolResult, err error) {
			done(rawResponse(req, res, err))
		})
	}
}

// rawResponse is the response to the raw call req whose outcome is res or
// err, as the SDK server writes it.
func rawResponse(req *rawRequest, res *mcp.CallToolResult, err error) *jsonrpc.Response {
	if err != nil {
		return &jsonrpc.Response{Error: err}
	}
	if req.serverInfo != nil { // as the SDK server annotates a result at 2026-07-28
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[mcp.MetaKeyServerInfo] = req.serverInfo
	}
	out, err := encodeResult(res)
	if err != nil {
		return &jsonrpc.Response{Error: fmt.Errorf("mcpproxy: encoding a result: %w", err)}
	}
	if req.serverInfo != nil && len(out) > 0 && out[len(out)-1] == '}' {
		// Its resultType, which the SDK encodes after the other members.
		out = append(out[:len(out)-1], `,"resultType":"`+resultComplete+`"}`...)
	}
	return &jsonrpc.Response{Result: out}
}

// callToolRaw is callTool on the raw path: the same steps, results and
// errors, over the link l's line connection, with the outcome handed to
// done (see rawCaller). downMeta, when not nil, is the SDK client's
// _meta, which the request carries as the SDK client would add it.
func (p *Proxy) callToolRaw(ctx context.Context, vals *values.SessionValues, m *mirroredTool, l *link, req *rawRequest, downMeta *sdkMeta, done func(*mcp.CallToolResult, error)) {
	args := req.args
	if args == nil {
		args = []byte("{}")
	}
	prepared, _, err := vals.Prepare(m.schema, args)
	if err != nil {
		done(errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil)
		return
	}
	head := make([]byte, 0, 96+len(m.name))
	head = append(head, '{')
	meta := p.requestMeta(req.meta)
	var metaJSON []byte
	switch {
	case downMeta != nil && meta == nil: // the common case: the SDK client's alone
		metaJSON = downMeta.json
	case downMeta != nil:
		for k, v := range downMeta.meta { // as the SDK client adds its own: not over the caller's
			if _, ok := meta[k]; !ok {
				meta[k] = v
			}
		}
	}
	if meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			done(errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil)
			return
		}
		metaJSON = b
	}
	if metaJSON != nil {
		head = append(head, `"_meta":`...)
		head = append(head, metaJSON...)
		head = append(head, ',')
	}
	head = append(head, `"name":`...)
	head = jsontext.AppendQuote(head, []byte(m.name))
	head = append(head, `,"arguments":`...)

	callCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.ctx, cancel)
	id := l.conn.NextID()
	frame := callFrame(id, req.onReader, head, prepared, []byte("}"))
	l.conn.Start(callCtx, id, "tools/call", frame, wire.Call{
		Tag:       vals,
		Inline:    p.stores.memoryOnly,
		OnReader:  req.onReader,
		Cancelled: cancelNote,
		Done: func(resp *jsonrpc.Response, err error) {
			stop()
			defer cancel()
			var res *mcp.CallToolResult
			switch {
			case errors.Is(err, wire.ErrClosed):
				err = errRawClosed
			case err == nil:
				res, err = decodeResult(resp)
			}
			done(p.finishCall(ctx, callCtx, l, m, vals, res, err))
		},
	})
}

// decodeResult returns the CallToolResult of a response, or the error the
// SDK client returns for it: the response's error, or why the result does
// not decode.
func decodeResult(resp *jsonrpc.Response) (*mcp.CallToolResult, error) {
	if resp.Error != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", resp.Error)
	}
	if res, ok := textResult(resp.Result); ok {
		return res, nil
	}
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(resp.Result, res); err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	return res, nil
}

// resultComplete is the resultType of a complete result (protocol
// 2026-07-28), as against one that asks the client for input.
const resultComplete = "complete"

// textResult reads a result of text blocks alone from its bytes, as the
// SDK would decode it: an object of a content array whose blocks are each
// exactly a type "text" and a text, and maybe a boolean isError, a
// resultType "complete" (which a server at protocol 2026-07-28 adds to
// every result) and a _meta of the protocol's own keys alone (the
// serverInfo such a server adds), which the result leaves out: the proxy
// forwards no protocol key of a result's _meta (see forwardMeta). It
// reports false for any other result, which the SDK's types decode.
func textResult(r []byte) (*mcp.CallToolResult, bool) {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || r[0] != '{' || jsontext.Valid(r) != nil {
		return nil, false
	}
	res := &mcp.CallToolResult{}
	var content []byte
	ok, seenError, seenType, seenMeta := true, false, false, false
	jsontext.EachChild(r, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "content") && content == nil && v[0] == '[':
			content = v
		case jsontext.KeyEquals(k, "isError") && !seenError && (v[0] == 't' || v[0] == 'f'):
			res.IsError, seenError = v[0] == 't', true
		case jsontext.KeyEquals(k, "resultType") && !seenType && v[0] == '"' && jsontext.KeyEquals(v, resultComplete):
			seenType = true
		case jsontext.KeyEquals(k, "_meta") && !seenMeta && v[0] == '{':
			seenMeta = true
			jsontext.EachChild(v, func(mk, _ []byte) bool {
				ok = bytes.HasPrefix(mk, []byte(`"`+protocolMetaPrefix)) && bytes.IndexByte(mk, '\\') < 0
				return ok
			})
		default:
			ok = false
		}
		return ok
	})
	if !ok || content == nil {
		return nil, false
	}
	res.Content = make([]mcp.Content, 0, 2)
	jsontext.EachChild(content, func(_, block []byte) bool {
		var typ, text []byte
		ok = block[0] == '{'
		if ok {
			jsontext.EachChild(block, func(k, v []byte) bool {
				switch {
				case jsontext.KeyEquals(k, "type") && typ == nil:
					typ = v
				case jsontext.KeyEquals(k, "text") && text == nil:
					text = v
				default:
					ok = false
				}
				return ok
			})
		}
		ok = ok && typ != nil && typ[0] == '"' && jsontext.KeyEquals(typ, "text") && text != nil && text[0] == '"'
		if ok {
			res.Content = append(res.Content, &mcp.TextContent{Text: string(jsontext.AppendUnquoted(nil, text))})
		}
		return ok
	})
	return res, ok
}

// noteDiscover keeps the _meta of the SDK client's first server/discover
// request, req when it is one, which the raw path's requests carry too: the protocol version,
// client info and capabilities the SDK client sends on every request at
// protocol 2026-07-28. It keeps it decoded and encoded as the raw path
// encodes a _meta, so that a request carrying it alone is not encoded again.
func (c *ownLine) noteDiscover(req *jsonrpc.Request) {
	if req.Method != "server/discover" || c.sdkMeta.Load() != nil {
		return
	}
	raw, ok := paramsMeta(req.Params)
	if !ok {
		return
	}
	var m mcp.Meta
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	enc, err := json.Marshal(m)
	if err != nil {
		return
	}
	c.sdkMeta.Store(&sdkMeta{meta: m, json: enc})
}

// An sdkMeta is what noteDiscover keeps.
type sdkMeta struct {
	meta mcp.Meta
	json []byte // meta, as json.Marshal encodes it
}

// discoverMeta returns what noteDiscover kept, or nil.
func (c *ownLine) discoverMeta() *sdkMeta {
	return c.sdkMeta.Load()
}

// encodeResult encodes res as the SDK server does (encoding/json, HTML not
// escaped around the result's own encoding, which escapes it). A result
// of the shape the proxy builds most (a _meta of strings and raw JSON,
// text blocks with no _meta or annotations, no structured content) is
// written directly, each string and raw value encoded by encoding/json,
// to the same bytes at a fraction of the reflection; tests hold the two
// to the same bytes.
func encodeResult(res *mcp.CallToolResult) ([]byte, error) {
	if out, ok := appendResult(make([]byte, 0, 256), res); ok {
		return out, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// appendResult appends res's JSON to b, as CallToolResult.MarshalJSON
// writes it, and reports false for a result it does not write.
func appendResult(b []byte, res *mcp.CallToolResult) ([]byte, bool) {
	if res.StructuredContent != nil || res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() {
		return nil, false
	}
	b = append(b, '{')
	if len(res.Meta) > 0 {
		keys := make([]string, 0, len(res.Meta))
		for k := range res.Meta {
			keys = append(keys, k)
		}
		slices.Sort(keys) // as encoding/json orders a map's keys
		b = append(b, `"_meta":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var enc []byte
			switch v := res.Meta[k].(type) {
			case string:
				enc, _ = json.Marshal(v)
			case json.RawMessage:
				enc, _ = json.Marshal(v)
			}
			if enc == nil { // another type, or invalid raw JSON
				return nil, false
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = append(b, enc...)
		}
		b = append(b, "},"...)
	}
	b = append(b, `"content":`...)
	if res.Content == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range res.Content {
			tc, ok := c.(*mcp.TextContent)
			if !ok || tc.Meta != nil || tc.Annotations != nil {
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			b = appendString(b, tc.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), true
}

// appendString appends s as encoding/json encodes a string (HTML
// escaped), which cannot fail. ASCII text without '<', '>' or '&' (the
// text of most results) is quoted by jsontext.AppendQuote, to the same
// bytes (FuzzAppendString); anything else by encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s)
			return append(b, enc...)
		}
	}
	// AppendQuote only reads s.
	return jsontext.AppendQuote(b, unsafe.Slice(unsafe.StringData(s), len(s)))
}
