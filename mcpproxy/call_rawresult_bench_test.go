package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The in-process benchmarks of a large result: the same result from the
// same hand-written server, called directly by an SDK client, through the
// proxy, and through the proxy with its raw path off, so that the proxy's
// cost (time, and allocation per call) is read from one run. cmd/agentvalues has the benchmarks across processes.
//
//	go test -run='^$' -bench=LargeResult -benchtime=3x ./mcpproxy

// largeResults returns tools/call results of about n bytes: JSON text in a
// text block, a log as text, and structured content with its text copy.
func largeResults(n int) map[string]string {
	var rows strings.Builder
	rows.WriteString(`{"rows":[`)
	for i := 0; rows.Len() < n/2; i++ {
		if i > 0 {
			rows.WriteByte(',')
		}
		fmt.Fprintf(&rows, `{"id":%d,"path":"src/pkg%d/file%d.go","size":%d,"mode":"-rw-r--r--"}`, i, i%97, i, i*37%100000)
	}
	rows.WriteString(`]}`)
	var log strings.Builder
	for i := 0; log.Len() < n; i++ {
		fmt.Fprintf(&log, "2026-12-03T10:%02d:%02d.%06dZ INFO worker=%d handled /api/v1/items/%d status=200 ✓\n", i/60%60, i%60, i%1000000, i%16, i)
	}
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	big := strings.Replace(rows.String(), `{"rows":[`, `{"rows":[`+rows.String()[len(`{"rows":[`):len(rows.String())-2]+`,`, 1)
	return map[string]string{
		"json":       `{"content":[{"type":"text","text":` + str(big) + `}]}`,
		"text":       `{"content":[{"type":"text","text":` + str(log.String()) + `}]}`,
		"structured": `{"content":[{"type":"text","text":` + str(rows.String()) + `}],"structuredContent":` + rows.String() + `}`,
	}
}

func BenchmarkLargeResult(b *testing.B) {
	for _, size := range []int{20 << 20} {
		results := largeResults(size)
		for _, kind := range []string{"json", "text", "structured"} {
			for _, via := range []string{"direct", "proxy", "proxy-sdk-path"} {
				b.Run(fmt.Sprintf("%s-%dMB/%s", kind, size>>20, via), func(b *testing.B) {
					benchLargeResult(b, results, kind, via)
				})
			}
		}
	}
}

// benchLargeResult calls the tool via "direct", "proxy", or
// "proxy-sdk-path" (the proxy with the raw path off, as it was).
func benchLargeResult(b *testing.B, results map[string]string, kind, via string) {
	ctx := context.Background()
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	go rawServer(sr, sw, results)
	var down mcp.Transport = &mcp.IOTransport{Reader: pr, Writer: pw, MaxLineLength: -1}
	if via != "direct" {
		p, err := Connect(ctx, lineDownstream{pr, pw}, &Options{Log: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		if via == "proxy-sdk-path" {
			p.rawFrom = math.MaxInt
		}
		pst, ct := pipeTransports()
		if _, err := p.Server().Connect(ctx, pst, nil); err != nil {
			b.Fatal(err)
		}
		down = ct
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, down, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.SetBytes(int64(len(results[kind])))
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "result", Arguments: map[string]any{"case": kind}})
		if err != nil || res.IsError || len(res.Content) == 0 {
			b.Fatalf("call: %v %v", err, res)
		}
	}
}
