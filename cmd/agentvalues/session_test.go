//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file drives the gateway command over Streamable HTTP, in front of a
// downstream server written for the tests that floods its client with
// notifications, reports progress, and never answers a call, with clients
// that misbehave: one stops reading its stream, one ends its session while
// a call runs. It checks that no session holds up another, that the
// proxy's memory stays bounded, and that ending a session ends its calls.

// notifyServerArg makes the test binary (with runMainEnv set) a downstream
// MCP server speaking raw JSON-RPC on stdio, with three tools:
//   - flood {n, size}: sends n log messages (level info) whose data is a
//     string of size bytes, then answers;
//   - progress {n}: sends n progress notifications for the call's token,
//     then answers;
//   - never {}: never answers; it writes "notify-server: never ID" to its
//     standard error when called, and "notify-server: cancelled ID" when
//     the call is cancelled.
const notifyServerArg = "test-notify-server"

func init() { testHelpers[notifyServerArg] = notifyServer }

func notifyServer([]string) int {
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	send := func(parts ...string) {
		for _, p := range parts {
			out.WriteString(p)
		}
		out.WriteByte('\n')
		out.Flush()
	}
	never := map[string]bool{}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					N    int `json:"n"`
					Size int `json:"size"`
				} `json:"arguments"`
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil {
			continue
		}
		if req.ID == nil {
			if req.Method == "notifications/cancelled" && never[string(req.Params.RequestID)] {
				fmt.Fprintf(os.Stderr, "notify-server: cancelled %s\n", req.Params.RequestID)
			}
			continue
		}
		id := string(req.ID)
		result := func(r string) { send(`{"jsonrpc":"2.0","id":`, id, `,"result":`, r, `}`) }
		switch req.Method {
		case "initialize":
			result(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"notify","version":"1"}}`)
		case "tools/list":
			result(`{"tools":[{"name":"flood","inputSchema":{"type":"object"}},{"name":"progress","inputSchema":{"type":"object"}},{"name":"never","inputSchema":{"type":"object"}}]}`)
		case "logging/setLevel", "ping":
			result(`{}`)
		case "tools/call":
			a := req.Params.Arguments
			switch req.Params.Name {
			case "flood":
				data := strings.Repeat("x", a.Size)
				for range a.N {
					send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"flood","data":"`, data, `"}}`)
				}
				result(`{"content":[{"type":"text","text":"flooded"}]}`)
			case "progress":
				for i := range a.N {
					send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":%d,"message":"step %d"}}`,
						req.Params.Meta.ProgressToken, i+1, a.N, i+1))
				}
				result(`{"content":[{"type":"text","text":"progressed"}]}`)
			case "never":
				never[id] = true
				fmt.Fprintf(os.Stderr, "notify-server: never %s\n", id)
			default:
				send(`{"jsonrpc":"2.0","id":`, id, `,"error":{"code":-32602,"message":"unknown tool"}}`)
			}
		default:
			send(`{"jsonrpc":"2.0","id":`, id, `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
}

// A notifyGateway is the gateway command serving the notify server (as
// "n") over Streamable HTTP.
type notifyGateway struct {
	url   string
	pid   int
	mu    sync.Mutex
	lines []string      // its standard error so far (the notify server's included)
	more  chan struct{} // receives after each line
}

func startNotifyGateway(t *testing.T) *notifyGateway {
	t.Helper()
	config := filepath.Join(t.TempDir(), "mcp.json")
	data := `{"mcpServers":{"n":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(notifyServerArg) + `]}}}`
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "gateway", "--config", config, "--listen", "0")
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	g := &notifyGateway{pid: cmd.Process.Pid, more: make(chan struct{}, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if _, u, ok := strings.Cut(line, " at http://"); ok && g.url == "" {
				found <- "http://" + u
			}
			g.mu.Lock()
			g.lines = append(g.lines, line)
			g.mu.Unlock()
			select {
			case g.more <- struct{}{}:
			default:
			}
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("the gateway never said where it serves:\n%s", g.stderr())
		}
		g.url = u
	case <-time.After(time.Minute):
		t.Fatalf("the gateway did not serve within a minute:\n%s", g.stderr())
	}
	// The tests' raw sessions call n's tools at once: wait until it is served.
	cs, err := e2eClient(nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitTools(t, cs, "flood")
	cs.Close()
	return g
}

func (g *notifyGateway) stderr() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.lines, "\n")
}

// waitLine waits (a minute at most) for a line of the gateway's standard
// error that holds s.
func (g *notifyGateway) waitLine(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(g.stderr(), s) {
		select {
		case <-g.more:
		case <-deadline:
			t.Fatalf("no line saying %q; standard error:\n%s", s, g.stderr())
		}
	}
}

// peak returns the gateway's peak resident memory so far, in bytes.
func (g *notifyGateway) peak(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// client connects a go-sdk client to the gateway; progress receives the
// progress notifications it gets. Without get it opens no standalone
// stream, as MCP allows.
func (g *notifyGateway) client(t *testing.T, get bool) (cs *mcp.ClientSession, progress chan *mcp.ProgressNotificationParams) {
	t.Helper()
	progress = make(chan *mcp.ProgressNotificationParams, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url, DisableStandaloneSSE: !get}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway: %v\n%s", err, g.stderr())
	}
	t.Cleanup(func() { cs.Close() })
	return cs, progress
}

// callProgress calls progress for n notifications with a progress token
// and checks that all n arrive.
func callProgress(t *testing.T, cs *mcp.ClientSession, progress chan *mcp.ProgressNotificationParams, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	params := &mcp.CallToolParams{Name: "progress", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("progress: %v %v", err, res)
	}
	for i := range n {
		select {
		case p := <-progress:
			if p.ProgressToken != "tok" || p.Message != fmt.Sprintf("step %d", i+1) {
				t.Errorf("progress notification %d: %+v", i+1, p)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("got %d of %d progress notifications", i, n)
		}
	}
}

// A rawHTTPSession is a session of the gateway spoken to in raw HTTP.
type rawHTTPSession struct {
	url, id string
	client  *http.Client // its own connections
}

// openRawSession initializes a session.
func openRawSession(t *testing.T, url string) *rawHTTPSession {
	t.Helper()
	s := &rawHTTPSession{url: url, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(s.client.CloseIdleConnections)
	resp := s.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.id = resp.Header.Get("Mcp-Session-Id")
	if s.id == "" {
		t.Fatalf("initialize: no session id (status %s)", resp.Status)
	}
	readResponse(t, resp)
	s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return s
}

// do sends a request of the session.
func (s *rawHTTPSession) do(ctx context.Context, method, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return s.client.Do(req)
}

func (s *rawHTTPSession) post(t *testing.T, body string) *http.Response {
	t.Helper()
	resp, err := s.do(context.Background(), http.MethodPost, body)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// readResponse reads the JSON-RPC response in an SSE (or JSON) response
// body, and closes it.
func readResponse(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var got string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") { // one response, as the fast path answers a call
		data, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Contains(data, []byte(`"id":`)) {
			t.Fatalf("no response in the body (status %s): %v %q", resp.Status, err, data)
		}
		return strings.TrimSpace(string(data))
	}
	readSSE(resp.Body, func(data []byte) bool {
		if bytes.Contains(data, []byte(`"id":`)) {
			got = string(data)
			return false
		}
		return true
	})
	if got == "" {
		t.Fatalf("no response in the body (status %s)", resp.Status)
	}
	return got
}

// readSSE calls each with the data of each event of r until each returns
// false or r ends.
func readSSE(r io.Reader, each func(data []byte) bool) {
	br := bufio.NewReaderSize(r, 1<<20)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && len(data) > 0:
			if !each(data) {
				return
			}
			data = nil
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[len("data: "):]...)
		}
		if err != nil {
			return
		}
	}
}

// TestGatewayHTTPSessionStopsReading: a session that opens its standalone
// stream, asks for every log message and stops reading, while a server
// floods log messages, holds up no other session: another still gets all
// its progress. The gateway's memory stays bounded (the notifications the
// slow session does not read are dropped past its queue's bound), and once
// the slow session reads again it is told how many it lost.
func TestGatewayHTTPSessionStopsReading(t *testing.T) {
	t.Parallel()
	g := startNotifyGateway(t)
	a := openRawSession(t, g.url)
	readResponse(t, a.post(t, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := a.do(ctx, http.MethodGet, "")
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("a's standalone stream: %v %v", err, stream)
	}
	defer stream.Body.Close() // not read until the end

	b, progress := g.client(t, true)
	before := g.peak(t)
	const n, size = 1000, 100 << 10 // 100 MiB of log messages, far past what the sockets hold
	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "flood", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d,"size":%d}`, n, size))})
	if err != nil || res.IsError {
		t.Fatalf("flood: %v %v", err, res)
	}
	callProgress(t, b, progress, 3)
	grew := g.peak(t) - before
	t.Logf("peak RSS grew by %d MiB while %d MiB of log messages went to a session that reads nothing", grew>>20, n*size>>20)
	if grew > 64<<20 {
		t.Errorf("the gateway's peak RSS grew by %d MiB relaying %d MiB of log messages to a session that does not read them; want them dropped past the session's bound", grew>>20, n*size>>20)
	}

	// a reads again: what was queued comes, then how many were dropped.
	told := make(chan string, 1)
	go readSSE(stream.Body, func(data []byte) bool {
		if bytes.Contains(data, []byte("were dropped")) {
			told <- string(data)
			return false
		}
		return true
	})
	select {
	case m := <-told:
		if !strings.Contains(m, `"level":"warning"`) || !strings.Contains(m, "notifications to this session were dropped") {
			t.Errorf("the slow session was told: %.300s", m)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the slow session was never told its notifications were dropped\n%s", g.stderr())
	}
}

// TestGatewayHTTPNotificationFlood: a server's flood of log messages that
// no session asked for is dropped as it is read: the gateway's peak memory
// does not grow with it.
func TestGatewayHTTPNotificationFlood(t *testing.T) {
	t.Parallel()
	g := startNotifyGateway(t)
	b, progress := g.client(t, true)
	ctx := context.Background()
	before := g.peak(t)
	const n, size = 2000, 100 << 10 // 200 MiB
	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "flood", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d,"size":%d}`, n, size))})
	if err != nil || res.IsError {
		t.Fatalf("flood: %v %v", err, res)
	}
	grew := g.peak(t) - before
	t.Logf("peak RSS grew by %d MiB while the server sent %d MiB of log messages nobody asked for", grew>>20, n*size>>20)
	if grew > 64<<20 {
		t.Errorf("the gateway's peak RSS grew by %d MiB while the server sent %d MiB of log messages nobody asked for; want them dropped as they are read", grew>>20, n*size>>20)
	}
	callProgress(t, b, progress, 2)
}

// TestGatewayHTTPProgressOnPOST: a client without a standalone stream (it
// is optional in MCP) gets a call's progress on the call's own response.
func TestGatewayHTTPProgressOnPOST(t *testing.T) {
	t.Parallel()
	g := startNotifyGateway(t)
	b, progress := g.client(t, false)
	callProgress(t, b, progress, 3)
}

// TestGatewayHTTPDeleteCancelsCalls: a DELETE of a session whose call the
// server never answers, and whose standalone stream its client stopped
// reading while log messages were written to it, is answered; the server
// is told the call is cancelled, and the session is gone.
func TestGatewayHTTPDeleteCancelsCalls(t *testing.T) {
	t.Parallel()
	g := startNotifyGateway(t)
	s := openRawSession(t, g.url)
	readResponse(t, s.post(t, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`))
	stream, err := s.do(context.Background(), http.MethodGet, "")
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("the standalone stream: %v %v", err, stream)
	}
	defer stream.Body.Close() // never read
	readResponse(t, s.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{"n":300,"size":102400}}}`))
	call := make(chan error, 1)
	go func() {
		resp, err := s.do(context.Background(), http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"never","arguments":{}}}`)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		call <- err
	}()
	g.waitLine(t, "notify-server: never ")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := s.do(ctx, http.MethodDelete, "")
	if err != nil {
		t.Fatalf("DELETE of a session with a call in flight: %v\n%s", err, g.stderr())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s, want 204", resp.Status)
	}
	g.waitLine(t, "notify-server: cancelled ")
	select {
	case <-call:
	case <-time.After(time.Minute):
		t.Error("the call's POST was still open a minute after its session ended")
	}
	if resp := s.post(t, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the deleted session: %s, want 404", resp.Status)
	}
}
