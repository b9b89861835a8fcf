package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
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
// on the blob server directly, through `proxy` over stdio and through
// `proxy --listen` with a go-sdk client over its StreamableClientTransport
// (the same server behind each), in that order for each number in flight,
// and logs each proxied variant's added p50 (its p50 less the direct p50)
// and, for http, the ratio of its added p50 to the stdio proxy's.
func BenchmarkHTTPSmallCall(b *testing.B) {
	for _, inFlight := range []int{1, 8} {
		b.Run(fmt.Sprintf("inflight-%d", inFlight), func(b *testing.B) {
			p50 := map[string]time.Duration{}
			for _, variant := range []string{"direct", "proxy", "http"} {
				b.Run(variant, func(b *testing.B) {
					p50[variant] = benchSmallCall(b, variant, inFlight)
					d, ok := p50["direct"]
					if variant == "direct" || !ok {
						return
					}
					added := p50[variant] - d
					b.Logf("added p50 latency at %d in flight: %.1f µs", inFlight, float64(added)/1e3)
					if stdio, ok := p50["proxy"]; variant == "http" && ok && stdio > d {
						b.Logf("http added p50 / stdio proxy added p50 at %d in flight: %.2f", inFlight, float64(added)/float64(stdio-d))
					}
				})
			}
		})
	}
}

// startBenchHTTP starts `agentvalues proxy --listen` in front of the blob
// server with serverArgs, and connects a go-sdk client to it over
// Streamable HTTP. The processes stop when the benchmark ends.
func startBenchHTTP(b *testing.B, serverArgs ...string) *benchConn {
	b.Helper()
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--", os.Args[0], blobServerArg}, serverArgs...)
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
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		b.Fatalf("connecting to %s: %v\nstderr:\n%s", url, err, c.stderr.String())
	}
	c.cs = cs
	b.Cleanup(func() { cs.Close() })
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
