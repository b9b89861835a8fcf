package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGateway runs the gateway command over a config file naming the real
// filesystem and memory servers, the blob server (a go-sdk server run by this test
// binary), a Streamable HTTP server that needs an API key header, the
// gateway itself (which must refuse to start again) and a disabled entry.
// A log made by the blob server is written to disk by the filesystem
// server by reference, read back, and given to the memory server by
// reference: the bytes never pass through the client.
func TestGateway(t *testing.T) {
	t.Parallel()
	files := fsServer.command(t)
	memory := memoryServer.command(t)
	dir := t.TempDir()
	memoryFile := filepath.Join(t.TempDir(), "memory.jsonl")

	web := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	web.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "key=" + req.Extra.Header.Get("X-Api-Key")}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return web }, nil))
	t.Cleanup(srv.Close) // after the gateway (closed by a cleanup registered later), which holds a stream to it

	path := filepath.Join(t.TempDir(), "mcp.json")
	config := map[string]any{
		"mcpServers": map[string]any{
			"files":  map[string]any{"command": files[0], "args": append(files[1:], dir)},
			"memory": map[string]any{"command": memory[0], "args": memory[1:], "env": map[string]string{"MEMORY_FILE_PATH": memoryFile}},
			"blobs":  map[string]any{"command": os.Args[0], "args": []string{blobServerArg}, "env": map[string]string{runMainEnv: "1"}},
			"web":    map[string]any{"type": "http", "url": srv.URL, "headers": map[string]string{"X-Api-Key": "k-123"}},
			"self":   map[string]any{"command": os.Args[0], "args": []string{"gateway", "--config", path}},
			"off":    map[string]any{"command": "/nonexistent/never-started", "disabled": true},
		},
		"globalShortcut": "ignored, as clients ignore each other's fields",
	}
	data, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	cs, stderr := connectCommand(t, "gateway", "--config", path)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	waitTools(t, cs, "write_file", "read_text_file", "create_entities", "blob", "whoami")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]bool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = true
		if tool.Name == "create_entities" {
			// A real third-party schema, rewritten: "$r1" where an array
			// of objects is asked for.
			raw, _ := json.Marshal(tool.InputSchema)
			schema, err := values.CompileSchema(raw)
			if err != nil {
				t.Fatalf("the advertised schema of %s does not compile: %v", tool.Name, err)
			}
			if err := schema.Validate([]byte(`{"entities":"$r1"}`)); err != nil {
				t.Errorf("the advertised schema of %s refuses a reference: %v", tool.Name, err)
			}
		}
		if strings.HasPrefix(tool.Name, "self__") || strings.HasPrefix(tool.Name, "off__") {
			t.Errorf("the gateway offers %s", tool.Name)
		}
	}
	for _, name := range []string{"write_file", "read_text_file", "create_entities", "blob", "whoami", "read_value", "query_value"} {
		if !byName[name] {
			t.Fatalf("the gateway does not offer %s; it offers %v\nstderr:\n%s", name, byName, stderr.String())
		}
	}
	if log := stderr.String(); !strings.Contains(log, `leaving out the server "self"`) || !strings.Contains(log, "lists the gateway itself") {
		t.Errorf("stderr does not say the gateway left itself out:\n%s", log)
	}

	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
		}
		if res.IsError {
			t.Fatalf("%s: %s", name, textOf(res))
		}
		return res
	}
	blob := call("blob", `{"kind":"text","size":300000}`)
	h, _ := blob.Meta[mcpproxy.MetaHandle].(string)
	if h == "" || len(textOf(blob)) > 8<<10 {
		t.Fatalf("a 300 kB log came back as %d bytes, handle %q", len(textOf(blob)), h)
	}
	out := filepath.Join(dir, "copy.log")
	call("write_file", `{"path":`+quote(out)+`,"content":"$`+h+`"}`)
	want, err := makeBlob(blobText, 300000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the file the filesystem server wrote has %d bytes, want the blob server's %d", len(got), len(want))
	}
	// Between two third-party servers: what the filesystem server reads,
	// the memory server keeps, byte for byte, in its file.
	read := call("read_text_file", `{"path":`+quote(out)+`}`)
	rh, _ := read.Meta[mcpproxy.MetaHandle].(string)
	call("create_entities", `{"entities":[{"name":"copy.log","entityType":"file","observations":["$`+rh+`"]}]}`)
	kept, err := os.ReadFile(memoryFile)
	if err != nil {
		t.Fatal(err)
	}
	var entity struct {
		Name         string
		Observations []string
	}
	for line := range strings.Lines(string(kept)) {
		if err := json.Unmarshal([]byte(line), &entity); err == nil && entity.Name == "copy.log" {
			break
		}
	}
	if len(entity.Observations) != 1 || entity.Observations[0] != string(want) {
		t.Errorf("the memory server kept %d observations of %s, want the %d-byte log", len(entity.Observations), rh, len(want))
	}
	if who := textOf(call("whoami", `{}`)); !strings.HasPrefix(who, "key=k-123") {
		t.Errorf("the HTTP server saw %q, want the config's header", who)
	}
}

// toolNotices holds, for each session of a client made by e2eClient, a
// channel that holds a value once notifications/tools/list_changed has
// come since waitTools last looked (*mcp.ClientSession to chan struct{}).
var toolNotices sync.Map

// toolNoticesOf returns the channel of toolNotices for cs.
func toolNoticesOf(cs *mcp.ClientSession) chan struct{} {
	ch, _ := toolNotices.LoadOrStore(cs, make(chan struct{}, 1))
	return ch.(chan struct{})
}

// e2eClient returns a client of the end-to-end tests with opts (nil for
// none) whose sessions waitTools follows: a ToolListChangedHandler of opts
// still runs, after the session's notice is recorded.
func e2eClient(opts *mcp.ClientOptions) *mcp.Client {
	var o mcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	next := o.ToolListChangedHandler
	o.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		select {
		case toolNoticesOf(req.Session) <- struct{}{}:
		default: // one notice not yet seen is enough: waitTools lists anew
		}
		if next != nil {
			next(ctx, req)
		}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &o)
}

// waitTools lists the tools cs is offered, again after each
// notifications/tools/list_changed, until they hold each of names, as a
// client that follows the notice sees them: the gateway offers each
// server's tools once that server is ready, and says so. cs must be a
// session of a client made by e2eClient. It fails after a minute without
// the tools (a bound on a hang, not a timing), listing what it saw.
func waitTools(t testing.TB, cs *mcp.ClientSession, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	notices := toolNoticesOf(cs)
	for lists := 1; ; lists++ {
		offered := map[string]bool{}
		var err error
		for tool, lerr := range cs.Tools(ctx, nil) {
			if err = lerr; err != nil {
				break
			}
			offered[tool.Name] = true
		}
		missing := ""
		for _, n := range names {
			if !offered[n] {
				missing = n
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-notices:
		case <-ctx.Done():
			t.Fatalf("the gateway never offered %s: %d listings, each after a tools/list_changed but the first (the client must be made by e2eClient); the last (error %v) offered %v",
				missing, lists, err, slices.Sorted(maps.Keys(offered)))
		}
	}
}

// listenCommand runs this test binary as the agentvalues command with args
// (which serve over HTTP) and returns the URL it says it serves at. The
// command is stopped when the test ends.
func listenCommand(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the client sessions' Close: their streams would hold the shutdown
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), " at http://"); ok {
			url = "http://" + u
		}
	}
	if url == "" {
		t.Fatalf("agentvalues %s never said where it serves", args[0])
	}
	go io.Copy(io.Discard, stderr)
	return url
}

// TestProxyHTTP serves the proxy over Streamable HTTP to two sessions,
// each with its own store.
func TestProxyHTTP(t *testing.T) {
	t.Parallel()
	url := listenCommand(t, "proxy", "--listen", "0", "--", os.Args[0], blobServerArg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sessions []*mcp.ClientSession
	for range 2 {
		cs, err := e2eClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		sessions = append(sessions, cs)
	}
	a, b := sessions[0], sessions[1]
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "blob", Arguments: json.RawMessage(`{"kind":"json","size":20000}`)})
	if err != nil || res.IsError || res.Meta[mcpproxy.MetaHandle] != "r1" {
		t.Fatalf("a's blob: %v %v", err, res)
	}
	if res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "read_value", Arguments: json.RawMessage(`{"ref":"r1","limit":100}`)}); err != nil || res.IsError {
		t.Errorf("a read its r1: %v %.200s", err, textOf(res))
	}
	if res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "read_value", Arguments: json.RawMessage(`{"ref":"r1","limit":100}`)}); err != nil || !res.IsError {
		t.Errorf("b read a's r1: %v %.200s", err, textOf(res))
	}
}

// TestGatewayConfigErrors runs the gateway over config files it must
// refuse, before it starts any server.
func TestGatewayConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, config, want string }{
		{"not json", `{"mcpServers":`, "is not an mcpServers config"},
		{"no servers", `{"servers":{}}`, `has no "mcpServers" object`},
		{"servers not an object", `{"mcpServers":[]}`, "is not an mcpServers config"},
		// A config whose every entry is left out is refused, after a line
		// for each.
		{"neither", `{"mcpServers":{"a":{"args":["x"]}}}`, `server "a" left out: it has neither "command" nor "url"`},
		{"both", `{"mcpServers":{"a":{"command":"x","url":"http://127.0.0.1:1"}}}`, `server "a" left out: it has both "command" and "url"`},
		{"http without url", `{"mcpServers":{"a":{"type":"http","command":"x"}}}`, `server "a" left out: a Streamable HTTP server needs "url"`},
		{"all disabled", `{"mcpServers":{"a":{"command":"x","disabled":true}}}`, "names no server the gateway can start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcp.json")
			if err := os.WriteFile(path, []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errs syncWriter
			if code := run([]string{"gateway", "--config", path}, strings.NewReader(""), &out, &errs); code != 1 || !strings.Contains(errs.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs.String(), tc.want)
			}
		})
	}
	var errs syncWriter
	if code := run([]string{"gateway"}, strings.NewReader(""), &syncWriter{}, &errs); code != 2 || !strings.Contains(errs.String(), "--config FILE") {
		t.Errorf("gateway without --config: exit %d, %q", code, errs.String())
	}
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestGatewayHTTP serves the gateway over Streamable HTTP to two client
// sessions at once: each has its own store and cannot read or pass the
// other's handles. A request for another Host is refused (DNS rebinding),
// and so is a request outside a session.
func TestGatewayHTTP(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers":{"blobs":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(blobServerArg) + `]}}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	url := listenCommand(t, "gateway", "--config", path, "--listen", "0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func() *mcp.ClientSession {
		cs, err := e2eClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	a, b := connect(), connect()
	waitTools(t, a, "blob", "ping")
	if h := call(a, "blob", `{"kind":"json","size":20000}`).Meta[mcpproxy.MetaHandle]; h != "r1" {
		t.Fatalf("a's first handle: %v", h)
	}
	call(a, "ping", `{}`)
	// b's store starts past the handles a had when it was made.
	if h := call(b, "blob", `{"kind":"text","size":20000}`).Meta[mcpproxy.MetaHandle]; h != "r3" {
		t.Fatalf("b's first handle: %v", h)
	}
	if res := call(b, "read_value", `{"ref":"r1","limit":200}`); !res.IsError {
		t.Errorf("b read a's r1: %.100s", textOf(res))
	}
	if res := call(b, "read_value", `{"ref":"r2"}`); !res.IsError || !strings.Contains(textOf(res), "r2") {
		t.Errorf("b read a's r2: %.200s", textOf(res))
	}
	if res := call(b, "blob", `{"kind":"$r2","size":1}`); !res.IsError || !strings.Contains(textOf(res), "was not called") {
		t.Errorf("b passed a's r2: %.200s", textOf(res))
	}

	post := func(host, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28") // as a client without sessions sends
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	if code, _ := post("evil.example", initialize); code != http.StatusForbidden {
		t.Errorf("a request for another Host: status %d, want 403", code)
	}
	stateless := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"ping","arguments":{}}}`
	if code, body := post("", stateless); !strings.Contains(body, "is not supported by this server") {
		t.Errorf("a request outside a session: %d %s", code, body)
	}
}
