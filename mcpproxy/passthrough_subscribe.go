package mcpproxy

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource subscriptions. A session's resources/subscribe goes to the
// server that offers the resource (see resourceOwner), and the upstream
// server (the SDK's) records the session as subscribed once the server
// has accepted; the server's notifications/resources/updated for that URI
// then goes to every session subscribed to it, through their lanes. The
// proxy subscribes once per URI on behalf of all its sessions: a
// resources/unsubscribe goes down only when no other live session is
// subscribed to the URI; a session that ends without unsubscribing is
// dropped from the count, and the server is told once an update finds no
// subscriber left. A server that is restarted is subscribed again to
// every URI some session is subscribed to.

// subscriptions is, for one server, the upstream sessions subscribed to
// each URI.
type subscriptions struct {
	mu    sync.Mutex
	byURI map[string]map[*mcp.ServerSession]bool
}

// add records that ss is subscribed to uri.
func (s *subscriptions) add(uri string, ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byURI == nil {
		s.byURI = make(map[string]map[*mcp.ServerSession]bool)
	}
	if s.byURI[uri] == nil {
		s.byURI[uri] = make(map[*mcp.ServerSession]bool)
	}
	s.byURI[uri][ss] = true
}

// remove forgets that ss is subscribed to uri, and the sessions among
// them that are no longer live, and reports whether none is left.
func (s *subscriptions) remove(uri string, ss *mcp.ServerSession, live func(*mcp.ServerSession) bool) (last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.byURI[uri]
	delete(set, ss)
	for x := range set {
		if !live(x) {
			delete(set, x)
		}
	}
	if len(set) == 0 {
		delete(s.byURI, uri)
		return true
	}
	return false
}

// uris returns the URIs some session is subscribed to.
func (s *subscriptions) uris() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.byURI))
	for uri := range s.byURI {
		out = append(out, uri)
	}
	return out
}

// subscribeVia returns the resources/subscribe handler of the upstream
// server (unsubscribe, with on false): the request goes to the server
// that offers the resource. One that did not declare resources.subscribe
// is not asked: the request fails with an invalid params error naming it.
func subscribeVia(st *stores, proxies func() []*Proxy, on bool) func(context.Context, string, *mcp.ServerSession) error {
	method := "resources/subscribe"
	if !on {
		method = "resources/unsubscribe"
	}
	return func(ctx context.Context, uri string, ss *mcp.ServerSession) error {
		p := resourceOwner(st, proxies(), uri)
		if p == nil {
			return noOwner(method, mcp.CompleteReference{Type: "ref/resource", URI: uri})
		}
		if init := p.current().down.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Resources == nil || !init.Capabilities.Resources.Subscribe {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpproxy: %s: %s does not support resource subscriptions", method, p.serverName())}
		}
		if err := p.downstreamErr(); err != nil {
			return err
		}
		ctx, end := p.begin(ctx, ss)
		defer end()
		if on {
			if err := p.current().down.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				return serverError(err)
			}
			p.subs.add(uri, ss)
			return nil
		}
		if !p.subs.remove(uri, ss, st.isLive) {
			return nil // another session still wants its updates
		}
		return serverError(p.current().down.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}))
	}
}

// isLive reports whether the upstream session ss has not ended.
func (st *stores) isLive(ss *mcp.ServerSession) bool {
	_, ok := st.live.all.Load(ss)
	return ok
}

// resourceUpdated relays a server's notifications/resources/updated to the
// sessions subscribed to its URI. One that no live session is subscribed
// to any more is answered with a resources/unsubscribe, off the goroutine
// that reads the server.
func (p *Proxy) resourceUpdated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	p.mu.Lock()
	server := p.server
	p.mu.Unlock()
	if req.Params == nil || server == nil {
		return
	}
	uri := req.Params.URI
	if p.subs.remove(uri, nil, p.stores.isLive) {
		l := p.current()
		go func() { // ends with the proxy, or after logLevelTimeout
			ctx, cancel := context.WithTimeout(p.ctx, logLevelTimeout)
			defer cancel()
			_ = l.down.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}()
		return
	}
	_ = server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{Meta: forwardMeta(req.Params.Meta), URI: uri})
}

// resubscribe subscribes the server of l, which was restarted, to every
// URI a session is subscribed to.
func (p *Proxy) resubscribe(l *link) {
	for _, uri := range p.subs.uris() {
		ctx, cancel := context.WithTimeout(p.ctx, logLevelTimeout)
		err := l.down.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		cancel()
		if err != nil && p.ctx.Err() == nil {
			fmt.Fprintf(p.log, "agentvalues: subscribing %s again to %q: %v\n", p.serverName(), uri, err)
		}
	}
}
