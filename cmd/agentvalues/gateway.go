package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatewayEnv holds, in the environment of every server a gateway starts,
// the chain of config files of the gateways above that server, outermost
// first, as a JSON array of absolute paths (a bare path, as an earlier
// version set it, is a chain of one). The variable is passed on by
// whatever runs in between (a proxy, a shell script), so that a gateway
// started under gateways over a chain of configs that comes back to its
// own (a config that lists the gateway itself, or A listing a gateway over
// B and B one over A) stops at once, naming the chain, instead of
// starting gateways without end; its parent leaves that server out, with
// a line saying why. A gateway over another file is not refused, up to
// maxGatewayDepth of them.
const gatewayEnv = "AGENTVALUES_GATEWAY"

// maxGatewayDepth bounds the gateways that run one under another: a loop
// the chain of config paths cannot see (a config written anew for every
// start, or reached by a path that is not the same file) still ends. A
// gateway with this many gateways above it refuses to start, naming them;
// nesting gateways deeper than two or three has no use.
const maxGatewayDepth = 8

// gatewayCommand runs the MCP gateway: MCP on stdin/stdout upstream, every
// server of the config file downstream, one store for all of them.
func gatewayCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {

	fs := newFlagSet("gateway", stderr)
	configPath := fs.String("config", "", "the mcpServers JSON `file` naming the servers")
	threshold := fs.Int("threshold", mcpproxy.DefaultThreshold, "results larger than this many `bytes` come back as a preview and a hint (0: every result)")
	maxPreview := fs.Int("max-preview", values.DefaultMaxPreview, "bound on a preview's length in `bytes`")
	originalSchemas := fs.Bool("original-schemas", false, "advertise the servers' input schemas as they are, without admitting a $r reference string in every field")
	maxMessage := fs.Int("max-message", mcpproxy.DefaultMaxMessage, "largest JSON-RPC message read from the client or a server, in `bytes`; a larger one is refused with an error (0: no bound)")
	startWait := fs.Duration("start-wait", mcpproxy.DefaultStartWait, "how long after the start a tools/list (prompts/list, resources/list) waits for servers still starting, for clients that list once and ignore list_changed (0: answer at once with what is ready)")
	prefixNames := fs.Bool("prefix-names", false, "offer every tool and prompt as SERVER__NAME, not only those two servers offer (a server's entry can ask for it with \"prefix\": true)")
	listen := fs.String("listen", "", "serve MCP over Streamable HTTP at http://`ADDR`/mcp instead of on stdin/stdout, with a store per HTTP session; a bare :PORT or PORT listens on 127.0.0.1")
	protocol := addProtocolFlag(fs)
	httpFlags := addHTTPFlags(fs)
	storeFlags := addStoreFlags(fs)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if *configPath == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: gateway takes --config FILE and nothing else", errUsage)
	}
	if *maxMessage == 0 {
		*maxMessage = -1
	}
	if *threshold == 0 {
		*threshold = -1
	}
	httpOpts, err := httpFlags.options(*listen, *maxMessage, os.Getenv)
	if err != nil {
		return err
	}
	if err := checkProtocol(*protocol); err != nil {
		return err
	}
	abs, err := filepath.Abs(*configPath)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	chain := gatewayChain(os.Getenv(gatewayEnv))
	if err := checkGatewayChain(chain, abs); err != nil {
		return err
	}
	cfg, err := readGatewayConfig(*configPath, os.LookupEnv, stderr)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal kills, as for proxy
	if *listen == "" {
		var closeStdin, closeStdout func()
		stdin, closeStdin = pollableStdin(stdin)
		defer closeStdin()
		stdout, closeStdout = pollableStdout(stdout)
		defer closeStdout()
	}
	// The servers start once the client's first message has told its
	// protocol version: a client sends initialize at once.
	version, stdin, ok := downstreamProtocol(ctx, *protocol, *listen != "", stdin)
	if !ok {
		return nil
	}

	servers := downstreams(cfg, append(chain, abs), *maxMessage, stderr)
	opts, closeStore, err := storeFlags.options(*listen != "", *maxPreview, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	opts.Threshold, opts.OriginalSchemas = *threshold, *originalSchemas
	metrics, stopTelemetry, err := startTelemetry(opts, *listen != "", stderr)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	opts.StartWait = *startWait
	opts.PrefixNames = *prefixNames
	opts.ProtocolVersion = version
	if *startWait <= 0 {
		opts.StartWait = -1
	}
	// Returns at once: the servers start in the background, each on its
	// own, and their tools are offered as each is ready.
	g, err := mcpproxy.ConnectGateway(ctx, servers, opts)
	if err != nil {
		return err
	}
	if *listen != "" {
		return serveHTTP(ctx, "gateway", g, *listen, httpOpts, metrics, stderr)
	}
	upstream := &mcpproxy.LineTransport{Reader: stdin, Writer: stdout, MaxMessage: *maxMessage, Log: stderr}
	if err := g.Run(ctx, upstream); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// gatewayChain reads the chain of config files of the gateways above this
// process from the value of gatewayEnv (see there); nil when it is empty.
func gatewayChain(env string) []string {
	if env == "" {
		return nil
	}
	var chain []string
	if strings.HasPrefix(env, "[") && json.Unmarshal([]byte(env), &chain) == nil {
		return chain
	}
	return []string{env}
}

var (
	// errGatewayLoop is why a gateway refuses to start when its own config
	// is among those of the gateways above it (gatewayEnv).
	errGatewayLoop = errors.New("gateway: a loop of gateways")
	// errGatewayDepth is why a gateway refuses to start under
	// maxGatewayDepth gateways.
	errGatewayDepth = errors.New("gateway: gateways nested too deep")
)

// checkGatewayChain returns an error when the gateway over the config
// file abs (absolute) is not to start under the gateways over the configs
// of chain: errGatewayLoop when abs is in chain (the same path, or the
// same file by another), errGatewayDepth when chain holds maxGatewayDepth
// configs already. The error names the chain.
func checkGatewayChain(chain []string, abs string) error {
	own, _ := os.Stat(abs)
	for i, p := range chain {
		if p != abs {
			if fi, err := os.Stat(p); err != nil || own == nil || !os.SameFile(fi, own) {
				continue
			}
		}
		if i == len(chain)-1 {
			return fmt.Errorf("%w: started by a gateway over the same config: %s lists the gateway itself; remove that entry", errGatewayLoop, abs)
		}
		loop := strings.Join(append(slices.Clone(chain[i:]), abs), " → ")
		return fmt.Errorf("%w: %s, each config listing a gateway over the next; remove one of those entries", errGatewayLoop, loop)
	}
	if len(chain) >= maxGatewayDepth {
		return fmt.Errorf("%w: started under %d gateways, the most that may run one under another: %s → %s; does a config list a gateway over a config that does the same?", errGatewayDepth, len(chain), strings.Join(chain, " → "), abs)
	}
	return nil
}

// downstreams makes the transports of the servers, in their order. Each
// can be made again, to restart its server. chain is the configs of the
// gateways above the servers, this one's last: a stdio server gets it in
// gatewayEnv.
func downstreams(servers []gatewayServer, chain []string, maxMessage int, stderr io.Writer) []mcpproxy.Downstream {
	env, _ := json.Marshal(chain)
	var out []mcpproxy.Downstream
	for _, s := range servers {
		connect := func() mcp.Transport {
			switch s.kind {
			case "http", "sse":
				// -max-message bounds its messages as a stdio server's
				// (BoundedRoundTripper), in place of the SDK's 16 MiB event cap.
				client := &http.Client{Transport: &mcpproxy.BoundedRoundTripper{Base: headers(s.Headers), MaxMessage: maxMessage, Log: stderr}}
				if s.kind == "sse" {
					return &sseTransport{mcp.SSEClientTransport{Endpoint: s.URL, MaxEventSize: -1, HTTPClient: client}}
				}
				return &mcp.StreamableClientTransport{Endpoint: s.URL, MaxEventSize: -1, HTTPClient: client}
			}
			cmd := exec.Command(s.Command, s.Args...)
			cmd.Dir = s.Cwd
			cmd.Env = os.Environ()
			for k, v := range s.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			// Last, so that an entry's env cannot undo it.
			cmd.Env = append(cmd.Env, gatewayEnv+"="+string(env))
			cmd.Stderr = stderr // the servers' own diagnostics stay visible
			return &mcpproxy.CommandTransport{Command: cmd, MaxMessage: maxMessage, TerminateDuration: terminateDuration}
		}
		out = append(out, mcpproxy.Downstream{Name: s.name, Transport: connect(), Restart: connect, PrefixNames: s.Prefix})
	}
	return out
}

// headers is an http.RoundTripper that sets the config's headers on every
// request (an API key, say).
type headers map[string]string

func (h headers) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h) > 0 {
		req = req.Clone(req.Context())
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// An sseTransport is an mcp.SSEClientTransport whose connection outlives
// the context given to Connect. The SDK's transport opens its event stream
// (the only way an SSE server's messages come) with that context, so the
// stream ended as soon as the gateway's connect deadline was released;
// here the context ends the stream only while Connect is under way
// (bounding a server that never sends its endpoint), and after it the
// stream lasts until the connection is closed.
type sseTransport struct{ mcp.SSEClientTransport }

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	c, err := t.SSEClientTransport.Connect(streamCtx)
	stop()
	if err != nil {
		cancel()
		return nil, err
	}
	return &sseConn{Connection: c, cancel: cancel}, nil
}

// An sseConn ends its event stream when it is closed.
type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
