//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hugeHTTPServer is a Streamable HTTP MCP server written for the test,
// in raw HTTP, whose tools answer with a result of size bytes of text in
// every shape a server may send it, streamed without being held:
//
//   - sse_id_first: an event of a response stream, the id before the
//     result (as the Go SDK writes it);
//   - sse_id_last: the same, the id last (as the TypeScript SDK writes it);
//   - json_length: a JSON response with its Content-Length;
//   - json_chunked: a JSON response without one, the id last;
//   - log_first: a log message of size bytes on the response stream, then
//     a small result;
//   - small: a small result.
type hugeHTTPServer struct {
	size  int
	chunk []byte
}

// messageSize is the length of the message of a huge result.
func (s *hugeHTTPServer) messageSize(id string, idFirst bool) int {
	head, tail := s.frame(id, idFirst)
	return len(head) + s.size + len(tail)
}

// frame returns what comes before and after the text of a huge result.
func (s *hugeHTTPServer) frame(id string, idFirst bool) (head, tail string) {
	if idFirst {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"`, `"}]}}`
	}
	return `{"result":{"content":[{"type":"text","text":"`, `"}]},"jsonrpc":"2.0","id":` + id + `}`
}

func (s *hugeHTTPServer) writeHuge(w io.Writer, head, tail string) {
	io.WriteString(w, head)
	for n := s.size; n > 0; n -= len(s.chunk) {
		w.Write(s.chunk[:min(n, len(s.chunk))])
	}
	io.WriteString(w, tail)
}

func (s *hugeHTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct{ Name string }
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	id := string(req.ID)
	json := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":`+result+`}`)
	}
	sse := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\nid: e1\ndata: ")
	}
	switch req.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "huge-1")
		json(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"huge","version":"1"}}`)
	case "tools/list":
		var tools []string
		for _, name := range []string{"sse_id_first", "sse_id_last", "json_length", "json_chunked", "log_first", "small"} {
			tools = append(tools, `{"name":"`+name+`","inputSchema":{"type":"object"}}`)
		}
		json(`{"tools":[` + strings.Join(tools, ",") + `]}`)
	case "logging/setLevel":
		json(`{}`)
	case "tools/call":
		switch req.Params.Name {
		case "sse_id_first", "sse_id_last":
			sse()
			head, tail := s.frame(id, req.Params.Name == "sse_id_first")
			s.writeHuge(w, head, tail)
			io.WriteString(w, "\n\n")
		case "json_length":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(s.messageSize(id, true)))
			head, tail := s.frame(id, true)
			s.writeHuge(w, head, tail)
		case "json_chunked":
			w.Header().Set("Content-Type", "application/json")
			head, tail := s.frame(id, false)
			s.writeHuge(w, head, tail)
		case "log_first":
			sse()
			s.writeHuge(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"`, `"}}`)
			io.WriteString(w, "\n\nevent: message\nid: e2\ndata: "+`{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"after the log"}]}}`+"\n\n")
		default:
			json(`{"content":[{"type":"text","text":"small ok"}]}`)
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"method not found"}}`)
	}
}

// TestGatewayHTTPServerMaxMessage runs the gateway with -max-message
// 1 MiB over a Streamable HTTP server whose results are 100 MiB, in every
// shape a server may send one: each call fails with an error that states
// both sizes, as for a stdio server, and the gateway reads each through
// without holding it (its peak grows by far less than one); a 100 MiB log
// message before a result is dropped, with a line, and the result
// arrives; the server's next call is served.
func TestGatewayHTTPServerMaxMessage(t *testing.T) {
	t.Parallel()
	server := &hugeHTTPServer{size: 100 << 20, chunk: bytes.Repeat([]byte("0123456789abcdef"), 1<<16)}
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"web":{"type":"http","url":`+quote(srv.URL)+`}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "gateway", "--config", path, "-max-message", strconv.Itoa(1<<20))
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, err := e2eClient(nil).Connect(ctx, &mcpproxy.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	waitTools(t, cs, "small")
	call := func(name string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
		}
		if name == "small" || name == "log_first" {
			if res.IsError {
				t.Errorf("%s: %s", name, textOf(res))
			}
		} else if !res.IsError {
			t.Errorf("%s: a %d-byte result over the 1 MiB bound came back: %.200s", name, server.size, textOf(res))
		}
		return textOf(res)
	}
	if got := call("small"); !strings.Contains(got, "small ok") {
		t.Fatalf("small: %q", got)
	}
	before := vmHWM(cmd.Process.Pid)
	for i, tc := range []struct {
		name    string
		idFirst bool
	}{
		{"sse_id_first", true},
		{"sse_id_last", false},
		{"json_length", true},
		{"json_chunked", false},
	} {
		// The SDK client numbers its calls from 1: initialize, tools/list,
		// small, then these.
		size := server.messageSize(strconv.Itoa(4+i), tc.idFirst)
		want := fmt.Sprintf("%s ran, but the proxy could not take its result: the downstream server's response was dropped: the message is %d bytes, over the limit of 1048576", tc.name, size)
		if got := call(tc.name); got != want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, want)
		}
	}
	if got := call("log_first"); !strings.Contains(got, "after the log") {
		t.Errorf("log_first: %q", got)
	}
	if !stderr.waitFor(ctx, fmt.Sprintf("dropped a message of the Streamable HTTP server %s: the message is %d bytes, over the limit of 1048576", srv.URL, server.size+len(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":""}}`))) {
		t.Errorf("the dropped log message was not logged; stderr:\n%s", stderr.String())
	}
	if got := call("small"); !strings.Contains(got, "small ok") {
		t.Errorf("small after: %q", got)
	}
	// 500 MiB read through, 100 MiB at a time: the peak grew by far less
	// than one (the race detector's own memory included).
	if grew := vmHWM(cmd.Process.Pid) - before; grew > 48<<20 {
		t.Errorf("the gateway's peak grew by %d MiB while it dropped 100 MiB messages; want it bounded by the 1 MiB message bound", grew>>20)
	} else {
		t.Logf("peak grew by %d MiB", grew>>20)
	}
}
