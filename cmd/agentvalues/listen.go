package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/agentvalues/values/mcpproxy/browse"
)

// httpFlags are the flags of proxy and gateway that bound serving over
// HTTP (-listen). Zero in a number or a duration means no bound, as for
// -max-message.
type httpFlags struct {
	maxSessions  *int
	maxRequests  *int
	maxBodyBytes *int64
	maxConns     *int
	sessionIdle  *time.Duration
	readTimeout  *time.Duration
	origins      *originList
	tokenFile    *string
	insecure     *bool
}

// tokenEnv is the environment variable that gives -listen its bearer token
// (when -token-file does not).
const tokenEnv = "AGENTVALUES_TOKEN"

func addHTTPFlags(fs *flag.FlagSet) httpFlags {
	f := httpFlags{
		maxSessions:  fs.Int("max-sessions", mcpproxy.DefaultMaxSessions, "with -listen: most HTTP sessions open at once; a new one past it is refused with 503 until one ends (DELETE, or -session-idle) (0: no bound)"),
		maxRequests:  fs.Int("max-requests", mcpproxy.DefaultMaxRequests, "with -listen: most HTTP requests (other than event streams) handled at once; one past it is refused with 503 (0: no bound)"),
		maxBodyBytes: fs.Int64("max-body-bytes", mcpproxy.DefaultMaxBodyBytes, "with -listen: most `bytes` of request bodies held at once; a request past it is refused with 503 (0: no bound)"),
		maxConns:     fs.Int("max-conns", mcpproxy.DefaultMaxConns, "with -listen: most connections open at once; one past it is answered 503 and closed (0: no bound)"),
		sessionIdle:  fs.Duration("session-idle", mcpproxy.DefaultSessionTimeout, "with -listen: an HTTP session with no request for this long (an open event stream is not one) is ended: its calls are cancelled, downstream too, and its store dropped (0: never)"),
		readTimeout:  fs.Duration("read-timeout", mcpproxy.DefaultReadTimeout, "with -listen: time allowed for a request's headers, and for its body before it must arrive at 64 KiB/s at least (0: no bound)"),
		origins:      &originList{},
		tokenFile:    fs.String("token-file", "", "with -listen: every HTTP request must carry the bearer token this `file` holds (Authorization: Bearer TOKEN; surrounding white space ignored); without it, the token is $"+tokenEnv+", if set"),
		insecure:     fs.Bool("insecure-no-auth", false, "with -listen: serve an address other than loopback without a bearer token, open to anyone who can reach it"),
	}
	fs.Var(f.origins, "allow-origin", "with -listen: a browser `ORIGIN` (https://app.example.com) allowed to call besides the server's own; repeat for more, * for any")
	return f
}

// options returns the HTTPOptions the flags give for serving at the
// -listen address listen, with maxMessage as the -max-message flag has it
// (-1: no bound; nil for no -listen), and getenv reading the environment: the bearer token is
// that of -token-file, else $AGENTVALUES_TOKEN, else none; without one, an
// address other than loopback is refused unless -insecure-no-auth.
func (f httpFlags) options(listen string, maxMessage int, getenv func(string) string) (*mcpproxy.HTTPOptions, error) {
	if listen == "" {
		return nil, nil // stdio
	}
	token, err := f.token(getenv)
	if err != nil {
		return nil, err
	}
	if host := listenHost(listen); token == "" && !*f.insecure && !isLoopbackHost(host) {
		return nil, fmt.Errorf("%w: -listen %s serves %s, which other machines may reach, and no bearer token is set: set %s to a secret (or pass -token-file FILE), and give clients the header Authorization: Bearer <token>; or, to serve it open to anyone, pass -insecure-no-auth",
			errUsage, listen, hostName(host), tokenEnv)
	}
	return &mcpproxy.HTTPOptions{
		Token:          token,
		MaxMessage:     maxMessage,
		MaxSessions:    noBound(*f.maxSessions),
		MaxRequests:    noBound(*f.maxRequests),
		MaxBodyBytes:   noBound(*f.maxBodyBytes),
		MaxConns:       noBound(*f.maxConns),
		SessionTimeout: noBound(*f.sessionIdle),
		ReadTimeout:    noBound(*f.readTimeout),
		AllowedOrigins: *f.origins,
	}, nil
}

// token returns the bearer token the flags and the environment give, or
// "" for none.
func (f httpFlags) token(getenv func(string) string) (string, error) {
	token, from := getenv(tokenEnv), "$"+tokenEnv
	if *f.tokenFile != "" {
		data, err := os.ReadFile(*f.tokenFile)
		if err != nil {
			return "", fmt.Errorf("%w: -token-file: %v", errUsage, err)
		}
		token, from = strings.TrimSpace(string(data)), "-token-file "+*f.tokenFile
		if token == "" {
			return "", fmt.Errorf("%w: -token-file %s is empty: it should hold the bearer token", errUsage, *f.tokenFile)
		}
	}
	if token == "" {
		return "", nil
	}
	if err := mcpproxy.CheckToken(token); err != nil {
		return "", fmt.Errorf("%w: the token of %s: %w", errUsage, from, err)
	}
	return token, nil
}

// listenAddr returns the address -listen ADDR listens on: a bare PORT or
// :PORT listens on 127.0.0.1.
func listenAddr(addr string) string {
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return addr
}

// listenHost returns the host -listen ADDR listens on ("" for every
// interface).
func listenHost(addr string) string {
	host, _, err := net.SplitHostPort(listenAddr(addr))
	if err != nil {
		return listenAddr(addr)
	}
	return host
}

// isLoopbackHost reports whether host is localhost or a loopback address:
// only processes of this machine can reach it.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// hostName says which interfaces host names, for an error.
func hostName(host string) string {
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		return "every network interface"
	}
	return host
}

// noBound maps 0, which means no bound on the command line, to -1, which
// means it in HTTPOptions.
func noBound[T int | int64 | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// An originList is the repeatable -allow-origin flag.
type originList []string

func (o *originList) String() string { return strings.Join(*o, ",") }

func (o *originList) Set(s string) error {
	*o = append(*o, s)
	return nil
}

// An mcpServer is a gateway or a proxy: what serveHTTP serves.
type mcpServer interface {
	HTTPHandler(*mcpproxy.HTTPOptions) http.Handler
	Close() error
}

// serveHTTP serves g (the command named what) over Streamable HTTP at addr
// until ctx is done, then closes it: g's handler (a server session, hence
// a store, per HTTP session; bounds on requests, bodies, sessions and
// origins; ending a session cancels its calls) at /mcp, and metrics, when
// not nil, at /metrics behind the same token, behind mcpproxy's
// connection bounds.
func serveHTTP(ctx context.Context, what string, g mcpServer, addr string, opts *mcpproxy.HTTPOptions, metrics http.Handler, stderr io.Writer) error {
	defer g.Close()
	ln, err := net.Listen("tcp", listenAddr(addr))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	opts.Log = stderr
	mux := http.NewServeMux()
	// A session that comes back after its end is a new session, whose
	// handles start past the old one's (Options.PerSession): a stale "$r2"
	// in the model's transcript names nothing rather than another value.
	mux.Handle("/mcp", g.HTTPHandler(opts))
	if metrics != nil {
		mux.Handle("/metrics", mcpproxy.RequireToken(opts.Token, metrics)) // telemetry.go
	}

	if src, ok := g.(browse.Source); ok {
		b := browse.Handler(src, &browse.Options{Token: opts.Token})
		mux.Handle("/values", b)
		mux.Handle("/values/", b)
	}
	fmt.Fprintf(stderr, "agentvalues: %s serving MCP (Streamable HTTP) at http://%s/mcp\n", what, ln.Addr())
	fmt.Fprintf(stderr, "agentvalues: %s serving its value browser (read-only) on http://%s/values\n", what, ln.Addr())
	if err := mcpproxy.ServeHTTP(ctx, ln, mux, opts); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
