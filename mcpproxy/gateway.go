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
	"time"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Gateway serves the tools of several downstream MCP servers as one MCP
// server, with one store for all of them: a handle minted by one server's
// tool is an argument any other server's tool accepts ("$r1.path"), and
// read_value and query_value work on every handle. Each server is a
// [Proxy] of its own (tool list, progress, its going away); they share the
// store and the upstream server.
//
// Tool names: every downstream tool is offered as NAME__TOOL, where NAME
// is the name the server was added under, so that two servers' tools
// never collide and the rule does not depend on which tools a server
// lists when. [ConnectGateway] refuses a server name that could make two
// tools' names equal (see [ValidServerName]).
type Gateway struct {
	server *mcp.Server
	stores *stores
	opts   Options

	mu      sync.Mutex
	proxies []*Proxy // the servers served; grows as late ones start
	closed  bool

	ctx       context.Context // ends the attempts to start late servers
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
	// told the tool list changed; the gateway's instructions, written at
	// the start, do not name it). Without Restart it is left out.
	Restart func() mcp.Transport
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

// ConnectGateway connects to every downstream server at once and serves
// their tools on one MCP server. A server that cannot be reached (a
// command that does not start, a handshake or first tool listing that
// fails within ctx) is left out with a line on opts.Log (and tried again
// in the background when it has a Restart), and the others are served; an
// error is returned only for an invalid or repeated name, or when no server
// could be reached. opts is as for [Connect]; Name, when
// empty, is "agentvalues-gateway". It also fails when no server that was
// reached could list its tools.
func ConnectGateway(ctx context.Context, servers []Downstream, opts *Options) (*Gateway, error) {
	if opts == nil {
		opts = &Options{}
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
	g := &Gateway{stores: st, opts: *opts}
	g.ctx, g.cancel = context.WithCancel(context.Background())

	proxies := make([]*Proxy, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { proxies[i], errs[i] = g.reach(ctx, s, s.Transport) })
	}
	wg.Wait()

	var reached []int // indexes in servers
	var left []int    // indexes in servers of those left out
	var instructions strings.Builder
	for i, s := range servers {
		p := proxies[i]
		if errs[i] != nil {
			left = append(left, i)
			continue
		}
		reached = append(reached, i)
		if init := p.link.down.InitializeResult(); init != nil && init.Instructions != "" {
			fmt.Fprintf(&instructions, "Tools named %s%s…, from the server %q: %s\n\n", s.Name, ToolSeparator, s.Name, init.Instructions)
		}
	}
	if len(reached) == 0 {
		for _, i := range left {
			fmt.Fprintf(logOf(&g.opts), "agentvalues: the server %q: %v\n", servers[i].Name, errs[i])
		}
		g.Close()
		return nil, errors.New("mcpproxy: no server of the gateway could be reached")
	}
	instructions.WriteString(serverInstructions)
	name := opts.Name
	if name == "" {
		name = "agentvalues-gateway"
	}
	g.server = newServer(name, instructions.String(), st, g.served)
	for _, i := range left { // now that g.server is there for them to be served on
		g.leaveOut(servers[i], errs[i])
	}
	for _, i := range reached {
		p := proxies[i]
		if err := p.serveOn(ctx, g.server); err != nil {
			g.leaveOut(servers[i], err)
			continue
		}
		g.mu.Lock()
		g.proxies = append(g.proxies, p)
		g.mu.Unlock()
	}
	if len(g.served()) == 0 {
		g.Close()
		return nil, errors.New("mcpproxy: no server of the gateway could list its tools")
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
	if err := p.probeTools(ctx); err != nil {
		p.current().down.Close()
		return nil, err
	}
	return p, nil
}

// leaveOut logs why the server s is not served and, when it can be
// restarted, keeps trying to start it.
func (g *Gateway) leaveOut(s Downstream, err error) {
	if s.Restart == nil {
		fmt.Fprintf(logOf(&g.opts), "agentvalues: leaving out the server %q: %v\n", s.Name, err)
		return
	}
	wait := restartWait
	if g.opts.seams != nil && g.opts.seams.restartWait > 0 {
		wait = g.opts.seams.restartWait
	}
	fmt.Fprintf(logOf(&g.opts), "agentvalues: leaving out the server %q until it starts: %v; trying again in %v\n", s.Name, err, wait)
	g.late.Go(func() { g.startLate(s, wait) })
}

// startLate tries to start the server s after wait, doubling the wait
// after each failure up to maxRestartWait, until it is served or the
// gateway closes.
func (g *Gateway) startLate(s Downstream, wait time.Duration) {
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRestartWait)
		ctx, cancel := context.WithTimeout(g.ctx, restartTimeout)
		p, err := g.reach(ctx, s, s.Restart())
		if err == nil {
			if err = p.serveOn(ctx, g.server); err != nil {
				p = nil
			}
		}
		cancel()
		if err != nil {
			if g.ctx.Err() != nil {
				return
			}
			fmt.Fprintf(logOf(&g.opts), "agentvalues: starting the server %q: %v; trying again in %v\n", s.Name, err, wait)
			continue
		}
		g.mu.Lock()
		closed := g.closed
		if !closed {
			g.proxies = append(g.proxies, p)
		}
		g.mu.Unlock()
		if closed {
			p.Close()
			return
		}
		fmt.Fprintf(logOf(&g.opts), "agentvalues: started the server %q\n", s.Name)
		p.askLogLevel(p.current())
		return
	}
}

// rawCall implements rawCaller: a call of a tool of one of the servers
// takes that server's raw call route.
func (g *Gateway) rawCall(req *rawRequest) func(context.Context, func(*jsonrpc.Response)) {
	for _, p := range g.served() {
		if strings.HasPrefix(req.name, p.prefix) {
			return p.rawCall(req)
		}
	}
	return nil
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
