package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkHTTPSmallCall measures the added latency of a small call
// over Streamable HTTP (proxy --listen) beside the stdio proxy's, in one
// run (issue 31: the HTTP path's added p50 at most twice the stdio
// path's):
//
//	go test -run='^$' -bench=HTTPSmallCall -benchtime=2000x -count=3 ./cmd/agentvalues
//
// It runs the calls of BenchmarkProxySmallCall (ping, 1 and 8 in flight)
// with the same go-sdk client and the same blob server, in this order for
// each number in flight: the server directly over stdio (direct); through
// `proxy` over stdio (proxy); the server directly over Streamable HTTP,
// the go-sdk's StreamableHTTPHandler answering with one JSON object as the
// proxy's fast path does (http-direct); and through `proxy --listen` over
// Streamable HTTP (http). It logs each proxied variant's added p50 (its
// p50 less direct's) and, for http, the ratio of that to the stdio
// proxy's: a strict figure, which counts the HTTP client's and the
// loopback's work as the proxy's. Beside it, what the proxy adds over
// HTTP (http's p50 less http-direct's), and its ratio to the stdio
// proxy's added p50: the two paths' additions, each over its own
// transport's floor. With -count, each variant's runs follow one another,
// and each figure is of the run's own p50 beside the medians of the other
// variants' runs so far, so that one slow run of a floor does not skew
// every figure after it.
func BenchmarkHTTPSmallCall(b *testing.B) {
	for _, inFlight := range []int{1, 8} {
		b.Run(fmt.Sprintf("inflight-%d", inFlight), func(b *testing.B) {
			runs := map[string][]time.Duration{} // each variant's p50s, one a run (-count)
			for _, variant := range []string{"direct", "proxy", "http-direct", "http"} {
				b.Run(variant, func(b *testing.B) {
					runs[variant] = append(runs[variant], benchSmallCall(b, variant, inFlight).p50)
					p50 := func(variant string) (time.Duration, bool) { // the median of a variant's runs so far
						r := slices.Sorted(slices.Values(runs[variant]))
						if len(r) == 0 {
							return 0, false
						}
						return r[len(r)/2], true
					}
					d, ok := p50("direct")
					if variant == "direct" || variant == "http-direct" || !ok {
						return
					}
					mine := runs[variant][len(runs[variant])-1] // this run's
					added := mine - d
					b.Logf("added p50 latency at %d in flight: %.1f µs", inFlight, float64(added)/1e3)
					stdio, ok := p50("proxy")
					if variant != "http" || !ok || stdio <= d {
						return
					}
					b.Logf("http added p50 / stdio proxy added p50 at %d in flight: %.2f", inFlight, float64(added)/float64(stdio-d))
					if hd, ok := p50("http-direct"); ok {
						overHTTP := mine - hd
						b.Logf("added p50 over http-direct at %d in flight: %.1f µs; / stdio proxy added p50: %.2f",
							inFlight, float64(overHTTP)/1e3, float64(overHTTP)/float64(stdio-d))
					}
				})
			}
		})
	}
}

// blobListenFlag, first among the blob server's arguments, followed by
// an address, makes it serve over Streamable HTTP at that address, under
// /mcp, instead of over stdio: the floor of the HTTP variants of
// BenchmarkHTTPSmallCall.
const blobListenFlag = "--listen="

// serveBlobHTTP serves s over Streamable HTTP at addr (see
// blobListenFlag), saying where on stderr, until the process is ended.
func serveBlobHTTP(s *mcp.Server, addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "blobserver:", err)
		return 1
	}
	// One JSON object per response, as the proxy's fast path answers a
	// small call, so that the client's work is the same on both.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	fmt.Fprintf(os.Stderr, "blobserver: serving at http://%s/mcp\n", ln.Addr())
	if err := http.Serve(ln, mux); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintln(os.Stderr, "blobserver:", err)
		return 1
	}
	return 0
}

// startBenchHTTP starts `agentvalues proxy --listen` in front of the blob
// server with serverArgs (or, direct, the blob server alone serving over
// Streamable HTTP), and connects a go-sdk client to it over Streamable
// HTTP asking for protocol version (empty: the client's latest). The
// processes stop when the benchmark ends.
func startBenchHTTP(b *testing.B, direct bool, version string, serverArgs ...string) *benchConn {
	b.Helper()
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--", os.Args[0], blobServerArg}, serverArgs...)
	if direct {
		args = append([]string{blobServerArg, blobListenFlag + "127.0.0.1:0"}, serverArgs...)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", tokenEnv+"=")
	c := &benchConn{stderr: &syncWriter{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const at = " at http://"
	if !c.stderr.waitFor(ctx, "/mcp\n") {
		b.Fatalf("agentvalues %s never said where it serves; stderr:\n%s", strings.Join(args, " "), c.stderr.String())
	}
	_, u, _ := strings.Cut(c.stderr.String(), at)
	url := "http://" + u[:strings.Index(u, "/mcp\n")+len("/mcp")]

	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatalf("connecting to %s: %v\nstderr:\n%s", url, err, c.stderr.String())
	}
	c.cs = cs
	b.Cleanup(func() { cs.Close() })
	if direct {
		c.server = cmd.Process.Pid
		return c
	}
	c.proxy = cmd.Process.Pid
	if runtime.GOOS == "linux" {
		children := procChildren(c.proxy)
		if len(children) != 1 {
			b.Fatalf("the proxy (pid %d) has children %v, want the blob server alone", c.proxy, children)
		}
		c.server = children[0]
	}
	return c
}
