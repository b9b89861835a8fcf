package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A gateway starts each of its servers on a goroutine of its own (start),
// and serves the agent meanwhile: a server's tools are offered once it is
// ready, and a call of a tool of a server that is not ready is answered by
// notReady with where its start stands.

// ErrNoServer is what [Gateway.Wait] returns, wrapped with each server's
// failure, when every server of the gateway has been tried once and none
// is served.
var ErrNoServer = errors.New("mcpproxy: no server of the gateway could be started")

// startTimeout bounds one attempt to start or restart a server: its
// command's start or the HTTP connection, the handshake, and (for a
// gateway's server) the first listing of its tools. A server that takes
// longer is stopped and, when it can be restarted, tried again after the
// backoff (restartWait, doubling up to maxRestartWait). Long, since a
// first `npx -y` downloads the server; the gateway serves the others
// meanwhile.
const startTimeout = 2 * time.Minute

// DefaultStartWait is the default of Options.StartWait: about as long as a
// server started with npx or uvx from their caches takes, and well within
// the 10 s or more that clients give a request before they give up.
const DefaultStartWait = 5 * time.Second

// listMethods are the requests a gateway's StartWait holds.
var listMethods = []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}

// waitStarts holds a list request made within StartWait of the gateway's
// start until every server has been tried once (see Options.StartWait).
func (g *Gateway) waitStarts(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if slices.Contains(listMethods, method) {
			if wait := time.Until(g.startWaitEnd); wait > 0 {
				g.held.Add(1)
				timer := time.NewTimer(wait)
				select {
				case <-g.tried:
				case <-timer.C:
				case <-ctx.Done():
				}
				timer.Stop()
				g.held.Add(-1)
			}
		}
		return next(ctx, method, req)
	}
}

// A memberState is where the start of a gateway's server stands.
type memberState int

const (
	starting memberState = iota // an attempt is under way
	served                      // its tools are offered
	waiting                     // an attempt failed; the next is due at member.next
	leftOut                     // an attempt failed and it has no Restart
)

// A member is one server of a gateway and where its start stands. The
// fields after Downstream are under Gateway.mu.
type member struct {
	Downstream
	state   memberState
	since   time.Time // when the current attempt began (starting)
	attempt int       // the number of the current or last attempt
	err     error     // why the last attempt failed
	next    time.Time // when the next attempt is due (waiting)
	proxy   *Proxy    // once reached: its tools may be offered before it is served
	tried   bool      // its first attempt has ended
}

// start starts the server of m, over its Transport and then, while the
// attempts fail, over Restart's transports, until it is served, it fails
// without a Restart, or the gateway closes.
func (g *Gateway) start(m *member) {
	t := m.Transport
	wait := restartWait
	if g.opts.seams != nil && g.opts.seams.restartWait > 0 {
		wait = g.opts.seams.restartWait
	}
	timeout := startTimeout
	if g.opts.seams != nil && g.opts.seams.startTimeout > 0 {
		timeout = g.opts.seams.startTimeout
	}
	for {
		// Each attempt has a deadline of its own, from g.ctx: never the
		// caller's, nor one another server's attempt used up.
		ctx, cancel := context.WithTimeout(g.ctx, timeout)
		p, err := g.reach(ctx, m.Downstream, t)
		if err == nil {
			g.mu.Lock()
			m.proxy = p // calls of its tools go to it as they are offered
			g.mu.Unlock()
			if err = p.serveOn(ctx, g.server); err != nil {
				p = nil
			}
		}
		cancel()
		if err == nil {
			g.mu.Lock()
			closed := g.closed
			if !closed {
				g.proxies = append(g.proxies, p)
				m.state, m.err = served, nil
			}
			g.mu.Unlock()
			if closed {
				p.Close()
			} else {
				if m.attempt > 1 {
					fmt.Fprintf(logOf(&g.opts), "agentvalues: started the server %q\n", m.Name)
				}
				p.askLogLevel(p.current())
			}
			g.triedOnce(m)
			return
		}
		if g.ctx.Err() != nil {
			g.triedOnce(m)
			return
		}
		g.mu.Lock()
		m.proxy, m.err = nil, err
		if m.Restart == nil {
			m.state = leftOut
		} else {
			m.state, m.next = waiting, time.Now().Add(wait)
		}
		first := m.attempt == 1
		g.mu.Unlock()
		switch {
		case m.Restart == nil:
			fmt.Fprintf(logOf(&g.opts), "agentvalues: leaving out the server %q: %v\n", m.Name, err)
		case first:
			fmt.Fprintf(logOf(&g.opts), "agentvalues: leaving out the server %q until it starts: %v; trying again in %v\n", m.Name, err, wait)
		default:
			fmt.Fprintf(logOf(&g.opts), "agentvalues: starting the server %q: %v; trying again in %v\n", m.Name, err, wait)
		}
		g.triedOnce(m)
		if m.Restart == nil {
			return
		}
		timer := time.NewTimer(wait)
		select {
		case <-g.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		wait = min(2*wait, maxRestartWait)
		t = m.Restart()
		g.mu.Lock()
		m.state, m.since = starting, time.Now()
		m.attempt++
		g.mu.Unlock()
	}
}

// triedOnce notes that the first attempt to start m has ended.
func (g *Gateway) triedOnce(m *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.tried {
		return
	}
	m.tried = true
	if g.untried--; g.untried == 0 {
		close(g.tried)
	}
}

// Wait waits until every server of the gateway has been tried once (each is
// served, or its first attempt failed or ran out of time) or ctx is done:
// for a caller that wants every server that can start to be served before
// the agent is (a test, a client that lists its tools once), at the cost
// of waiting up to startTimeout for a server that hangs. It returns ctx's error if ctx is done first; nil if at least
// one server is served; otherwise an error wrapping [ErrNoServer] that says
// why each failed. Servers with a Restart are still tried in the
// background after Wait returns, and may be served later. Wait may be
// called any number of times, from any goroutine.
func (g *Gateway) Wait(ctx context.Context) error {
	select {
	case <-g.tried:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.proxies) > 0 {
		return nil
	}
	var why []string
	for _, m := range g.members {
		if m.err != nil {
			why = append(why, fmt.Sprintf("%q: %v", m.Name, m.err))
		}
	}
	if len(why) == 0 { // no servers, or the gateway closed before any was
		return ErrNoServer
	}
	return fmt.Errorf("%w: %s", ErrNoServer, strings.Join(why, "; "))
}

// notReady answers a call of a tool whose name has the prefix of a server
// that is not served (still starting, waiting for its next attempt, or
// left out) with an isError result saying so, and a prompts/get of such a
// prompt with an error saying so, where the SDK would say only that the
// name is unknown. Other requests, and those of the tools a server being
// started has offered already, pass.
func (g *Gateway) notReady(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch params := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			why := g.notServed(params.Name)
			if why == nil && method == "tools/call" && !g.names.known(params.Name) {
				why = g.unready() // a bare name: maybe of a server not ready
			}
			if method == "tools/call" && why != nil {
				return errorResult(fmt.Sprintf("%s was not called: %v. Stored values can still be read with read_value.", params.Name, why)), nil
			}
		case *mcp.GetPromptParams:
			// The prompts of a server being served are offered after its
			// tools: one the SDK knows is got.
			res, err := next(ctx, method, req)
			if err != nil && method == "prompts/get" {
				if why := g.notServed(params.Name); why != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpproxy: prompt %q: %v", params.Name, why)}
				}
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// notServed says why the tool named up cannot be called because its
// server is not served, or returns nil: the server is served, the tool is
// offered already, or no server's prefix matches.
func (g *Gateway) notServed(up string) error {
	// Who offers up, asked before g.mu (the names' lock is never taken
	// under it): the names registry adds a tool or prompt to the SDK and
	// registers it under one hold of its lock, so a call that comes as
	// soon as the SDK announces one waits here for its registration.
	owner := g.names.toolOwner(up)
	if owner == nil {
		owner, _ = g.names.prompt(up)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.IndexFunc(g.members, func(m *member) bool { return strings.HasPrefix(up, m.Name+ToolSeparator) })
	if i < 0 {
		return nil
	}
	m := g.members[i]
	if m.state == served {
		return nil
	}
	if m.proxy != nil && owner == m.proxy {
		// Being served: its tools are offered one by one, and one
		// offered already is called as on a server served.
		return nil
	}
	if g.closed {
		return errors.New("the gateway is shut down")
	}
	switch m.state {
	case starting:
		if m.attempt == 1 {
			return fmt.Errorf("the server %q is still starting (for %v so far); its tools are offered once it is ready, and the tool list is announced as changed", m.Name, time.Since(m.since).Round(time.Second))
		}
		return fmt.Errorf("the server %q is starting again (attempt %d; the last one failed: %v); its tools are offered once it is ready", m.Name, m.attempt, m.err)
	case waiting:
		return fmt.Errorf("the server %q could not be started (%v); the next attempt is in %v", m.Name, m.err, max(time.Until(m.next), 0).Round(time.Second))
	}
	return fmt.Errorf("the server %q is left out: %v", m.Name, m.err)
}

// unready says which servers are not served, for a call of a tool no
// server offers, or returns nil when every server is served.
func (g *Gateway) unready() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	for _, m := range g.members {
		if m.state != served {
			names = append(names, fmt.Sprintf("%q", m.Name))
		}
	}
	if len(names) == 0 || g.closed {
		return nil
	}
	return fmt.Errorf("no server offers a tool of that name now, and the servers %s are not ready (still starting, or failed and to be tried again); their tools are offered once they are, and the tool list is announced as changed", strings.Join(names, ", "))
}

// instructions gives each session, at its initialize (or server/discover),
// the instructions of the servers served by then, before the gateway's own.
func (g *Gateway) instructions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			c := *r
			c.Instructions = g.instructionsText()
			return &c, nil
		case *mcp.DiscoverResult:
			c := *r
			c.Instructions = g.instructionsText()
			return &c, nil
		}
		return res, err
	}
}

// instructionsText is the instructions of the servers served now, in the
// order they were given, then the gateway's own.
func (g *Gateway) instructionsText() string {
	var ready []*member
	g.mu.Lock()
	for _, m := range g.members {
		if m.state == served {
			ready = append(ready, m)
		}
	}
	g.mu.Unlock()
	var b strings.Builder
	for _, m := range ready { // m.proxy is fixed once served
		if init := m.proxy.current().down.InitializeResult(); init != nil && init.Instructions != "" {
			if m.proxy.prefixNames {
				fmt.Fprintf(&b, "Tools named %s%s…, from the server %q: %s\n\n", m.Name, ToolSeparator, m.Name, init.Instructions)
			} else { // its tools keep their names, but where two servers offer one (gateway_names.go)
				fmt.Fprintf(&b, "From the server %q (its tools keep their names, or are %s%s… where another server offers the same name): %s\n\n", m.Name, m.Name, ToolSeparator, init.Instructions)
			}
		}
	}
	b.WriteString(serverInstructions)
	return b.String()
}
