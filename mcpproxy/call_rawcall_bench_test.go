package mcpproxy

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRawCall makes one small tools/call at a time through a Proxy
// over in-process pipes, to a scripted server, on the raw path and on the
// SDK path, at protocol 2025-06-18 and 2026-07-28: the proxy's own work
// per call, without the processes and pipes of BenchmarkProxySmallCall in
// cmd/agentvalues (the scripted server's decoding of the request, the
// client's reading of the response and the pipes' goroutine hand-offs are
// in both variants). Profile it with -cpuprofile.
//
//	go test -run='^$' -bench=RawCall ./mcpproxy
func BenchmarkRawCall(b *testing.B) {
	for _, v2 := range []bool{false, true} {
		for _, path := range []string{"raw", "sdk"} {
			version := "2025-06-18"
			if v2 {
				version = protocolRaw
			}
			b.Run(fmt.Sprintf("%s/%s", version, path), func(b *testing.B) {
				p, c, _ := startLineProxyAt(b, scriptCases(), path == "sdk", v2)
				kase, meta := "text", ""
				if v2 {
					c.discover(b)
					kase, meta = "v2 result", `"_meta":`+v2Meta+`,`
				} else {
					c.initialize(b)
				}
				call := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{%s"name":"result","arguments":{"case":%q}}}`, meta, kase)
				b.ReportAllocs()
				for b.Loop() {
					c.send(b, call)
					if l := c.next(b); !strings.Contains(l, `"result"`) {
						b.Fatalf("got %s", l)
					}
				}
				if took := p.rawN.Load() > 0; took != (path == "raw") {
					b.Fatalf("raw path taken: %v", took)
				}
			})
		}
	}
}
