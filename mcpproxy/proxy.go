package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultThreshold is the size in bytes above which a tool result reaches the
// agent as a preview and a hint rather than whole. A result this small (about
// 2,000 tokens) costs less to show than the read_value turn a preview would
// invite; past it, the bounded preview (at most 2 KiB by default) saves.
const DefaultThreshold = 8 << 10

// MetaHandle is the key ("agentvalues/handle"), in a tool result's _meta,
// of the handle under which the proxy stored the result ("r3"). Results of
// read_value and results refused before the call carry no handle.
const MetaHandle = mcpresult.MetaHandle

// MetaContentHandle is the key ("agentvalues/content-handle"), in a tool
// result's _meta, of the handle under which the proxy stored the result's
// content blocks when it also had structured content that they do not
// merely repeat.
const MetaContentHandle = mcpresult.MetaContentHandle

// Options configures a [Proxy]. The zero value, and a nil *Options, give the
// documented defaults.
type Options struct {
	// Threshold is the size in bytes of a stored result above which the agent
	// gets a preview and a hint instead of the whole result. The size is the
	// text's length for a text value and the JSON encoding's otherwise.
	// Zero means DefaultThreshold; negative previews every result.
	Threshold int
	// Values is the store results go to. Nil means values.New(): one store,
	// and one handle sequence, per Proxy (per Gateway: its servers share
	// it), shared by every upstream session.
	Values *values.SessionValues
	// PerSession gives each upstream session a store of its own (and Values
	// is unused), made with values.New(SessionOptions...) at the session's
	// first call and dropped when the session ends. A session can neither
	// read nor name another's values. Each new session's handles start past
	// every handle handed out before it (values.WithFirstHandle): every
	// handle in a response written so far, to any session, alive or ended;
	// so that a handle in the transcript of a session that was lost names
	// nothing in the one that replaces it. Finding where to start costs the
	// same whatever the number of sessions.
	PerSession     bool
	SessionOptions []values.Option
	// SessionStore, with PerSession, makes the store of a session that has
	// an ID (one served over Streamable HTTP) in place of
	// values.New(SessionOptions...): typically values.Open(d, id, …) of a
	// durable store d, so that the session's values outlive the process.
	// The HTTP handler then continues such a session, named by a client
	// after a restart or on another process that shares d (see
	// [Proxy.HTTPHandler]). opts are SessionOptions and a
	// values.WithFirstHandle past every handle handed out so far, for
	// values.Open: a new session's handles start past those (so that a
	// client that starts a new session rather than continuing its old one
	// never finds an old handle naming a new value), a continued one's
	// where the session left them. A session's values stay in the durable store after it ends, until
	// the store's own expiry removes them. If it fails, the session gets a store in memory and Log a
	// line saying why. Nil means values.New for every session.
	SessionStore func(id string, opts ...values.Option) (*values.SessionValues, error)
	// Log receives one line for each event a person running the proxy should
	// know of: the downstream server going away, a downstream tool that cannot
	// be mirrored. Nil means os.Stderr.
	Log io.Writer
	// Name is the implementation name the proxy gives upstream. Empty means
	// "agentvalues(<downstream name>)".
	Name string
	// OriginalSchemas advertises the downstream tools' input schemas as they
	// are. By default every field's schema also admits a reference string
	// (see ReferencePattern), so that a client that enforces schemas lets a
	// model write "$r3" where an array is asked for; arguments are validated
	// against the original schema either way, after resolution.
	OriginalSchemas bool
	// StartWait, for a gateway only, is how long after [ConnectGateway] a
	// list request (tools/list, prompts/list, resources/list,
	// resources/templates/list) waits for the servers still in their first
	// attempt to start, so that a client that lists its tools once, right
	// after initialize, and ignores list_changed still sees the servers
	// that start within it. Past it, a list request answers at once with
	// what is ready. Zero means DefaultStartWait; negative never waits.
	StartWait time.Duration
	// PrefixNames, for a gateway only, offers every server's tools and
	// prompts as SERVER__NAME, as Downstream.PrefixNames does for one
	// server. By default a name is offered as it is unless two servers
	// offer it (see [Gateway]).
	PrefixNames bool
	// ProtocolVersion is the MCP protocol version the proxy asks its
	// downstream servers for (each may answer with another it supports);
	// it must be one the go-sdk speaks (mcp.SupportedProtocolVersions).
	// Empty means DefaultProtocolVersion (2025-11-25). Set it to the
	// client's version, read with [ClientProtocolVersion], for a proxy
	// serving one client: see protocol.go for the policy.
	ProtocolVersion string

	// Telemetry, when not nil, is told of every tool call and resource
	// read forwarded downstream (see [Telemetry]); package
	// mcpproxy/telemetry gives one that exports OpenTelemetry traces and
	// metrics. Nil observes nothing, at no cost.
	Telemetry Telemetry

	seams *seams // set only by the package's tests; nil means the real clock and waits
}

// seams are what the package's tests put in place of the clock and the
// fixed waits, so that they need not sleep. The zero value is the real ones.
type seams struct {
	afterFunc    func(time.Duration, func()) // schedules a progress token's release; nil: time.AfterFunc
	listBackoff  time.Duration               // the first wait before listing the tools again; 0: listBackoff
	restartWait  time.Duration               // the first wait before restarting a dead server; 0: restartWait
	startTimeout time.Duration               // bounds one attempt to start a gateway's server; 0: startTimeout
	// idleTimer makes a session's idle timer (httpsession.go), armed;
	// nil: time.AfterFunc.
	idleTimer func(time.Duration, func()) sessionTimer
}

// A Proxy stands between one downstream MCP server and the agent. Create it
// with [Connect]; serve it with [Proxy.Run], over Streamable HTTP with
// [Proxy.HTTPHandler], or connect [Proxy.Server] to a transport; release
// it with [Proxy.Close].
//
// A Proxy is safe for concurrent use: tool calls run in parallel, and the
// mirrored tool list follows the downstream server's list_changed
// notifications while calls are in flight.
type Proxy struct {
	threshold int
	rawFrom   int // the size from which a result may take the raw result route; tests set it
	stores    *stores
	splices   *wire.Splices // the large arguments of the calls in flight (see callTool)
	log       io.Writer
	seams     seams // with the defaults filled in

	originalSchemas bool // see Options

	tel Telemetry // Options.Telemetry

	version string // the protocol version asked of the server (Options.ProtocolVersion)

	client  *mcp.Client
	server  *mcp.Server
	restart func() mcp.Transport // makes the transport to restart a dead server with; nil: none
	prefix  string               // a gateway's server: its name and ToolSeparator, for the names that need it
	names   *names               // decides the upstream names of its tools and prompts (gateway_names.go)

	prefixNames bool // offer every tool and prompt as prefix+name (Downstream.PrefixNames)

	tools   map[string]*mirroredTool                 // by name, downstream tools seen; owned by syncTools
	offered atomic.Pointer[map[string]*mirroredTool] // by upstream name, the tools offered; published by syncTools
	rawOff  bool                                     // tests set it to keep every call on the SDK route
	rawN    atomic.Int64                             // calls taken by the raw call route, for tests

	// Owned by syncCatalog: the downstream resources by URI and resource
	// templates by URI template offered, as their definitions' JSON ("" for
	// one left out).
	resources, templates map[string]string

	mu     sync.Mutex
	link   *link // the connection to the downstream server
	closed bool

	restartErr  error     // why the last attempt to restart the server failed; nil once it is back
	nextRestart time.Time // when the next attempt is due, after a failed one

	progress    sync.Map // downstream progress token -> progressRoute
	inFlight    inFlight // the upstream sessions' calls in flight (see passthrough.go)
	subs        subscriptions
	rootsFrom   rootsFrom // the session whose roots were last announced to the server
	urlElicits  urlElicits
	parked      parkedCalls // calls waiting for a client's answers (bridge.go)
	rawCalls    rawCalls    // the raw call route's calls downstream, which p.ctx's end cancels
	progressSeq atomic.Uint64

	refresh chan struct{} // a pending list_changed notification
	ctx     context.Context
	cancel  context.CancelFunc // called by Close: stops followToolList and cancels downstream calls
	wg      sync.WaitGroup
}

// Connect connects to the downstream MCP server through downstream (for a
// local command, a [CommandTransport]), lists its tools and mirrors them.
// ctx bounds the connection handshake and the first listing only.
//
// On failure nothing is left running.
func Connect(ctx context.Context, downstream mcp.Transport, opts *Options) (*Proxy, error) {
	if opts == nil {
		opts = &Options{}
	}
	p, err := connectDownstream(ctx, downstream, opts, "", newStores(opts))
	if err != nil {
		return nil, err
	}
	name, instructions := opts.Name, ""
	if init := p.link.down.InitializeResult(); init != nil {
		if name == "" && init.ServerInfo != nil {
			name = "agentvalues(" + init.ServerInfo.Name + ")"
		}
		instructions = init.Instructions
	}
	if name == "" {
		name = "agentvalues"
	}
	if instructions != "" {
		instructions += "\n\n"
	}
	instructions += serverInstructions
	server := newServer(name, instructions, p.stores, func() []*Proxy { return []*Proxy{p} }, opts.Telemetry)
	if err := p.serveOn(ctx, server); err != nil {
		return nil, err
	}
	return p, nil
}

// newServer makes the MCP server that faces the agent, with the read_value
// and query_value tools over each session's store (their calls observed
// by tel, when not nil); log levels its sessions set go to the servers of
// proxies.
func newServer(name, instructions string, st *stores, proxies func() []*Proxy, tel Telemetry) *mcp.Server {
	subscribe, unsubscribe := subscribeVia(st, proxies, true), subscribeVia(st, proxies, false)
	server := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, &mcp.ServerOptions{
		Instructions: instructions,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		// The rest of the protocol, passed through (passthrough.go).
		CompletionHandler: completeVia(st, proxies),
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return subscribe(ctx, req.Params.URI, req.Session)
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return unsubscribe(ctx, req.Params.URI, req.Session)
		},
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { rootsChanged(proxies(), req.Session, true) },
		RootsListChangedHandler: func(_ context.Context, req *mcp.RootsListChangedRequest) {
			rootsChanged(proxies(), req.Session, false)
		},
	})
	server.AddReceivingMiddleware(st.noteHanded)
	followLogLevel(server, st, proxies)
	server.AddReceivingMiddleware(st.inSession)
	// Last, so outermost: the arguments of a call over HTTP that the
	// handler held apart (httpbody.go) are back before anything reads them.
	server.AddReceivingMiddleware(restoreArguments)
	server.AddSendingMiddleware(st.queueNotifications)
	server.AddTool(readValueTool(), observeOwn(tel, st, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return handleReadValue(st.of(req.Session), req), nil
	}))

	server.AddTool(queryValueTool(), observeOwn(tel, st, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {

		return handleQueryValue(ctx, st, st.of(req.Session), req), nil

	}))

	return server
}

// connectDownstream connects to the downstream server and makes the Proxy
// for it, not yet serving: see serveOn. Its tools are offered upstream under
// prefix followed by their own names. On failure nothing is left running.
func connectDownstream(ctx context.Context, downstream mcp.Transport, opts *Options, prefix string, st *stores) (*Proxy, error) {
	version, err := downstreamVersion(opts)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		version:   version,
		threshold: opts.Threshold,
		stores:    st,
		splices:   wire.NewSplices(),
		log:       opts.Log,
		prefix:    prefix,

		originalSchemas: opts.OriginalSchemas,
		tel:             opts.Telemetry,
		tools:           make(map[string]*mirroredTool),
		resources:       make(map[string]string),
		templates:       make(map[string]string),
		refresh:         make(chan struct{}, 1),
	}
	if p.threshold == 0 {
		p.threshold = DefaultThreshold
	}
	if p.log == nil {
		p.log = os.Stderr
	}
	if opts.seams != nil {
		p.seams = *opts.seams
	}
	if p.seams.afterFunc == nil {
		p.seams.afterFunc = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	if p.seams.listBackoff <= 0 {
		p.seams.listBackoff = listBackoff
	}
	if p.seams.restartWait <= 0 {
		p.seams.restartWait = restartWait
	}
	p.client = mcp.NewClient(&mcp.Implementation{Name: "agentvalues", Version: version}, &mcp.ClientOptions{
		// Sampling, elicitation and roots are the upstream clients', passed
		// on (passthrough_client.go).
		Capabilities:                  downstreamCaps(),
		CreateMessageWithToolsHandler: p.createMessage,
		ElicitationHandler:            p.elicit,
		ElicitationCompleteHandler:    p.elicitationComplete,
		// A server's input requests within a result (protocol 2026-07-28)
		// go up in the result, to the SDK server, which passes them to
		// the client or, for one before 2026-07-28, asks it itself.
		MultiRoundTrip:             &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { p.requestRefresh() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { p.requestRefresh() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { p.requestRefresh() },
		ResourceUpdatedHandler:     p.resourceUpdated, // passthrough_subscribe.go
		// Log messages and progress are taken before the SDK sees them
		// (intake.go).
	})
	p.client.AddReceivingMiddleware(p.clientRequests)
	l, err := p.dial(ctx, downstream)
	if err != nil {
		return nil, err
	}
	p.link = l
	return p, nil
}

// serveOn offers the downstream tools on server and starts following the
// downstream tool list. ctx bounds the first listing. On failure the
// downstream connection is closed.
func (p *Proxy) serveOn(ctx context.Context, server *mcp.Server) error {
	p.mu.Lock()
	p.server = server
	p.mu.Unlock()
	if p.names == nil {
		p.names = newNames(nil, p.log) // a lone proxy's
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	context.AfterFunc(p.ctx, p.rawCalls.close) // one watch for every raw call
	if err := p.syncTools(ctx); err != nil {
		p.cancel()
		p.link.down.Close()
		return err
	}
	if err := p.syncCatalog(ctx); err != nil {
		// The tools are what the proxy is for: served without the rest.
		fmt.Fprintf(p.log, "agentvalues: %v (serving %s without its prompts or resources until it reports a change)\n", err, p.serverName())
	}
	p.wg.Add(2)
	go p.followToolList()
	go p.watchDownstream()
	return nil
}

// A link is one connection to the downstream server. A server that is
// restarted gets a new link; the calls of the old one fail with why it
// ended.
type link struct {
	down      *mcp.ClientSession
	conn      *ownLine       // the connection, when it is the proxy's own
	notes     mcp.Connection // the connection, to send notifications the SDK client has no method for
	transport mcp.Transport  // as connected, to describe a dead server
	ended     chan struct{}  // closed by watchDownstream once it knows why the link ended
	gone      error          // why it ended, for a server that went away; under Proxy.mu
}

// dial connects to the downstream server over t.
func (p *Proxy) dial(ctx context.Context, t mcp.Transport) (*link, error) {
	rt := &rawTransport{Transport: t, p: p}
	down, err := p.client.Connect(ctx, intakeTransport{rt, p}, &mcp.ClientSessionOptions{ProtocolVersion: p.version})
	if err != nil {
		if ct, ok := t.(*CommandTransport); ok {
			if status := ct.exitStatus(2 * time.Second); status != "" {
				return nil, fmt.Errorf("mcpproxy: the downstream MCP server %s exited (%s) before the MCP handshake completed: %w", commandName(ct), status, err)
			}
		}
		return nil, fmt.Errorf("mcpproxy: connecting to the downstream server: %w", err)
	}
	return &link{down: down, conn: rt.conn, notes: rt.c, transport: t, ended: make(chan struct{})}, nil
}

// requestRefresh asks followToolList to list the downstream tools, prompts
// and resources again.
func (p *Proxy) requestRefresh() {
	select {
	case p.refresh <- struct{}{}:
	default: // a refresh is already pending; it will see this change too
	}
}

// current returns the link calls go over now.
func (p *Proxy) current() *link {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.link
}

// version is what the proxy reports as its implementation version, to
// clients and to servers alike: the module's version in the binary's build
// information (see moduleVersion).
var version = moduleVersion(readBuildInfo())

// readBuildInfo is debug.ReadBuildInfo's info, nil when the binary has none.
func readBuildInfo() *debug.BuildInfo {
	info, _ := debug.ReadBuildInfo()
	return info
}

// modulePath is the module mcpproxy belongs to.
const modulePath = "github.com/agentvalues/values"

// moduleVersion returns the version of modulePath that info records: the
// main module's for the agentvalues command (a release tag for `go install
// …@vX.Y.Z`, a pseudo-version for a build in a git checkout), the
// dependency's for a program that imports mcpproxy. It is "(devel)" when
// there is none to give (no build info, a test binary, a replace by a
// directory), as the go command itself says then.
func moduleVersion(info *debug.BuildInfo) string {
	if info == nil {
		return "(devel)"
	}
	mod := &info.Main
	if mod.Path != modulePath {
		mod = nil
		for _, d := range info.Deps {
			if d.Path == modulePath {
				mod = d
				if d.Replace != nil {
					mod = d.Replace
				}
				break
			}
		}
	}
	if mod == nil || mod.Version == "" {
		return "(devel)"
	}
	return mod.Version
}

// serverInstructions tells the agent, once per session, how the proxy
// changes the tools it sees.
const serverInstructions = `Tool results are stored under handles (r1, r2, ...). A large result arrives as a bounded preview plus a hint; the whole value stays available. Pass a stored value, or a part of it, to any tool by writing a reference as the whole string argument: "$r1", "$r1.items.0.path" (object keys and array indexes; -1 is the last element). Read any stored value in pages with read_value; ask a question of one without reading it with query_value (a jq program; its result is stored under a new handle).`

// Server returns the MCP server that faces the agent. Connect it to a
// transport with its Connect or Run method, or use [Proxy.Run], or
// [Proxy.HTTPHandler] to serve it over Streamable HTTP.
func (p *Proxy) Server() *mcp.Server { return p.server }

// Values returns the store holding every tool result the proxy has seen.
// With Options.PerSession there is none: it returns nil.
func (p *Proxy) Values() *values.SessionValues { return p.stores.shared }

// Run serves the agent over upstream until the agent disconnects or ctx is
// done, then closes the proxy. When ctx is done, calls still in flight are
// cancelled downstream and answered upstream with an isError result, so Run
// returns promptly even if the downstream server is stuck. For stdio use a
// [LineTransport] over standard input and output: a malformed line from
// the client is answered, not fatal, arguments past the SDK's 16 MiB line
// cap arrive, and the nominal call of a mirrored tool is answered without
// the SDK's decoding and dispatch on either side (the raw call route: see
// the package documentation, How a call travels), with the same result.
func (p *Proxy) Run(ctx context.Context, upstream mcp.Transport) error {
	// The server session waits for its handlers before it closes; cancelling
	// p.ctx is what ends the handlers' downstream calls.
	stop := context.AfterFunc(ctx, p.cancel)
	defer stop()
	err := p.server.Run(ctx, withRawCalls(upstream, p)) // see call_rawcall.go
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close disconnects from the downstream server (for a [CommandTransport]:
// closes its input and waits for it to exit, signalling it if it does not)
// and stops the proxy's goroutines. Calls in flight are cancelled: the
// downstream server is sent a cancellation and the agent an isError result
// saying the call may have partly run. Upstream sessions are not closed:
// calls on them fail from now on. Close is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()         // first: the session's Close waits for the calls it cancels
	p.rawCalls.close() // now, not on the watch's goroutine: before the connection's end fails them
	err := p.current().down.Close()
	p.wg.Wait()
	if errors.Is(err, mcp.ErrConnectionClosed) {
		err = nil
	}
	return err
}

// watchDownstream reports the downstream server going away, and closes
// the link's ended channel. A proxy that can restart the server (see
// [Downstream]) then does, with a growing wait between attempts, and
// watches the new link.
func (p *Proxy) watchDownstream() {
	defer p.wg.Done()
	wait := p.seams.restartWait
	for {
		l := p.current()
		started := time.Now()
		err := l.down.Wait()
		if p.isClosed() {
			close(l.ended)
			return
		}
		// Outside p.mu: finding the exit status may wait for the process.
		gone := downstreamGone(l.transport, err)
		p.mu.Lock()
		closing := p.closed
		if !closing {
			l.gone = gone
		}
		p.mu.Unlock()
		close(l.ended)
		if closing {
			return
		}
		if p.restart == nil {
			fmt.Fprintf(p.log, "agentvalues: %v; calls to its tools now fail (read_value still works)\n", gone)
			return
		}
		if time.Since(started) > maxRestartWait {
			wait = p.seams.restartWait // it ran a while: not a crash loop
		}
		fmt.Fprintf(p.log, "agentvalues: %v; calls to its tools fail until it is restarted\n", gone)
		if !p.reconnect(&wait) {
			return
		}
	}
}

// restartWait is the first wait before restarting a server that died.
const restartWait = time.Second

// maxRestartWait bounds the wait between two attempts to restart a server.
const maxRestartWait = 30 * time.Second

// reconnect restarts the downstream server after *wait, doubling *wait
// after each attempt, until it succeeds (true) or the proxy is closed.
func (p *Proxy) reconnect(wait *time.Duration) bool {
	for {
		select {
		case <-p.ctx.Done():
			return false
		case <-time.After(*wait):
		}
		*wait = min(2**wait, maxRestartWait)
		ctx, cancel := context.WithTimeout(p.ctx, startTimeout)
		l, err := p.dial(ctx, p.restart())
		cancel()
		if err != nil {
			if p.ctx.Err() != nil {
				return false
			}
			p.mu.Lock()
			p.restartErr, p.nextRestart = err, time.Now().Add(*wait)
			p.mu.Unlock()
			fmt.Fprintf(p.log, "agentvalues: restarting %s: %v; trying again in %v\n", p.serverName(), err, *wait)
			continue
		}
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.link, p.restartErr = l, nil
		}
		p.mu.Unlock()
		if closed {
			l.down.Close()
			return false
		}
		fmt.Fprintf(p.log, "agentvalues: restarted %s\n", p.serverName())
		p.requestRefresh() // its tools may have changed
		go p.askLogLevel(l)
		go p.resubscribe(l)
		return true
	}
}

// gatewayName is the name of a gateway's server, or "" for a lone proxy.
func (p *Proxy) gatewayName() string { return strings.TrimSuffix(p.prefix, ToolSeparator) }

// serverName names the downstream server in the log.
func (p *Proxy) serverName() string {
	if p.prefix != "" {
		return fmt.Sprintf("the server %q", strings.TrimSuffix(p.prefix, ToolSeparator))
	}
	return "the downstream MCP server"
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// downstreamGone describes why the downstream connection ended.
func downstreamGone(t mcp.Transport, err error) error {
	if ct, ok := t.(*CommandTransport); ok {
		if status := ct.exitStatus(2 * time.Second); status != "" {
			return fmt.Errorf("the downstream MCP server %s exited (%s)", commandName(ct), status)
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("the downstream MCP server disconnected (%v)", err)
	}
	return errors.New("the downstream MCP server disconnected")
}

func commandName(ct *CommandTransport) string {
	if ct.Command == nil {
		return ""
	}
	return fmt.Sprintf("%q", strings.Join(ct.Command.Args, " "))
}

// rawLink returns the link a raw call goes over, under one lock: nil
// when downstreamErr would give an error (the proxy is shut down, or the
// server is gone), which the SDK route then gives the call.
func (p *Proxy) rawLink() *link {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.link.gone != nil {
		return nil
	}
	return p.link
}

// downstreamErr returns why calls cannot reach the downstream server, or nil.
func (p *Proxy) downstreamErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errors.New("the proxy is shut down")
	case p.link.gone != nil && p.restart != nil && p.restartErr != nil:
		return fmt.Errorf("%w; restarting it failed (%v); the next attempt is in %v", p.link.gone, p.restartErr, max(time.Until(p.nextRestart), 0).Round(time.Second))
	case p.link.gone != nil && p.restart != nil:
		return fmt.Errorf("%w; it is being restarted: call again in a moment", p.link.gone)
	}
	return p.link.gone
}

// A progressRoute is where the progress of one forwarded call goes: the
// upstream session that made the call, the token it chose, and the lane of
// the call's own stream (which takes nothing once the result is written:
// the session's lane takes what comes later).
type progressRoute struct {
	sess  *session
	token any
	call  *lane
}

// progressToken registers a call's upstream progress token and returns the
// token to send downstream in its place, unique within the proxy, so two
// calls (of one session or of two) that chose the same token never receive
// each other's progress. release forgets the token after progressGrace.
func (p *Proxy) progressToken(s *session, tok any, call *lane) (down string, release func()) {
	down = fmt.Sprintf("agentvalues-%d", p.progressSeq.Add(1))
	p.progress.Store(down, progressRoute{s, tok, call})
	// A notification sent just before the result may be read just after
	// it: relayed for progressGrace more, on the session's lane.
	return down, func() { p.seams.afterFunc(progressGrace, func() { p.progress.Delete(down) }) }
}
