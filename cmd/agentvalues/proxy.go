package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectTimeout bounds starting the downstream server and its handshake;
// generous, since `npx -y` may download the server first.
const connectTimeout = 2 * time.Minute

// terminateDuration is the downstream server's CommandTransport
// TerminateDuration; zero means mcpproxy.DefaultTerminateDuration. Only the
// tests of this command change it, in the test binary run as the command.
var terminateDuration time.Duration

// proxyCommand runs the MCP proxy: MCP on stdin/stdout upstream, COMMAND
// downstream. It returns when the client disconnects or on SIGINT/SIGTERM.
func proxyCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("proxy", stderr)
	threshold := fs.Int("threshold", mcpproxy.DefaultThreshold, "results larger than this many `bytes` come back as a preview and a hint (0: every result)")
	maxPreview := fs.Int("max-preview", values.DefaultMaxPreview, "bound on a preview's length in `bytes`")
	originalSchemas := fs.Bool("original-schemas", false, "advertise the servers' input schemas as they are, without admitting a $r reference string in every field")
	listen := fs.String("listen", "", "serve MCP over Streamable HTTP at http://`ADDR`/mcp instead of on stdin/stdout, with a store per HTTP session; a bare :PORT or PORT listens on 127.0.0.1")
	maxMessage := fs.Int("max-message", mcpproxy.DefaultMaxMessage, "largest JSON-RPC message read from the client or the server, in `bytes`; a larger one is refused with an error (0: no bound)")
	protocol := addProtocolFlag(fs)
	httpFlags := addHTTPFlags(fs)
	storeFlags := addStoreFlags(fs)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	command := fs.Args()
	if len(command) == 0 {
		return fmt.Errorf("%w: proxy needs the downstream server's COMMAND after --", errUsage)
	}
	if *maxMessage == 0 {
		*maxMessage = -1 // 0 on the command line means: no bound
	}
	if *threshold == 0 {
		*threshold = -1 // 0 on the command line means: preview everything
	}
	httpOpts, err := httpFlags.options(*listen, *maxMessage, os.Getenv)
	if err != nil {
		return err
	}
	if err := checkProtocol(*protocol); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal the proxy shuts down (cancelling calls in
	// flight); restoring the default handling lets a second one kill it.
	context.AfterFunc(ctx, stop)
	if *listen == "" {
		var closeStdin, closeStdout func()
		stdin, closeStdin = pollableStdin(stdin)
		defer closeStdin()
		stdout, closeStdout = pollableStdout(stdout)
		defer closeStdout()
	}
	version, stdin, ok := downstreamProtocol(ctx, *protocol, *listen != "", stdin)
	if !ok {
		return nil // a signal before the client's first message
	}

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = stderr // the server's own diagnostics stay visible
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
	opts.ProtocolVersion = version
	connectCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	p, err := mcpproxy.Connect(connectCtx, &mcpproxy.CommandTransport{Command: cmd, MaxMessage: *maxMessage, TerminateDuration: terminateDuration}, opts)
	cancel()
	if err != nil {
		return err
	}
	if *listen != "" {
		return serveHTTP(ctx, "proxy", p, *listen, httpOpts, metrics, stderr)
	}
	upstream := &mcpproxy.LineTransport{Reader: stdin, Writer: stdout, MaxMessage: *maxMessage, Log: stderr}
	if err := p.Run(ctx, upstream); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// addProtocolFlag adds the -protocol-version flag of proxy and gateway.
func addProtocolFlag(fs *flag.FlagSet) *string {
	return fs.String("protocol-version", "", "the MCP protocol `version` asked of the server(s), one of "+strings.Join(mcp.SupportedProtocolVersions(), ", ")+
		"; empty: on stdin/stdout the client's own, read from its first message, and with -listen "+mcpproxy.DefaultProtocolVersion+" (the newest whose calls carry no per-request _meta)")
}

// checkProtocol refuses a -protocol-version the SDK does not speak.
func checkProtocol(version string) error {
	if version != "" && !slices.Contains(mcp.SupportedProtocolVersions(), version) {
		return fmt.Errorf("%w: -protocol-version %q: not one of %s", errUsage, version, strings.Join(mcp.SupportedProtocolVersions(), ", "))
	}
	return nil
}

// clientVersionWait bounds how long proxy and gateway on stdin/stdout
// wait for the client's first message, whose protocol version they speak
// to their servers, before they start the servers at
// mcpproxy.DefaultProtocolVersion: a client sends initialize as soon as it
// has started the command, and one that does not (a person typing, a
// client that waits on something else) still gets its servers started,
// and a server that fails at start still reported. Spoken to at another
// version than the client's, a server still serves it (see mcpproxy's
// Protocol versions).
const clientVersionWait = time.Second

// downstreamProtocol returns the protocol version to ask the servers for
// (see mcpproxy.Options.ProtocolVersion), and the reader of the client's
// messages to serve: flag when set; with listen, the default; else the
// client's own, read from its first message on stdin
// (mcpproxy.ClientProtocolVersion), which the returned reader yields
// again; the default when that message does not come within
// clientVersionWait. It reports false when ctx ends first.
func downstreamProtocol(ctx context.Context, flag string, listen bool, stdin io.Reader) (string, io.Reader, bool) {
	if flag != "" || listen {
		return flag, stdin, true
	}
	got := make(chan io.Reader, 1)
	version := make(chan string, 1)
	go func() {
		v, r := mcpproxy.ClientProtocolVersion(stdin)
		version <- v
		got <- r
	}()
	timer := time.NewTimer(clientVersionWait)
	defer timer.Stop()
	select {
	case v := <-version:
		return v, <-got, true
	case <-timer.C:
		return "", &peekedReader{got: got}, true
	case <-ctx.Done():
		return "", nil, false
	}
}

// A peekedReader reads, once the reading of the client's first message
// has ended, what it read and then the rest. One goroutine reads it.
type peekedReader struct {
	got <-chan io.Reader
	r   io.Reader
}

func (p *peekedReader) Read(b []byte) (int, error) {
	if p.r == nil {
		p.r = <-p.got
	}
	return p.r.Read(b)
}
