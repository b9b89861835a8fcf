package mcpproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkHTTPFastCall makes one small tools/call at a time over
// Streamable HTTP through a Proxy's handler, on the session layer's fast
// path (httpfast.go), to a go-sdk server in this process: the HTTP path's
// own work per call, without the processes of BenchmarkHTTPSmallCall in
// cmd/agentvalues. The client writes its requests on one kept-alive
// connection, and net/http's client reads the answers; its work and the
// server's are in every figure, and the same from one version of the
// handler to the next. Profile it with -cpuprofile.
//
//	go test -run='^$' -bench=HTTPFastCall -benchmem ./mcpproxy
func BenchmarkHTTPFastCall(b *testing.B) {
	srv, url := newBlockProxy(b, false, nil, nil)
	c := openHTTPSession(b, url)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	body := callBody(7, "hello")
	req := fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s",
		strings.TrimPrefix(url, "http://"), c.id, len(body), body)
	br := bufio.NewReader(conn)
	call := func() {
		if _, err := io.WriteString(conn, req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `hello \u003cworld\u003e`) && !strings.Contains(string(data), `hello <world>`) {
			b.Fatalf("got %s %s (%v)", resp.Status, data, err)
		}
	}
	call()
	took := srv.proxy.rawN.Load()
	b.ReportAllocs()
	for b.Loop() {
		call()
	}
	if srv.proxy.rawN.Load() == took {
		b.Fatal("the calls did not take the fast path")
	}
}
