//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatedServerArg runs this test binary as a blob server that first opens
// the FIFO named by its first argument for reading, which blocks until the
// test opens it for writing: a server that starts when the test says so.
const gatedServerArg = "test-gated-server"

func init() { testHelpers[gatedServerArg] = gatedServer }

func gatedServer(args []string) int {
	f, err := os.Open(args[0])
	if err != nil {
		return 1
	}
	f.Close()
	return blobServer(args[1:])
}

// TestGatewayStartup runs the gateway command over the repro, a
// server that never speaks (sleep 100000) beside a healthy one, plus a
// server that starts when the test opens a FIFO. initialize is answered
// and the healthy server's tools are called while the other two are still
// starting (their calls say so); once the gated server starts, the client
// is told the tool list changed and its tools answer, while the hung one
// is still starting.
func TestGatewayStartup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mcp.json")
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"stuck": map[string]any{"command": "sleep", "args": []string{"100000"}},
		"blobs": map[string]any{"command": os.Args[0], "args": []string{blobServerArg}},
		"late":  map[string]any{"command": os.Args[0], "args": []string{gatedServerArg, fifo}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "gateway", "--config", path, "-start-wait", "0")
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	changed := make(chan struct{}, 64)
	cs, err := e2eClient(&mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &mcpproxy.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize with a hung server: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	call := func(name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
		}
		return res
	}
	stillStarting := func(server string) {
		t.Helper()
		res := call(server + "__ping")
		if want := `the server "` + server + `" is still starting`; !res.IsError || !strings.Contains(textOf(res), want) {
			t.Errorf("%s__ping: %s; want an error saying %q", server, textOf(res), want)
		}
	}

	waitTools(t, cs, "ping") // blobs's, the one server that offers it so far
	if res := call("ping"); res.IsError {
		t.Fatalf("ping: %s", textOf(res))
	}
	stillStarting("late") // blocked on the FIFO until the test opens it
	stillStarting("stuck")

	gate, err := os.OpenFile(fifo, os.O_WRONLY, 0) // lets the gated server start
	if err != nil {
		t.Fatal(err)
	}
	gate.Close()
	for offered := false; !offered; {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no tools/list_changed offered late's tools\nstderr:\n%s", stderr.String())
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		offered = slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "late__ping" })
	}
	// late offers ping too: both are prefixed now, and the bare name
	// says which to call.
	waitTools(t, cs, "blobs__ping", "late__ping")
	for _, name := range []string{"late__ping", "blobs__ping"} {
		if res := call(name); res.IsError {
			t.Errorf("%s once late started: %s", name, textOf(res))
		}
	}
	if res := call("ping"); !res.IsError || !strings.Contains(textOf(res), "offered as blobs__ping or late__ping") {
		t.Errorf("ping once two servers offer it: %s", textOf(res))
	}
	waitStderr(t, stderr, `the servers "blobs" and "late" each offer a tool named "ping": it is offered as blobs__ping, late__ping`)
	stillStarting("stuck")
}
