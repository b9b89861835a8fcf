//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hangServerArg makes the test binary (with runMainEnv set) a downstream MCP
// server with one tool, hang, that never returns. Its arguments: a mode,
// "plain" or "stubborn" (ignores SIGTERM and the end of its input, so the
// proxy's shutdown of it takes the whole terminate sequence), and a file to
// write its pid to.
const hangServerArg = "test-hang-server"

// hangStarted is what the hang server writes to stderr when hang is called.
const hangStarted = "hang-server: hang started"

func init() { testHelpers[hangServerArg] = hangServer }

func hangServer(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: test-hang-server plain|stubborn PIDFILE")
		return 2
	}
	stubborn := args[0] == "stubborn"
	if stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	if err := os.WriteFile(args[1], []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "hangserver", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, hangStarted)
			for {
				time.Sleep(time.Hour) // ignores cancellation, like a stuck server
			}
		})
	// The session may wait for the stuck call before Run returns.
	s.Run(context.Background(), &mcp.StdioTransport{})
	for stubborn {
		time.Sleep(time.Hour)
	}
	return 0
}

// startProxyWithHangingCall starts `agentvalues proxy` in front of the hang
// server in mode, with env added to its environment, calls hang through it
// and returns once the call has reached the server, with a channel closed
// when the proxy exits.
func startProxyWithHangingCall(t *testing.T, mode string, env ...string) (cmd *exec.Cmd, exited <-chan struct{}, stderr func() string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "server.pid")
	cmd = exec.Command(os.Args[0], "proxy", "--", os.Args[0], hangServerArg, mode, pidFile)
	cmd.Env = testkit.ChildEnv(append([]string{runMainEnv + "=1"}, env...)...)
	// A file, not a pipe: the server, which shares it, may outlive the
	// proxy, and Wait must not wait for it.
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	stderr = func() string {
		data, _ := os.ReadFile(errFile.Name())
		return string(data)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		// The server is in a process group of its own: a proxy killed
		// outright leaves it behind.
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(string(data)); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connecting to the proxy: %v\nstderr:\n%s", err, stderr())
	}
	t.Cleanup(func() { cs.Close() })
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: json.RawMessage(`{}`)})
	for !strings.Contains(stderr(), hangStarted) {
		select {
		case <-done:
			t.Fatalf("the proxy exited before the call reached the server\nstderr:\n%s", stderr())
		case <-ctx.Done():
			t.Fatalf("the call never reached the server\nstderr:\n%s", stderr())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return cmd, done, stderr
}

// TestProxySIGTERMWithCallInFlight checks that the proxy command exits, with
// status 0, soon after a SIGTERM even though a call is stuck in a downstream
// server that ignores cancellation.
func TestProxySIGTERMWithCallInFlight(t *testing.T) {
	t.Parallel()
	// The stuck server does not exit when its input closes: the proxy
	// waits its terminate duration before it signals it. The test shortens
	// it from mcpproxy.DefaultTerminateDuration: the wait is not what it
	// checks.
	const terminate = 100 * time.Millisecond
	cmd, exited, stderr := startProxyWithHangingCall(t, "plain", terminateEnv+"="+terminate.String())
	limit := terminate + 4*time.Second
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Logf("exited %v after SIGTERM with %v", time.Since(start).Round(time.Millisecond), cmd.ProcessState)
		if !cmd.ProcessState.Success() {
			t.Errorf("the proxy exited with %v after SIGTERM, want 0\nstderr:\n%s", cmd.ProcessState, stderr())
		}
	case <-time.After(limit):
		t.Fatalf("the proxy still runs %v after SIGTERM with a call in flight\nstderr:\n%s", limit, stderr())
	}
}

// TestProxySecondSIGTERMKills checks that a second SIGTERM kills the proxy
// command at once while it is still shutting down after the first: here,
// waiting out a downstream server that ignores both its input closing and
// SIGTERM, which alone takes the proxy about 10s.
func TestProxySecondSIGTERMKills(t *testing.T) {
	t.Parallel()
	cmd, exited, stderr := startProxyWithHangingCall(t, "stubborn")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Fatalf("the proxy exited (%v) before the second SIGTERM; the test needs a slow shutdown\nstderr:\n%s", cmd.ProcessState, stderr())
	case <-time.After(500 * time.Millisecond):
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Logf("exited %v after the second SIGTERM", time.Since(start).Round(time.Millisecond))
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("the proxy ended with %v, want killed by SIGTERM", cmd.ProcessState)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("the proxy still runs 2s after a second SIGTERM\nstderr:\n%s", stderr())
	}
}
