package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayRemoteServer runs the gateway over the real filesystem server
// (stdio) and the real server-everything in its Streamable HTTP mode on
// 127.0.0.1. A file the filesystem server reads goes by reference to
// everything's echo over HTTP, and the echo, by reference again, back to
// the filesystem server, byte for byte. everything's log messages reach
// the client named by server, and its resource templates are offered and
// stored.
func TestGatewayRemoteServer(t *testing.T) {
	t.Parallel()
	files := fsServer.command(t)
	url := startEverythingHTTP(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var text strings.Builder
	for i := range 8000 {
		fmt.Fprintf(&text, "line %d of a file larger than any preview, with \"quotes\", tabs\tand ünïcödé\n", i)
	}
	if err := os.WriteFile(in, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"files":      map[string]any{"command": files[0], "args": append(files[1:], dir)},
		"everything": map[string]any{"type": "http", "url": url},
	}})
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}

	logs := make(chan *mcp.LoggingMessageParams, 64)
	cmd := exec.Command(os.Args[0], "gateway", "--config", config)
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := e2eClient(&mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case logs <- req.Params:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcpproxy.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()
	waitTools(t, cs, "read_text_file", "write_file", "echo", "toggle-simulated-logging")
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

	read := call("read_text_file", `{"path":`+quote(in)+`}`)
	rh, _ := read.Meta[mcpproxy.MetaHandle].(string)
	if rh == "" || len(textOf(read)) > 8<<10 {
		t.Fatalf("a %d-byte file came back as %d bytes, handle %q", text.Len(), len(textOf(read)), rh)
	}
	echo := call("echo", `{"message":"$`+rh+`"}`)
	eh, _ := echo.Meta[mcpproxy.MetaHandle].(string)
	if eh == "" || !strings.Contains(textOf(echo), eh+" holds the full value") {
		t.Fatalf("echo of %s: handle %q, %.300s", rh, eh, textOf(echo))
	}
	out := filepath.Join(dir, "echo.txt")
	call("write_file", `{"path":`+quote(out)+`,"content":"$`+eh+`"}`)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Echo: " + text.String(); string(got) != want {
		t.Errorf("the file written from everything's echo has %d bytes, want %d", len(got), len(want))
	}

	// Log messages: everything sends one at once when asked, at a random
	// level; at "debug" every level passes.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	call("toggle-simulated-logging", `{}`)
	select {
	case m := <-logs:
		if m.Logger != "everything" && !strings.HasPrefix(m.Logger, "everything/") {
			t.Errorf("a log message of everything came with logger %q", m.Logger)
		}
		if s, _ := m.Data.(string); !strings.Contains(s, "message") {
			t.Errorf("log message data %v", m.Data)
		}
	case <-ctx.Done():
		t.Fatalf("no log message from everything\nstderr:\n%s", stderr.String())
	}
	call("toggle-simulated-logging", `{}`) // off again

	// Its resource templates, read through the gateway, are stored.
	var templates []string
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, rt.URITemplate)
	}
	if !strings.Contains(strings.Join(templates, " "), "demo://resource/dynamic/text/{resourceId}") {
		t.Fatalf("resource templates offered: %q", templates)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || !strings.HasPrefix(res.Contents[0].Text, "Resource 3: ") || res.Contents[0].Meta[mcpproxy.MetaHandle] == nil {
		t.Errorf("demo://resource/dynamic/text/3: %+v", res.Contents)
	}
}

// loopbackPreload makes a Node.js server that listens on a port alone
// (server-everything takes only PORT) listen on 127.0.0.1 only.
const loopbackPreload = `const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || typeof args[0] === "string") && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
`

// startEverythingHTTP starts server-everything's Streamable HTTP server on
// a free port of 127.0.0.1 and returns its endpoint; it is stopped when the
// test ends.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	command := everythingServer.command(t)
	preload := filepath.Join(t.TempDir(), "loopback.cjs")
	if err := os.WriteFile(preload, []byte(loopbackPreload), 0o644); err != nil {
		t.Fatal(err)
	}
	var last string
	for range 3 { // a port found free may be taken before the server binds it
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command(command[0], append(command[1:], "streamableHttp")...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "NODE_OPTIONS=--require "+preload)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if last = testkit.StartReady(cmd, stderr, "listening on port", time.Minute); last == "" {
			t.Cleanup(func() { testkit.KillGroup(cmd) }) // npx's node child too
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
	}
	t.Fatalf("server-everything did not start its HTTP server; its standard error:\n%s", last)
	return ""
}
