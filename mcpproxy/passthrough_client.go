package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Requests from a server to its client: sampling/createMessage,
// elicitation/create and roots/list. The proxy connects to a server before
// any client connects to the proxy, so it declares sampling (with tools
// and context), elicitation (form and url) and roots (with listChanged) to
// every server, and passes each such request to one upstream session
// (upstreamFor), whose answer, or error, goes back to the server as is.
// When no session can answer (none is connected, the one the request
// belongs to did not declare the capability, or it cannot be told which
// session the request belongs to) the server gets a JSON-RPC error saying
// so.
//
// Which session: the one whose call (tools/call, prompts/get,
// resources/read, completion/complete, subscriptions) is in flight on that
// server, where the request goes on that call's own stream. A request
// names no call: with several calls in flight on the server, from several
// sessions, it goes to the session of the call that started last. (At
// protocol 2026-07-28 a server asks within the call's result instead,
// which goes back to the call's own session: see inputRequired.) A
// request outside any call goes, for roots/list, to the session whose
// roots were last announced to the server (its initialization, or its
// roots list_changed), else to the only live session; with several live
// sessions and none of these, it is refused rather than shown to a client
// it may not belong to.
//
// Roots: a session that declares roots, once initialized, and each of its
// notifications/roots/list_changed, make the proxy send
// notifications/roots/list_changed to every server, which then asks again
// (and is answered with that session's roots).

// downstreamCaps are the capabilities the proxy declares to every server.
func downstreamCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		Sampling:    &mcp.SamplingCapabilities{Tools: &mcp.SamplingToolsCapabilities{}, Context: &mcp.SamplingContextCapabilities{}},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
}

// upstreamFor returns the upstream session to pass the server's request
// method to, and the context to send it under (one that ends with the
// server's request, ctx, or the call it belongs to): see the top of this
// file.
func (p *Proxy) upstreamFor(ctx context.Context, method string) (*mcp.ServerSession, context.Context, func(), error) {
	if c, ok := p.inFlight.latest(); ok {
		out, cancel := context.WithCancel(c.ctx) // its values: over HTTP, the call's stream
		stop := context.AfterFunc(ctx, cancel)
		return c.ss, out, func() { stop(); cancel() }, nil
	}
	var ss *mcp.ServerSession
	if method == "roots/list" {
		if s := p.rootsFrom.Load(); s != nil && p.stores.isLive(s) {
			ss = s
		}
	}
	if ss == nil {
		n := 0
		p.stores.live.all.Range(func(k, _ any) bool {
			ss, n = k.(*mcp.ServerSession), n+1
			return n < 2
		})
		switch n {
		case 0:
			return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("agentvalues: cannot answer %s: no client is connected to the proxy", method)}
		case 2:
			return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("agentvalues: cannot answer %s: several clients are connected to the proxy and the request belongs to no call in flight", method)}
		}
	}
	return ss, ctx, func() {}, nil
}

// protocolAsksInResult is the first protocol version at which a server
// asks its client only within a call's result (input requests), never in
// a request of its own: the SDK's server refuses to send one to a client
// that speaks it.
const protocolAsksInResult = "2026-07-28"

// askable returns the error for a server's request method that the client
// of ss cannot be sent, as it speaks protocolAsksInResult or later and the
// request comes outside a call the proxy bridges (bridge.go turns a request
// made within a call into the call's input requests); nil when it can be.
func askable(ctx context.Context, ss *mcp.ServerSession, method string) error {
	if bridgeOf(ctx) != nil {
		return nil
	}
	if init := ss.InitializeParams(); init != nil && init.ProtocolVersion >= protocolAsksInResult {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"agentvalues: cannot answer %s: the client speaks protocol %s, where a server asks only within a call's result, and this request comes outside any call", method, init.ProtocolVersion)}
	}
	return nil
}

// askableUpstream is upstreamFor, refusing (askable) a request the
// session it finds cannot be sent.
func (p *Proxy) askableUpstream(ctx context.Context, method string) (*mcp.ServerSession, context.Context, func(), error) {
	ss, ctx, done, err := p.upstreamFor(ctx, method)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := askable(ctx, ss, method); err != nil {
		done()
		return nil, nil, nil, err
	}
	return ss, ctx, done, nil
}

// askUpstream asks the client a server's request method with params:
// within a bridged call as that call's input request (bridge.go), else by
// direct, a request of the upstream session, whose failure becomes an
// error the server can read (upstreamError).
func askUpstream[R mcp.InputResponse](ctx context.Context, method string, params mcp.InputRequest, direct func() (R, error)) (R, error) {
	if b := bridgeOf(ctx); b != nil {
		return askAs[R](ctx, b, method, params)
	}
	res, err := direct()
	if err != nil {
		var zero R
		return zero, upstreamError(method, err)
	}
	return res, nil
}

// upstreamError returns the error to answer a server's request method
// with when the upstream session answered err: a JSON-RPC error as the
// client worded it, else an internal error that says which request failed
// (never one of code 0, which is no code).
func upstreamError(method string, err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("agentvalues: cannot answer %s: %v", method, err)}
}

// notDeclared is the error for a request whose session's client did not
// declare capability: invalid params, as the SDK's client answers one it
// has no handler for (a method-not-found error would lose the message).
func notDeclared(method, capability string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("agentvalues: cannot answer %s: the client did not declare the %s capability", method, capability)}
}

// clientCaps returns the capabilities the client of ss declared; nil when
// it did not initialize.
func clientCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if init := ss.InitializeParams(); init != nil {
		return init.Capabilities
	}
	return nil
}

// createMessage passes a server's sampling/createMessage to an upstream
// session.
func (p *Proxy) createMessage(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	const method = "sampling/createMessage"
	ss, ctx, done, err := p.askableUpstream(ctx, method)
	if err != nil {
		return nil, err
	}
	defer done()
	caps := clientCaps(ss)
	switch {
	case caps == nil || caps.Sampling == nil:
		return nil, notDeclared(method, "sampling")
	case len(req.Params.Tools) > 0 && caps.Sampling.Tools == nil:
		return nil, notDeclared(method+" with tools", "sampling.tools")
	}
	params := *req.Params
	params.Meta = forwardMeta(params.Meta)
	return askUpstream(ctx, method, &params, func() (*mcp.CreateMessageWithToolsResult, error) { return ss.CreateMessageWithTools(ctx, &params) })
}

// elicit passes a server's elicitation/create to an upstream session (the
// SDK checks the capability the client declared for its mode).
func (p *Proxy) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	const method = "elicitation/create"
	ss, ctx, done, err := p.askableUpstream(ctx, method)
	if err != nil {
		return nil, err
	}
	defer done()
	if caps := clientCaps(ss); caps == nil || caps.Elicitation == nil {
		return nil, notDeclared(method, "elicitation")
	}
	params := *req.Params
	params.Meta = forwardMeta(params.Meta)
	if params.Mode == "url" && params.ElicitationID != "" {
		p.urlElicits.remember(params.ElicitationID, ss, p.stores.isLive)
	}
	return askUpstream(ctx, method, &params, func() (*mcp.ElicitResult, error) { return ss.Elicit(ctx, &params) })
}

// maxURLElicitations bounds the URL elicitations a proxy remembers the
// session of until the server says it is complete: a server that never
// says so cannot grow the table past it. At it, those of ended sessions
// are forgotten first; if all are live, the new one is not remembered and
// its notifications/elicitation/complete is dropped.
const maxURLElicitations = 256

// urlElicits is the session each URL elicitation of a server went to, by
// its elicitationId, until the server's notifications/elicitation/complete.
type urlElicits struct {
	mu   sync.Mutex
	byID map[string]*mcp.ServerSession
}

// remember records that the URL elicitation id went to ss.
func (u *urlElicits) remember(id string, ss *mcp.ServerSession, live func(*mcp.ServerSession) bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byID == nil {
		u.byID = make(map[string]*mcp.ServerSession)
	}
	if len(u.byID) >= maxURLElicitations {
		maps.DeleteFunc(u.byID, func(_ string, s *mcp.ServerSession) bool { return !live(s) })
	}
	if len(u.byID) < maxURLElicitations {
		u.byID[id] = ss
	}
}

// take returns the session the URL elicitation id went to, and forgets it.
func (u *urlElicits) take(id string) *mcp.ServerSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	ss := u.byID[id]
	delete(u.byID, id)
	return ss
}

// elicitationComplete passes a server's notifications/elicitation/complete
// to the session its URL elicitation went to; one of no elicitation the
// proxy passed on is dropped.
func (p *Proxy) elicitationComplete(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
	if req.Params == nil {
		return
	}
	if ss := p.urlElicits.take(req.Params.ElicitationID); ss != nil && p.stores.isLive(ss) {
		_ = ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{Meta: forwardMeta(req.Params.Meta), ElicitationID: req.Params.ElicitationID})
	}
}

// listRoots passes a server's roots/list to an upstream session.
func (p *Proxy) listRoots(ctx context.Context, req *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	const method = "roots/list"
	ss, ctx, done, err := p.askableUpstream(ctx, method)
	if err != nil {
		return nil, err
	}
	defer done()
	if clientCaps(ss) == nil {
		return nil, notDeclared(method, "roots")
	}
	// Whether the client declared roots cannot be read (the SDK decodes
	// "roots": {} as it decodes no roots): its own answer says.
	var params mcp.ListRootsParams
	if req.Params != nil {
		params = *req.Params
	}
	params.Meta = forwardMeta(params.Meta)
	return askUpstream(ctx, method, &params, func() (*mcp.ListRootsResult, error) { return ss.ListRoots(ctx, &params) })
}

// clientRequests is the receiving middleware of the proxy's client that
// passes a server's roots/list upstream (the SDK client has no handler for
// it: it answers with roots of its own), and its elicitation/create before
// the SDK client checks the requested schema (it refuses what it does not
// know, such as the multi-select enums of protocol 2025-11-25): the
// upstream client judges it. (Elicitation requests within a result, at
// protocol 2026-07-28, reach elicit through the SDK client's check.)
func (p *Proxy) clientRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListRootsRequest:
			return p.listRoots(ctx, r)
		case *mcp.ElicitRequest:
			if r.Params == nil {
				break
			}
			return p.elicit(ctx, r)
		}
		return next(ctx, method, req)
	}
}

// rootsChanged tells every server of proxies that the roots of the session
// ss changed (or that it has roots, as it starts), so that each asks it
// for them again. A session whose client did not declare roots with
// listChanged is not announced as it starts.
func rootsChanged(proxies []*Proxy, ss *mcp.ServerSession, starting bool) {
	if caps := clientCaps(ss); starting && (caps == nil || !caps.Roots.ListChanged) {
		return
	}
	for _, p := range proxies {
		p.rootsFrom.Store(ss)
		l := p.current()
		if l.notes == nil || p.ctx == nil {
			continue
		}
		// Off the session's goroutine: a server reached over HTTP takes a
		// request to tell. Ends with the proxy, or after logLevelTimeout.
		go func() {
			ctx, cancel := context.WithTimeout(p.ctx, logLevelTimeout)
			defer cancel()
			_ = l.notes.Write(ctx, &jsonrpc.Request{Method: "notifications/roots/list_changed", Params: json.RawMessage(`{}`)})
		}()
	}
}

// rootsFrom is the session whose roots were last announced to a server.
type rootsFrom = atomic.Pointer[mcp.ServerSession]

// inputRequired is what the proxy answers for a call whose result asks
// for input (protocol 2026-07-28): the server's input requests and state,
// nothing stored. The SDK server passes it to a client at 2026-07-28,
// which calls again with the answers; for a client before it, the SDK
// server asks the client itself and calls the proxy again with them, once.
func inputRequired(res *mcp.CallToolResult) *mcp.CallToolResult {
	return &mcp.CallToolResult{Meta: forwardMeta(res.Meta), InputRequests: res.InputRequests, RequestState: res.RequestState}
}

// maxInputRounds bounds the rounds of input a call on the raw call route
// fulfils for a client before protocol 2026-07-28 (as the SDK's client
// bounds its own): past it the call fails with an error saying so.
const maxInputRounds = 10

// fulfilInput answers the input requests of a result for the session the
// call belongs to, through the handlers a server's requests take
// (createMessage, elicit, listRoots).
func (p *Proxy) fulfilInput(ctx context.Context, requests mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	out := make(mcp.InputResponseMap, len(requests))
	for id, ir := range requests {
		var (
			resp mcp.InputResponse
			err  error
		)
		switch r := ir.(type) {
		case *mcp.ElicitParams:
			resp, err = p.elicit(ctx, &mcp.ElicitRequest{Params: r})
		case *mcp.CreateMessageParams:
			withTools := &mcp.CreateMessageWithToolsParams{Meta: r.Meta, IncludeContext: r.IncludeContext, MaxTokens: r.MaxTokens, Metadata: r.Metadata,
				ModelPreferences: r.ModelPreferences, StopSequences: r.StopSequences, SystemPrompt: r.SystemPrompt, Temperature: r.Temperature}
			for _, m := range r.Messages {
				if m != nil {
					withTools.Messages = append(withTools.Messages, &mcp.SamplingMessageV2{Role: m.Role, Content: []mcp.Content{m.Content}})
				}
			}
			resp, err = p.createMessage(ctx, &mcp.CreateMessageWithToolsRequest{Params: withTools})
		case *mcp.CreateMessageWithToolsParams:
			resp, err = p.createMessage(ctx, &mcp.CreateMessageWithToolsRequest{Params: r})
		case *mcp.ListRootsParams:
			resp, err = p.listRoots(ctx, &mcp.ListRootsRequest{Params: r})
		default:
			err = fmt.Errorf("mcpproxy: input request %q: unknown kind %T", id, ir)
		}
		if err != nil {
			return nil, fmt.Errorf("mcpproxy: fulfilling input request %q: %w", id, err)
		}
		out[id] = resp
	}
	return out, nil
}
