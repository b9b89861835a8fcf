package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// interleaveBlock is how many calls BenchmarkSmallCallInterleaved makes
// on one variant before it turns to the next: at 1 in flight about 15 ms,
// short beside the seconds over which a shared host's speed drifts, long
// beside the one call of each block that finds its caches cold.
const interleaveBlock = 100

// BenchmarkSmallCallInterleaved makes the calls of BenchmarkProxySmallCall
// (ping, from 1 and from 8 goroutines) on the server directly, through the
// relay and through the proxy, all three started before the timed loop
// and called in turn, interleaveBlock calls at a time, b.N calls each. In
// BenchmarkProxySmallCall each variant runs for seconds after the other,
// and on a shared host the speed of the machine moves between them
// (direct's own p50 has moved by half from one run to the next), which
// the difference of two p50s, each a small part of the whole, magnifies:
// the ratio of the proxy's added p50 to the relay's read 0.9× and 4× in
// two runs of the same binary. Here the drift falls on the three alike.
//
// It reports each variant's p50 (direct-p50-µs, relay-p50-µs,
// proxy-p50-µs), the proxy's added p50 over the relay's (added-ratio,
// issue 31's row; 0 when the relay adds under a tenth of direct's p50,
// within the noise, as BenchmarkProxySmallCall logs none), and on Linux
// the CPU per call of the relay and of the proxy (relay-cpu-µs/op,
// proxy-cpu-µs/op; a process waiting for its turn spends none) and their
// ratio (cpu-ratio). ns/op is the time of a call of each variant, the
// three together.
//
//	go test -run='^$' -bench=SmallCallInterleaved -benchtime=10000x -count=3 ./cmd/agentvalues
func BenchmarkSmallCallInterleaved(b *testing.B) {
	version := smallCallProtocol
	if v := os.Getenv("AGENTVALUES_BENCH_PROTOCOL"); v != "" {
		version = v
	}
	variants := []string{"direct", "relay", "proxy"}
	for _, inFlight := range []int{1, 8} {
		b.Run(fmt.Sprintf("inflight-%d", inFlight), func(b *testing.B) {
			ctx := context.Background()
			conns := make([]*benchConn, len(variants))
			for i, via := range variants {
				conns[i] = startBenchAt(b, via, version)
				for range smallCallWarmup {
					if err := checkPing(conns[i].call(ctx, b, "ping", `{}`)); err != nil {
						b.Fatal(err)
					}
				}
			}
			durations := make([][]time.Duration, len(variants))
			cpu0 := make([]time.Duration, len(variants))
			for i, c := range conns {
				cpu0[i] = procCPU(b, c.proxy)
			}
			b.ResetTimer()
			for done := 0; done < b.N; done += interleaveBlock {
				n := min(interleaveBlock, b.N-done)
				for i, c := range conns {
					d, err := callBlock(ctx, c, inFlight, n)
					if err != nil {
						b.Fatalf("%s: ping: %v\nstderr:\n%s", variants[i], err, c.stderr.String())
					}
					durations[i] = append(durations[i], d...)
				}
			}
			b.StopTimer()

			p50 := make([]float64, len(variants)) // µs
			for i, d := range durations {
				slices.Sort(d)
				p50[i] = float64(percentile(d, 50)) / 1e3
				b.ReportMetric(p50[i], variants[i]+"-p50-µs")
			}
			direct, relay, proxy := p50[0], p50[1], p50[2]
			ratio := 0.0
			if relay-direct >= direct/10 {
				ratio = (proxy - direct) / (relay - direct)
			}
			b.ReportMetric(ratio, "added-ratio")
			if runtime.GOOS == "linux" {
				relayCPU := float64(procCPU(b, conns[1].proxy)-cpu0[1]) / 1e3 / float64(b.N)
				proxyCPU := float64(procCPU(b, conns[2].proxy)-cpu0[2]) / 1e3 / float64(b.N)
				b.ReportMetric(relayCPU, "relay-cpu-µs/op")
				b.ReportMetric(proxyCPU, "proxy-cpu-µs/op")
				b.ReportMetric(proxyCPU/relayCPU, "cpu-ratio")
			}
		})
	}
}

// callBlock makes n ping calls on c from inFlight goroutines, each calling
// again as soon as its call returns, and returns their durations.
func callBlock(ctx context.Context, c *benchConn, inFlight, n int) ([]time.Duration, error) {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		all     = make([]time.Duration, 0, n)
		failure error
	)
	for range inFlight {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				start := time.Now()
				res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping", Arguments: json.RawMessage(`{}`)})
				d := time.Since(start)
				if err == nil {
					err = checkPing(res)
				}
				mu.Lock()
				all = append(all, d)
				if err != nil && failure == nil {
					failure = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return all, failure
}
