package mcpproxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client at protocol 2026-07-28 or later takes no request from its
// server while a call is in flight: the server asks for input within the
// call's result (inputRequests), and the client calls again with the
// answers (inputResponses) and the result's requestState. A server before
// 2026-07-28 asks by requests of its own (sampling/createMessage,
// elicitation/create, roots/list) and waits for their answers within the
// call. The proxy bridges the two: a call of such a client to such a
// server (callTool, on the SDK route: the raw call route leaves these calls
// to it) runs downstream on its own; a request the server makes within it
// ends the client's call with an input-required result holding the
// request, under a requestState naming the call; the client's next call
// with that requestState hands its answer to the server's request, and
// waits, as the first did, for the call's result or the server's next
// request. A call waiting for the client's answer is parked: at most
// maxParked per proxy (a request past it fails, the server is told why),
// each for at most parkTimeout (then the call is cancelled downstream and
// the server's request fails).

// maxParked bounds the calls of a proxy that wait for a client's answer
// to a server's request (see above): a client that never answers cannot
// hold more than this many downstream calls open. A server request past it
// fails with an error saying so.
const maxParked = 64

// parkTimeout bounds how long a call waits for the client to answer a
// server's request (an elicitation may wait for a person): past it the
// call is cancelled downstream and the server's request fails.
const parkTimeout = 10 * time.Minute

// bridgeStatePrefix begins the requestState of a bridged call's
// input-required result.
const bridgeStatePrefix = "agentvalues-bridge-"

// errParkedFull is the error a server's request gets when maxParked calls
// wait for their clients already.
var errParkedFull = errors.New("mcpproxy: too many calls wait for their clients' answers")

// A bridge is one call bridged between a client at 2026-07-28 or later and
// a server before it.
type bridge struct {
	asks    chan *ask        // the server's requests within the call
	outcome chan callOutcome // the downstream call's outcome, once
	ctx     context.Context  // the downstream call's
	cancel  context.CancelFunc
}

// An ask is one request of the server within a bridged call, waiting for
// the client's answer.
type ask struct {
	req   mcp.InputRequest
	reply chan askReply // buffered: the answer, or why there is none
}

type askReply struct {
	resp mcp.InputResponse
	err  error
}

type callOutcome struct {
	res *mcp.CallToolResult
	err error
}

// bridgeKey marks the context of a bridged downstream call with its
// *bridge: a server's request made within it is asked by bridgeOf.
type bridgeKey struct{}

// bridgeOf returns the bridge of the call ctx belongs to, if it is bridged.
func bridgeOf(ctx context.Context) *bridge {
	b, _ := ctx.Value(bridgeKey{}).(*bridge)
	return b
}

// ask hands the server's request req to the client, through the call's
// input-required result, and returns its answer.
func (b *bridge) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &ask{req: req, reply: make(chan askReply, 1)}
	select {
	case b.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.ctx.Done():
		return nil, context.Cause(b.ctx)
	}
	select {
	case r := <-a.reply:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.ctx.Done():
		return nil, context.Cause(b.ctx)
	}
}

// A parked call waits for its client's answers to the server's requests.
type parked struct {
	b       *bridge
	pending map[string]*ask // by the input request's key in the result
	stop    func() bool     // stops the parkTimeout timer
}

// parkedCalls are a proxy's parked calls, by requestState.
type parkedCalls struct {
	mu   sync.Mutex
	byID map[string]*parked
	// afterFunc arms a parked call's parkTimeout timer, returning its
	// stop; nil means time.AfterFunc. Tests set it to fire the timer
	// themselves.
	afterFunc func(d time.Duration, f func()) (stop func() bool)
}

// bridged reports whether a call of the session ss over the link l is to
// be bridged: the client is at 2026-07-28 or later, the server before it.
func bridged(ss *mcp.ServerSession, l *link) bool {
	if ss == nil {
		return false
	}
	up, down := ss.InitializeParams(), l.down.InitializeResult()
	return up != nil && down != nil && up.ProtocolVersion >= protocolRaw && down.ProtocolVersion < protocolRaw
}

// resumeBridge is callTool for a bridged call (see bridged) whose
// requestState is the proxy's: the client's answers go to the server's
// requests of the parked call it names, which goes on.
func (p *Proxy) resumeBridge(ctx context.Context, req *mcp.CallToolRequest, m *mirroredTool, vals *values.SessionValues, l *link) (*mcp.CallToolResult, error) {
	pc := p.parked.take(req.Params.RequestState)
	if pc == nil {
		return errorResult(fmt.Sprintf("%s: the call this answers is no longer waiting (it waits at most %v for an answer, and not across a restart of the proxy); call %s again", m.up, parkTimeout, m.up)), nil
	}
	for key, a := range pc.pending {
		resp, ok := req.Params.InputResponses[key]
		if !ok {
			a.reply <- askReply{err: fmt.Errorf("mcpproxy: the client did not answer input request %q", key)}
			continue
		}
		a.reply <- askReply{resp: resp}
	}
	return p.awaitBridge(ctx, pc.b, m, vals, l)
}

// startBridge is callTool for a bridged call (see bridged) that starts:
// the downstream call, with params, runs on its own.
func (p *Proxy) startBridge(ctx context.Context, o *observed, req *mcp.CallToolRequest, m *mirroredTool, vals *values.SessionValues, l *link, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	params.InputResponses, params.RequestState = nil, ""
	// The call outlives this request (the client answers by another): its
	// context keeps this one's values, and ends with the session, the
	// proxy, or the last wait for an answer.
	sess := p.stores.session(req.Session)
	bctx, cancel := context.WithCancelCause(wire.WithTag(context.WithoutCancel(ctx), vals))
	b := &bridge{asks: make(chan *ask), outcome: make(chan callOutcome, 1)}
	b.ctx = context.WithValue(bctx, bridgeKey{}, b)
	b.cancel = func() { cancel(errors.New("mcpproxy: the call was cancelled")) }
	stopSession := context.AfterFunc(sess.ctx, func() { cancel(errSessionEnded) })
	stopProxy := context.AfterFunc(p.ctx, func() { cancel(errors.New("mcpproxy: the proxy shut down")) })
	callCtx, end := p.begin(b.ctx, req.Session)
	release := func() {}
	if args, ok := params.Arguments.(json.RawMessage); ok && len(args) >= spliceMin {
		params.Arguments, release = p.splices.Hold(args) // see wire.Splices
	}
	// The downstream span (telemetry.go) is the first request's child and
	// ends with the downstream call, after the requests that answer it.
	var downDone func(error)
	callCtx, params.Meta, downDone = o.sendingDetached(callCtx, params.Meta)
	go func() {
		defer func() { stopSession(); stopProxy(); end() }()
		res, err := l.down.CallTool(callCtx, params)
		// The request has been written: its placeholders are done with,
		// and are let go before the client can have the result.
		release()
		downDone(err)
		b.outcome <- callOutcome{res, err}
	}()
	return p.awaitBridge(ctx, b, m, vals, l)
}

// awaitBridge waits for the bridged call b's outcome, which it returns as
// callTool does, or for the server's next request, which it returns to the
// client as an input-required result, parking the call. A client that
// cancels its call cancels the downstream call.
func (p *Proxy) awaitBridge(ctx context.Context, b *bridge, m *mirroredTool, vals *values.SessionValues, l *link) (*mcp.CallToolResult, error) {
	for {
		select {
		case o := <-b.outcome:
			defer b.cancel()
			if o.err == nil && o.res.NeedsInput() {
				return inputRequired(o.res), nil // a server cannot, before 2026-07-28; passed on as it came
			}
			return p.finishCall(ctx, b.ctx, l, m, vals, o.res, o.err, nil)
		case a := <-b.asks:
			pending := map[string]*ask{"1": a}
			for more := true; more; { // the requests the server made at once
				select {
				case a := <-b.asks:
					pending[fmt.Sprint(len(pending)+1)] = a
				default:
					more = false
				}
			}
			state, err := p.parked.park(b, pending)
			if err != nil {
				for _, a := range pending {
					a.reply <- askReply{err: err}
				}
				continue
			}
			res := &mcp.CallToolResult{InputRequests: make(mcp.InputRequestMap, len(pending)), RequestState: state}
			for key, a := range pending {
				res.InputRequests[key] = a.req
			}
			return res, nil
		case <-ctx.Done():
			b.cancel()
			return nil, ctx.Err()
		}
	}
}

// park parks the call b, waiting for the answers to pending, and returns
// the requestState that names it; errParkedFull past maxParked.
func (pc *parkedCalls) park(b *bridge, pending map[string]*ask) (string, error) {
	var id [16]byte
	rand.Read(id[:])
	state := bridgeStatePrefix + hex.EncodeToString(id[:])
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if len(pc.byID) >= maxParked {
		return "", fmt.Errorf("%w (at most %d)", errParkedFull, maxParked)
	}
	if pc.byID == nil {
		pc.byID = make(map[string]*parked)
	}
	expire := func() {
		if pc.take(state) != nil {
			b.cancel() // the server's requests fail with the call's end
		}
	}
	var stop func() bool
	if pc.afterFunc != nil {
		stop = pc.afterFunc(parkTimeout, expire)
	} else {
		stop = time.AfterFunc(parkTimeout, expire).Stop
	}
	pc.byID[state] = &parked{b: b, pending: pending, stop: stop}
	return state, nil
}

// take returns the parked call named by state, no longer parked; nil when
// there is none.
func (pc *parkedCalls) take(state string) *parked {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	c := pc.byID[state]
	if c != nil {
		delete(pc.byID, state)
		c.stop()
	}
	return c
}

// askAs asks the client of the bridged call b the server's request req
// (of method) and returns its answer, which must be an R.
func askAs[R mcp.InputResponse](ctx context.Context, b *bridge, method string, req mcp.InputRequest) (R, error) {
	var zero R
	resp, err := b.ask(ctx, req)
	if err != nil {
		return zero, serverError(err)
	}
	r, ok := resp.(R)
	if !ok {
		return zero, fmt.Errorf("mcpproxy: the client answered %s with a %T", method, resp)
	}
	return r, nil
}
