package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
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
// Nominal means: the upstream session has been initialized (its
// initialize answered at a protocol version before 2026-07-28 and
// notifications/initialized received); the request's params are a name
// and, at most, an arguments object (no _meta: no progress token, no
// per-request protocol version); the tool is a mirrored one; the proxy
// has one store (not Options.PerSession); the downstream server is up,
// reached over the proxy's own line connection ([CommandTransport]) at a
// protocol version before 2026-07-28; and the call's id is not one
// already in flight on the raw path. Anything else takes the SDK path,
// untouched. Once taken, every outcome is the SDK path's: errors (bad
// arguments, a downstream error, a result that is not a CallToolResult, the
// server dying), and a result of any shape, which is decoded with the SDK's
// own types unless it is only text blocks, the common case, which is read
// from its bytes. An upstream notifications/cancelled for a raw call
// cancels it, and the downstream server is sent notifications/cancelled
// with the raw call's id, as the SDK client sends one with its own.
//
// Middleware added to the SDK server ([Proxy.Server]) does not see the
// calls the raw path answers.

// A rawCaller is what answers tools/call requests on the raw path: a
// [Proxy], or a [Gateway] for its servers.
type rawCaller interface {
	// rawCall returns the function that makes the call of the tool name
	// with the arguments args (a JSON object, or nil for none) and returns
	// its response, without its id; or nil when the call is to take the SDK
	// path. The function's context is cancelled when the client cancels the
	// call.
	rawCall(name string, args []byte) func(context.Context) *jsonrpc.Response
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
	ctx    context.Context // ended by wait, when the connection closes
	cancel context.CancelFunc
	calls  sync.WaitGroup

	mu       sync.Mutex
	initID   *jsonrpc.ID                       // the initialize request's, until it is answered
	version  string                            // the protocol version the initialize response gave
	ready    bool                              // initialized at a version the raw path takes
	closing  bool                              // the connection is closing: no more raw calls
	inFlight map[jsonrpc.ID]context.CancelFunc // the raw calls being answered
}

func newRawUpstream(rc rawCaller) *rawUpstream {
	u := &rawUpstream{caller: rc, inFlight: make(map[jsonrpc.ID]context.CancelFunc)}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	return u
}

// take looks at a request from the client before the SDK does: it follows
// the session's initialization, cancels a raw call the client cancels, and
// takes a nominal tools/call, reporting true; the connection then delivers
// nothing to the SDK and the call's response is written by the raw path.
func (u *rawUpstream) take(c *lineConn, req *jsonrpc.Request) bool {
	switch req.Method {
	case "tools/call":
		return req.IsCall() && u.call(c, req)
	case "initialize":
		if req.IsCall() {
			u.mu.Lock()
			if u.initID == nil && u.version == "" {
				id := req.ID
				u.initID = &id
			}
			u.mu.Unlock()
		}
	case "notifications/initialized":
		u.mu.Lock()
		u.ready = u.version != "" && u.version < protocolRaw
		u.mu.Unlock()
	case "notifications/cancelled":
		// Passed on to the SDK as well, which finds no call of that id.
		if id, ok := cancelledID(req.Params); ok {
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

// wrote notes the protocol version of the initialize response, when resp
// is it.
func (u *rawUpstream) wrote(resp *jsonrpc.Response) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.initID == nil || *u.initID != resp.ID {
		return
	}
	u.initID = nil
	if resp.Error == nil {
		u.version = initializeVersion(resp.Result)
	}
}

// call takes the call req if it is nominal and runs it in a goroutine of
// its own, which writes the response.
func (u *rawUpstream) call(c *lineConn, req *jsonrpc.Request) bool {
	u.mu.Lock()
	ready := u.ready && !u.closing
	_, busy := u.inFlight[req.ID]
	u.mu.Unlock()
	if !ready || busy {
		return false
	}
	name, args, ok := callParams(req.Params)
	if !ok {
		return false
	}
	run := u.caller.rawCall(name, args)
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
	go func() {
		defer u.calls.Done()
		resp := run(ctx)
		u.mu.Lock()
		delete(u.inFlight, req.ID)
		u.mu.Unlock()
		cancel()
		resp.ID = req.ID
		data, err := jsonrpc.EncodeMessage(resp)
		if err != nil { // cannot happen: the result is JSON the proxy made
			data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: fmt.Errorf("mcpproxy: encoding a result: %w", err)})
		}
		c.writeLine(append(data, '\n')) // a failed write shows on the next one the session makes
	}()
	return true
}

// wait waits for the raw calls in flight, once the connection is closing.
// They are not cancelled, as the SDK does not cancel its handlers when a
// session ends; Proxy.Close cancels them downstream.
func (u *rawUpstream) wait() {
	u.mu.Lock()
	u.closing = true
	u.mu.Unlock()
	u.calls.Wait()
	u.cancel()
}

// callParams reads the params of a nominal tools/call: an object of a
// string name and, if any, an arguments object, and nothing else.
func callParams(params json.RawMessage) (name string, args []byte, ok bool) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || p[0] != '{' || jsontext.Valid(p) != nil {
		return "", nil, false
	}
	var rawName []byte
	ok = true
	jsontext.EachChild(p, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "name") && rawName == nil && v[0] == '"':
			rawName = v
		case jsontext.KeyEquals(k, "arguments") && args == nil && (v[0] == '{' || v[0] == 'n'):
			args = v
		default:
			ok = false
		}
		return ok
	})
	if !ok || rawName == nil {
		return "", nil, false
	}
	if len(args) > 0 && args[0] == 'n' {
		args = nil // null: none, as toolArgs reads it
	}
	return string(jsontext.AppendUnquoted(nil, rawName)), args, true
}

// cancelledID returns the request id a notifications/cancelled names.
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || p[0] != '{' || jsontext.Valid(p) != nil {
		return jsonrpc.ID{}, false
	}
	v, ok := jsontext.Member(p, "requestId")
	if !ok {
		return jsonrpc.ID{}, false
	}
	return idOf(v)
}

// rawIDPrefix begins the own id of every call of the raw path (on the wire
// it has a number, as every call has: see lineConn.Write), by which its
// response comes back to it rather than to the SDK client, which numbers
// its calls.
const rawIDPrefix = "agentvalues-raw-"

// isRawID reports whether id is a raw call's.
func isRawID(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, rawIDPrefix)
}

// rawJoinMax is the size up to which a raw call's request is joined into
// one buffer; a larger one is written in its parts, its arguments never
// copied.
const rawJoinMax = 16 << 10

// errRawClosed is why a raw call fails when the downstream connection
// ends under it, worded as the SDK words its own.
var errRawClosed = fmt.Errorf("%w: calling %q: the downstream connection is closed", mcp.ErrConnectionClosed, "tools/call")

// callRaw writes a tools/call request whose params are params (their
// parts, written one after the other) and returns its response, fixed as
// a response to an SDK call is (see settle). Its result goes to vals. When
// ctx is done first, the server is sent notifications/cancelled and ctx's
// error returned; when the connection breaks or closes, errRawClosed.
func (c *lineConn) callRaw(ctx context.Context, vals *values.SessionValues, params ...[]byte) (*jsonrpc.Response, error) {
	id, _ := jsonrpc.MakeID(rawIDPrefix + strconv.FormatUint(c.rawSeq.Add(1), 10))
	wire := c.nextWireID()
	ch := make(chan *jsonrpc.Response, 1)
	c.rawWait.Store(id, ch)
	c.calls.add(wire, pendingCall{method: "tools/call", vals: vals, id: id})
	forget := func() {
		c.rawWait.Delete(id)
		c.calls.done(wire)
	}
	wireNum := strconv.AppendInt(nil, wire.Raw().(int64), 10)
	head := make([]byte, 0, 80)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, wireNum...)
	head = append(head, `,"method":"tools/call","params":`...)
	frame := append([][]byte{head}, params...)
	frame = append(frame, []byte("}\n"))
	size := 0
	for _, p := range frame {
		size += len(p)
	}
	if size <= rawJoinMax { // one buffer, one write
		one := make([]byte, 0, size)
		for _, p := range frame {
			one = append(one, p...)
		}
		frame = [][]byte{one}
	}
	if err := c.writeLine(frame...); err != nil {
		forget()
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		forget()
		// As the SDK client does: off the caller's path, so that a server
		// that does not read cannot hold the call.
		note := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":`)
		note = jsontext.AppendQuote(note, []byte(ctx.Err().Error()))
		note = append(note, `,"requestId":`...)
		note = append(note, wireNum...)
		go c.writeLine(append(note, "}}\n"...))
		return nil, ctx.Err()
	case <-c.readDone:
		select {
		case resp := <-ch: // delivered just before reading stopped
			return resp, nil
		default:
		}
		forget()
		return nil, errRawClosed
	case <-c.closed:
		forget()
		return nil, errRawClosed
	}
}

// rawCall implements rawCaller for the proxy's mirrored tools.
func (p *Proxy) rawCall(name string, args []byte) func(context.Context) *jsonrpc.Response {
	vals := p.stores.shared
	tools := p.offered.Load()
	if p.rawOff || vals == nil || tools == nil {
		return nil
	}
	m := (*tools)[name]
	if m == nil || p.downstreamErr() != nil {
		return nil
	}
	l := p.current()
	if l.conn == nil {
		return nil
	}
	if init := l.down.InitializeResult(); init == nil || init.ProtocolVersion >= protocolRaw {
		return nil
	}
	p.rawN.Add(1)
	return func(ctx context.Context) *jsonrpc.Response {
		res, err := p.callToolRaw(ctx, vals, m, l, args)
		if err != nil {
			return &jsonrpc.Response{Error: err}
		}
		// As the SDK server encodes a result: HTML not escaped.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return &jsonrpc.Response{Error: fmt.Errorf("mcpproxy: encoding a result: %w", err)}
		}
		return &jsonrpc.Response{Result: bytes.TrimRight(b.Bytes(), "\n")}
	}
}

// callToolRaw is callTool on the raw path: the same steps, results and
// errors, over the link l's line connection.
func (p *Proxy) callToolRaw(ctx context.Context, vals *values.SessionValues, m *mirroredTool, l *link, args []byte) (*mcp.CallToolResult, error) {
	if args == nil {
		args = []byte("{}")
	}
	prepared, _, err := vals.Prepare(m.schema, args)
	if err != nil {
		return errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil
	}
	head := make([]byte, 0, 96+len(m.name))
	head = append(head, '{')
	if meta := p.requestMeta(nil); meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil
		}
		head = append(head, `"_meta":`...)
		head = append(head, b...)
		head = append(head, ',')
	}
	head = append(head, `"name":`...)
	head = jsontext.AppendQuote(head, []byte(m.name))
	head = append(head, `,"arguments":`...)

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	resp, err := l.conn.callRaw(callCtx, vals, head, prepared, []byte("}"))
	var res *mcp.CallToolResult
	if err == nil {
		res, err = decodeResult(resp)
	}
	return p.finishCall(ctx, callCtx, l, m, vals, res, err)
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

// textResult reads a result of text blocks alone from its bytes, as the
// SDK would decode it: an object of a content array whose blocks are each
// exactly a type "text" and a text, and maybe a boolean isError. It
// reports false for any other result, which the SDK's types decode.
func textResult(r []byte) (*mcp.CallToolResult, bool) {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || r[0] != '{' || jsontext.Valid(r) != nil {
		return nil, false
	}
	res := &mcp.CallToolResult{}
	var content []byte
	ok, seenError := true, false
	jsontext.EachChild(r, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "content") && content == nil && v[0] == '[':
			content = v
		case jsontext.KeyEquals(k, "isError") && !seenError && (v[0] == 't' || v[0] == 'f'):
			res.IsError, seenError = v[0] == 't', true
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
