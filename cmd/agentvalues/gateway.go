package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
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

// maxConfig bounds the config file a gateway reads.
const maxConfig = 4 << 20

// A gatewayConfig is the mcpServers file that Claude Desktop, Claude Code,
// Cursor and other clients read. Members the gateway does not know are
// ignored, as those clients ignore each other's.
type gatewayConfig struct {
	MCPServers map[string]serverConfig `json:"mcpServers"`
}

// A serverConfig is one entry of mcpServers: a command to start (stdio),
// or the URL of a Streamable HTTP server.
type serverConfig struct {
	Type     string            `json:"type"` // "stdio", "http" or "streamable-http"; empty: by command or url
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	URL      string            `json:"url"`
	Headers  map[string]string `json:"headers"`
	Disabled bool              `json:"disabled"`
	// Prefix offers every tool and prompt of this server as SERVER__NAME
	// (mcpproxy.Downstream.PrefixNames); by default only names that two
	// servers offer are.
	Prefix bool `json:"prefix"`
}

// gatewayCommand runs the MCP gateway: MCP on stdin/stdout upstream, every
// server of the config file downstream, one store for all of them.
func gatewayCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {

	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the mcpServers JSON `file` naming the servers")
	threshold := fs.Int("threshold", mcpproxy.DefaultThreshold, "results larger than this many `bytes` come back as a preview and a hint (0: every result)")
	maxPreview := fs.Int("max-preview", values.DefaultMaxPreview, "bound on a preview's length in `bytes`")
	originalSchemas := fs.Bool("original-schemas", false, "advertise the servers' input schemas as they are, without admitting a $r reference string in every field")
	maxMessage := fs.Int("max-message", mcpproxy.DefaultMaxMessage, "largest JSON-RPC message read from the client or a server, in `bytes`; a larger one is refused with an error (0: no bound)")
	startWait := fs.Duration("start-wait", mcpproxy.DefaultStartWait, "how long after the start a tools/list (prompts/list, resources/list) waits for servers still starting, for clients that list once and ignore list_changed (0: answer at once with what is ready)")
	prefixNames := fs.Bool("prefix-names", false, "offer every tool and prompt as SERVER__NAME, not only those two servers offer (a server's entry can ask for it with \"prefix\": true)")
	listen := fs.String("listen", "", "serve MCP over Streamable HTTP at http://`ADDR`/mcp instead of on stdin/stdout, with a store per HTTP session; a bare :PORT or PORT listens on 127.0.0.1")
	httpFlags := addHTTPFlags(fs)
	storeFlags := addStoreFlags(fs)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
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
	abs, err := filepath.Abs(*configPath)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	chain := gatewayChain(os.Getenv(gatewayEnv))
	if err := checkGatewayChain(chain, abs); err != nil {
		return err
	}
	cfg, err := readGatewayConfig(*configPath)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal kills, as for proxy

	servers := downstreams(cfg, append(chain, abs), *maxMessage, stderr)
	if len(servers) == 0 {
		return fmt.Errorf("gateway: %s names no server to start", *configPath)
	}
	opts, closeStore, err := storeFlags.options(*listen != "", *maxPreview, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	opts.Threshold, opts.OriginalSchemas = *threshold, *originalSchemas
	opts.StartWait = *startWait
	opts.PrefixNames = *prefixNames
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
		return serveHTTP(ctx, "gateway", g, *listen, httpFlags.options(*maxMessage), stderr)
	}
	upstream := &mcpproxy.LineTransport{Reader: stdin, Writer: stdout, MaxMessage: *maxMessage, Log: stderr}
	if err := g.Run(ctx, upstream); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// readGatewayConfig reads and checks the config file: every enabled server
// has a valid name and exactly one of command and url.
func readGatewayConfig(path string) (*gatewayConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return nil, fmt.Errorf("gateway: reading %s: %w", path, err)
	}
	if len(data) > maxConfig {
		return nil, fmt.Errorf("gateway: %s is over %d bytes; is it the config file?", path, maxConfig)
	}
	var cfg gatewayConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("gateway: %s is not an mcpServers config: %w", path, err)
	}
	if cfg.MCPServers == nil {
		return nil, fmt.Errorf(`gateway: %s has no "mcpServers" object`, path)
	}
	for name, s := range cfg.MCPServers {
		if s.Disabled {
			continue
		}
		if err := mcpproxy.ValidServerName(name); err != nil {
			return nil, fmt.Errorf("gateway: %s: %w", path, err)
		}
		switch kind := s.kind(); kind {
		case "stdio":
			if s.Command == "" {
				return nil, fmt.Errorf(`gateway: %s: server %q: a stdio server needs "command"`, path, name)
			}
		case "http":
			if s.URL == "" {
				return nil, fmt.Errorf(`gateway: %s: server %q: a Streamable HTTP server needs "url"`, path, name)
			}
		default:
			return nil, fmt.Errorf(`gateway: %s: server %q: %s`, path, name, kind)
		}
	}
	return &cfg, nil
}

// kind is "stdio", "http", or why the entry names neither.
func (s serverConfig) kind() string {
	switch strings.ToLower(s.Type) {
	case "stdio":
		return "stdio"
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return "http"
	case "sse":
		return `the SSE transport (replaced by Streamable HTTP in MCP 2025-03-26) is not supported; give the server's Streamable HTTP URL with "type": "http"`
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			return `it has both "command" and "url"; say which with "type"`
		case s.Command != "":
			return "stdio"
		case s.URL != "":
			return "http"
		}
		return `it has neither "command" nor "url"`
	}
	return fmt.Sprintf("unknown type %q", s.Type)
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

// downstreams makes the transports of the enabled servers, in the order of
// their names. Each can be made again, to restart its server. chain is
// the configs of the gateways above the servers, this one's last: a stdio
// server gets it in gatewayEnv.
func downstreams(cfg *gatewayConfig, chain []string, maxMessage int, stderr io.Writer) []mcpproxy.Downstream {
	env, _ := json.Marshal(chain)
	var out []mcpproxy.Downstream
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPServers)) {
		s := cfg.MCPServers[name]
		if s.Disabled {
			continue
		}
		connect := func() mcp.Transport {
			if s.kind() != "stdio" {
				// -max-message bounds its messages as a stdio server's
				// (BoundedRoundTripper), in place of the SDK's 16 MiB event cap.
				return &mcp.StreamableClientTransport{Endpoint: s.URL, MaxEventSize: -1,
					HTTPClient: &http.Client{Transport: &mcpproxy.BoundedRoundTripper{Base: headers(s.Headers), MaxMessage: maxMessage, Log: stderr}}}
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
		out = append(out, mcpproxy.Downstream{Name: name, Transport: connect(), Restart: connect, PrefixNames: s.Prefix})
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
