package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Gateway serves the tools of several downstream MCP servers as one MCP
// server, with one store for all of them: a handle minted by one server's
// tool is an argument any other server's tool accepts ("$r1.path"), and
// read_value and query_value work on every handle. Each server is a
// [Proxy] of its own (tool list, progress, its going away); they share the
// store and the upstream server.
//
// Tool names: a downstream tool (or prompt) is offered under its own name
// when no other server of the gateway offers one of the same name. Where
// two do, each is offered as NAME__TOOL, NAME being the name its server
// was added under, and one line in the log names the servers; the rule
// does not depend on the order the servers start in. A name is decided
// again as servers start and their lists change, and the agent is told the
// list changed: a tool offered bare may become NAME__TOOL when another
// server offering the same name starts later, and a call of the bare name
// then fails with an error naming the prefixed ones. NAME__TOOL is also
// accepted for a tool offered bare, so it can always be used.
// read_value and query_value of a server, and names of the form
// OTHER__REST where OTHER is a server of the gateway, are always prefixed.
// Options.PrefixNames (and Downstream.PrefixNames, for one server) offer
// every name as NAME__TOOL. [ConnectGateway] refuses a server name that
// could make two prefixed names equal (see [ValidServerName]). Resources
// keep their URIs. The rules are in gateway_names.go.
type Gateway struct {
	server *mcp.Server
	stores *stores
	opts   Options
	names  *names // the names tools and prompts are offered under

	mu           sync.Mutex
	members      []*member // every server, in the order given; fixed
	proxies      []*Proxy  // the servers served; grows as they start
	closed       bool
	untried      int           // members whose first attempt has not ended
	tried        chan struct{} // closed once untried is 0
	startWaitEnd time.Time     // until when a list request waits for untried servers (Options.StartWait)
	held         atomic.Int32  // list requests waiting so, for tests

	ctx       context.Context // ends the attempts to start servers
	cancel    context.CancelFunc
	late      sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// A Downstream is one server of a gateway: the name its tools are offered
// under and how to reach it (for a local command, a [CommandTransport]).
type Downstream struct {
	Name      string
	Transport mcp.Transport
	// Restart, when set, makes a new transport to the same server (for a
	// command, a new exec.Cmd), with which the gateway restarts a server
	// that went away after it was reached: after 1 s, then twice as long
	// after each failed attempt, up to 30 s. Meanwhile calls of its tools
	// fail with an isError result saying so; handles stay valid, and its
	// tool list is read again once it is back. Nil: a server that goes away
	// stays gone. A server that cannot be reached at the start (or cannot
	// list its tools) is tried again the same way, with Restart's
	// transports, and its tools are offered once it is up (the agent is
	// told the tool list changed; the gateway's instructions, given at a
	// session's initialize, name only the servers ready by then). Without
	// Restart it is left out.
	Restart func() mcp.Transport
	// PrefixNames offers every tool and prompt of this server as
	// NAME__TOOL, whether or not another server offers the same name (see
	// [Gateway]).
	PrefixNames bool
}

// ToolSeparator stands between a server's name and its tool's name in the
// names a gateway offers.
const ToolSeparator = "__"

// serverName is what ValidServerName accepts.
var serverName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9.-])?$`)

// ValidServerName says why name cannot name a gateway's server, or returns
// nil. A name is ASCII letters, digits, '_', '.' and '-' (the characters
// MCP allows in a tool name), starts with a letter or digit, does not end
// with '_' and holds no ToolSeparator, so that NAME__TOOL splits one way
// only: the first "__" ends the server's name ("a_" and tool "x" would
// give a___x, as "a" and tool "_x" do).
func ValidServerName(name string) error {
	switch {
	case !serverName.MatchString(name):
		return fmt.Errorf("server name %q: use ASCII letters, digits, '_', '.' and '-', starting with a letter or digit and not ending with '_'", name)
	case strings.Contains(name, ToolSeparator):
		return fmt.Errorf("server name %q: %q would make tool names ambiguous", name, ToolSeparator)
	}
	return nil
}

// ConnectGateway makes a gateway over servers and returns as soon as its
// upstream server is set up, before any of them is reached: the gateway
// answers initialize at once, and each server is started in the background,
// on its own, so that one that hangs or fails holds up none of the others.
//
// Each attempt to start a server (its command's start or the HTTP
// connection, the handshake, the first listing of its tools) has a
// deadline of its own, 2 minutes from the attempt's start (never the
// caller's ctx, nor one that another server's attempt used up). A server's tools, prompts and resources are offered as soon as it
// is ready, and every session is told (notifications/tools/list_changed,
// and the prompts' and resources' list_changed) as each one arrives; until
// then tools/list answers with what is ready, read_value and query_value
// at least (within Options.StartWait of the start, 5 s by default, a list
// request first waits for the servers still in their first attempt, for
// the clients that list once and ignore list_changed). A call of a tool of a server that is not ready fails with an
// isError result naming the server and where its start stands. A server
// whose attempt fails is left out, with a line on opts.Log; with a Restart
// it is tried again in the background after 1 s, then twice as long after
// each failure up to 30 s, until it is served or the gateway closes.
//
// The gateway's instructions, given at each session's initialize, name the
// servers ready by then; a server that becomes ready later is not named.
//
// ctx is not kept: it bounds nothing past the return (Close stops the
// attempts). An error is returned only for an invalid or repeated name.
// To wait, as a caller that needs every server's tools from the first
// tools/list does, until each server has been tried once, use
// [Gateway.Wait]. opts is as for [Connect]; Name, when empty, is
// "agentvalues-gateway".
func ConnectGateway(ctx context.Context, servers []Downstream, opts *Options) (*Gateway, error) {
	if opts == nil {
		opts = &Options{}
	}
	if _, err := downstreamVersion(opts); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(servers))
	for _, s := range servers {
		if err := ValidServerName(s.Name); err != nil {
			return nil, fmt.Errorf("mcpproxy: %w", err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("mcpproxy: two servers are named %q", s.Name)
		}
		seen[s.Name] = true
	}
	st := newStores(opts)
	g := &Gateway{stores: st, opts: *opts, tried: make(chan struct{})}
	serverNames := make([]string, len(servers))
	for i, s := range servers {
		serverNames[i] = s.Name
	}
	g.names = newNames(serverNames, logOf(opts))
	// The attempts outlive ctx: Close ends them.
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	name := opts.Name
	if name == "" {
		name = "agentvalues-gateway"
	}
	g.server = newServer(name, serverInstructions, st, g.served, opts.Telemetry)
	g.server.AddReceivingMiddleware(g.notReady, g.instructions, g.waitStarts)
	g.server.AddReceivingMiddleware(g.names.resolve) // before notReady: a stale or aliased name
	switch {
	case opts.StartWait == 0:
		g.startWaitEnd = time.Now().Add(DefaultStartWait)
	case opts.StartWait > 0:
		g.startWaitEnd = time.Now().Add(opts.StartWait)
	}
	for _, s := range servers {
		g.members = append(g.members, &member{Downstream: s, state: starting, since: time.Now(), attempt: 1})
	}
	g.untried = len(g.members)
	if g.untried == 0 {
		close(g.tried)
	}
	for _, m := range g.members {
		g.late.Go(func() { g.start(m) })
	}
	return g, nil
}

// reach connects to the server s over t and lists its tools once, so that
// a server that cannot is left out before the instructions name it.
func (g *Gateway) reach(ctx context.Context, s Downstream, t mcp.Transport) (*Proxy, error) {
	p, err := connectDownstream(ctx, t, &g.opts, s.Name+ToolSeparator, g.stores)
	if err != nil {
		return nil, err
	}
	p.restart = s.Restart
	p.names, p.prefixNames = g.names, s.PrefixNames || g.opts.PrefixNames
	if err := p.probeTools(ctx); err != nil {
		p.current().down.Close()
		return nil, err
	}
	return p, nil
}

// rawCall implements rawCaller: a call of a tool of one of the servers
// takes that server's raw call route. An alias (SERVER__NAME of a tool
// offered bare) and a name not offered take the SDK route, where
// names.resolve answers them.
func (g *Gateway) rawCall(req *rawRequest) bool {
	if p := g.names.toolOwner(req.name); p != nil {
		return p.rawCall(req)
	}
	return false
}

// served returns the proxies of the servers served now.
func (g *Gateway) served() []*Proxy {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.proxies)
}

// probeTools lists the downstream tools once, to see that it can.
func (p *Proxy) probeTools(ctx context.Context) error {
	for _, err := range p.current().down.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpproxy: listing the downstream tools: %w", err)
		}
	}
	return nil
}

// logOf is where a gateway's events go.
func logOf(o *Options) io.Writer {
	if o.Log == nil {
		return os.Stderr
	}
	return o.Log
}

// Server returns the MCP server that faces the agent.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Values returns the store every server's results go to; nil with
// Options.PerSession, where each upstream session has its own.
func (g *Gateway) Values() *values.SessionValues { return g.stores.shared }

// Run serves the agent over upstream until the agent disconnects or ctx is
// done, then closes the gateway, as [Proxy.Run] does for one server.
func (g *Gateway) Run(ctx context.Context, upstream mcp.Transport) error {
	stop := context.AfterFunc(ctx, func() {
		g.cancel()
		for _, p := range g.served() {
			p.cancel()
		}
	})
	defer stop()
	err := g.server.Run(ctx, withRawCalls(upstream, g)) // see call_rawcall.go
	if cerr := g.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes every downstream connection at once, as [Proxy.Close] does,
// and returns the first error. Close is idempotent.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.cancel()
		g.late.Wait()
		g.mu.Lock()
		g.closed = true
		proxies := g.proxies
		g.mu.Unlock()
		errs := make([]error, len(proxies))
		var wg sync.WaitGroup
		for i, p := range proxies {
			wg.Go(func() { errs[i] = p.Close() })
		}
		wg.Wait()
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}
