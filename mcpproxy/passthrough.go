package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// The rest of the protocol passes through the proxy as the two ends would
// speak it directly (passthrough_*.go):
//
//   - completion/complete goes to the server that offers the prompt or
//     resource it names (this file);
//   - resources/subscribe and unsubscribe go to the server that offers
//     the resource, and its notifications/resources/updated come back to
//     the sessions that subscribed (passthrough_subscribe.go);
//   - sampling/createMessage, elicitation/create and roots/list from a
//     server go to the upstream session that made the call in flight, and
//     a session's roots list_changed goes down to every server
//     (passthrough_client.go);
//   - a request the client cancels is not answered (call_rawcall.go).
//
// An error a server answers is passed on as the server worded it, code
// and message; an error of the proxy's own says which end could not
// answer.

// completeVia returns the completion/complete handler of the upstream
// server: the request goes to the server that offers the prompt (by its
// upstream name) or the resource or resource template (by URI) its ref
// names. A server that declared no completions capability is not asked: it
// has no completions, and the answer is an empty list.
func completeVia(st *stores, proxies func() []*Proxy) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		params := *req.Params
		ref := *params.Ref // the SDK refuses a request without one
		var p *Proxy
		switch ref.Type {
		case "ref/prompt":
			var name string
			p, name = promptOwner(proxies(), ref.Name)
			ref.Name = name
		case "ref/resource":
			p = resourceOwner(st, proxies(), ref.URI)
		default:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpproxy: completion/complete: unknown ref type %q (want ref/prompt or ref/resource)", ref.Type)}
		}
		if p == nil {
			return nil, noOwner("completion/complete", ref)
		}
		params.Ref = &ref
		if init := p.current().down.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Completions == nil {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		}
		if err := p.downstreamErr(); err != nil {
			return nil, err
		}
		ctx, end := p.begin(ctx, req.Session)
		defer end()
		params.Meta = p.requestMeta(params.Meta)
		res, err := p.current().down.Complete(ctx, &params)
		if err != nil {
			return nil, serverError(err)
		}
		res.Meta = forwardMeta(res.Meta)
		return res, nil
	}
}

// noOwner is the error for a request (method) whose ref names what no
// server offers.
func noOwner(method string, ref mcp.CompleteReference) error {
	what := fmt.Sprintf("the prompt %q", ref.Name)
	if ref.Type != "ref/prompt" {
		what = fmt.Sprintf("the resource %q", ref.URI)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpproxy: %s: no server offers %s", method, what)}
}

// serverError returns the JSON-RPC error a peer answered, as it worded
// it, when err carries one; nil and a cancelled context's error as they
// are (the SDK knows what to do then); else an internal error with err's
// text: the SDK sends a plain error with code 0, which is no JSON-RPC code.
func serverError(err error) error {
	var we *jsonrpc.Error
	switch {
	case err == nil || errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &we):
		return we
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// promptOwner returns the proxy that offers the prompt named up upstream,
// and the prompt's name on its server; nil when none does. The proxies
// share one names registry (a gateway's, or a lone proxy's own), which
// follows renames and takes SERVER__NAME for a prompt offered bare.
func promptOwner(proxies []*Proxy, up string) (*Proxy, string) {
	if len(proxies) == 0 {
		return nil, ""
	}
	return proxies[0].names.prompt(up)
}

// resourceOwner returns the proxy that offers the resource whose URI is
// uri, or the resource template that is uri or matches it (the first
// server's, in the order they were added, when templates of two match);
// nil when none does. A proxy of one server owns every URI: its server may
// offer resources it does not list.
func resourceOwner(st *stores, proxies []*Proxy, uri string) *Proxy {
	if len(proxies) == 1 && proxies[0].prefix == "" {
		return proxies[0]
	}
	return st.owners.owner(uri, proxies)
}

// owner returns the proxy that offers the resource uri, or the resource
// template uri, or a template that matches uri (trying proxies' templates
// in the order of proxies); nil when none does.
func (o *uriOwners) owner(uri string, proxies []*Proxy) *Proxy {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p := o.byURI["resource "+uri]; p != nil {
		return p
	}
	if p := o.byURI["resource template "+uri]; p != nil {
		return p
	}
	for _, p := range proxies {
		for key, owner := range o.byURI {
			t, ok := strings.CutPrefix(key, "resource template ")
			if !ok || owner != p {
				continue
			}
			if tmpl, err := uritemplate.New(t); err == nil && tmpl.Match(uri) != nil {
				return p
			}
		}
	}
	return nil
}

// The calls in flight. A request a server sends its client while one of
// the proxy's calls to it is in flight (sampling, elicitation, roots) goes
// to the upstream session that made that call, on the call's own stream;
// see upstreamFor.

// An upCall is a request of an upstream session in flight on a server: the
// session and the context the request is handled under (over Streamable
// HTTP, what is sent under it goes on the request's own stream).
type upCall struct {
	ss  *mcp.ServerSession
	ctx context.Context
	seq uint64
}

// inFlight is the calls of upstream sessions in flight on one server.
type inFlight struct {
	mu    sync.Mutex
	seq   uint64
	calls map[uint64]upCall
}

// begin records that the session ss makes a call to the server, handled
// under ctx, and returns the context to make it under; end forgets it.
// (A server's request names no call: see upstreamFor.)
func (p *Proxy) begin(ctx context.Context, ss *mcp.ServerSession) (_ context.Context, end func()) {
	b := p.beginCall(ctx, ss)
	return ctx, b.end
}

// beginCall is begin, returning what ends the call as a value, which a
// raw call keeps without allocating a function.
func (p *Proxy) beginCall(ctx context.Context, ss *mcp.ServerSession) begun {
	if ss == nil {
		return begun{}
	}
	f := &p.inFlight
	f.mu.Lock()
	f.seq++
	c := upCall{ss: ss, ctx: ctx, seq: f.seq}
	if f.calls == nil {
		f.calls = make(map[uint64]upCall)
	}
	f.calls[c.seq] = c
	f.mu.Unlock()
	return begun{f, c.seq}
}

// begun is a call beginCall recorded in f under seq (f nil: none).
type begun struct {
	f   *inFlight
	seq uint64
}

// end forgets the call.
func (b begun) end() {
	if b.f == nil {
		return
	}
	b.f.mu.Lock()
	delete(b.f.calls, b.seq)
	b.f.mu.Unlock()
}

// latest returns the call in flight that started last, if any.
func (f *inFlight) latest() (upCall, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last upCall
	for _, c := range f.calls {
		if c.seq > last.seq {
			last = c
		}
	}
	return last, last.ss != nil
}
