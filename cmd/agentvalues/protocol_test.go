package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// versionServerArg makes the test binary a go-sdk MCP server whose one
// tool, version, answers with the protocol version its session is at.
const versionServerArg = "test-version-server"

func init() { testHelpers[versionServerArg] = versionServer }

// versionServerAnnounce, set in its environment, makes the version
// server say versionServerStarted on stderr as it starts.
const (
	versionServerAnnounce = "AGENTVALUES_TEST_VERSION_SERVER_ANNOUNCE"
	versionServerStarted  = "versionserver: started"
)

func versionServer([]string) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "versionserver", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "version", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "at " + req.Session.InitializeParams().ProtocolVersion}}}, nil
		})
	if os.Getenv(versionServerAnnounce) != "" {
		fmt.Fprintln(os.Stderr, versionServerStarted)
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "versionserver:", err)
	}
	return 0
}

// TestProtocolFollowsClient: the proxy and the gateway on stdin/stdout
// speak to their server the protocol version the client speaks, each of
// 2025-06-18, 2025-11-25 and 2026-07-28, and -protocol-version sets it
// whatever the client speaks; with -listen they speak 2025-11-25, as
// they do when the client's first message does not come within
// clientVersionWait.
func TestProtocolFollowsClient(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers":{"v":{"command":`+quote(os.Args[0])+`,"args":["`+versionServerArg+`"],"env":{"`+runMainEnv+`":"1"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	commands := map[string][]string{
		"proxy":   {"proxy", "--", os.Args[0], versionServerArg},
		"gateway": {"gateway", "--config", config},
	}
	call := func(t *testing.T, cs *mcp.ClientSession) string {
		t.Helper()
		waitTools(t, cs, "version")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "version", Arguments: json.RawMessage(`{}`)})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("version: %v %v", res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	for _, via := range []string{"proxy", "gateway"} {
		for _, tc := range []struct{ client, flag, want string }{
			{"2025-06-18", "", "2025-06-18"},
			{"2025-11-25", "", "2025-11-25"},
			{"2026-07-28", "", "2026-07-28"},
			{"2026-07-28", "2025-06-18", "2025-06-18"},
			{"2025-06-18", "2026-07-28", "2026-07-28"},
		} {
			t.Run(fmt.Sprintf("%s/%s/flag=%s", via, tc.client, tc.flag), func(t *testing.T) {
				args := commands[via]
				if tc.flag != "" {
					args = append([]string{args[0], "-protocol-version", tc.flag}, args[1:]...)
				}
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
				stderr := &syncWriter{}
				cmd.Stderr = stderr
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
				cs, err := client.Connect(ctx, &mcpproxy.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: tc.client})
				if err != nil {
					t.Fatalf("%v\n%s", err, stderr.String())
				}
				defer cs.Close()
				if got := cs.InitializeResult().ProtocolVersion; got != tc.client {
					t.Errorf("the client is at %s", got)
				}
				if got := call(t, cs); got != "at "+tc.want {
					t.Errorf("the server is %s, want at %s", got, tc.want)
				}
			})
		}
		t.Run(via+"/listen", func(t *testing.T) {
			l := startListener(t, append([]string{commands[via][0], "-listen", "127.0.0.1:0"}, commands[via][1:]...)...)
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: l.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
			if err != nil {
				t.Fatalf("%v\n%s", err, l.stderr())
			}
			defer cs.Close()
			if got := call(t, cs); got != "at "+mcpproxy.DefaultProtocolVersion {
				t.Errorf("the server is %s, want at %s", got, mcpproxy.DefaultProtocolVersion)
			}
		})
	}
	if runtime.GOOS == "linux" {
		// A client that sends nothing for a while: the proxy starts its
		// server (seen as its child) at the default version, which then
		// serves a client at another.
		t.Run("proxy/late client", func(t *testing.T) {
			cmd := exec.Command(os.Args[0], commands["proxy"]...)
			cmd.Env = testkit.ChildEnv(runMainEnv+"=1", versionServerAnnounce+"=1")
			stdin, err1 := cmd.StdinPipe()
			stdout, err2 := cmd.StdoutPipe()
			stderr, err3 := cmd.StderrPipe() // the server's stderr is the proxy's
			if err := errors.Join(err1, err2, err3, cmd.Start()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				stdin.Close()
				cmd.Wait()
			})
			started := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					if sc.Text() == versionServerStarted {
						close(started)
						break
					}
				}
				io.Copy(io.Discard, stderr)
			}()
			select {
			case <-started:
			case <-time.After(time.Minute):
				t.Fatal("the proxy started no server within a minute of a client that sends nothing")
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: stdout, Writer: stdin}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := call(t, cs); got != "at "+mcpproxy.DefaultProtocolVersion {
				t.Errorf("the server is %s, want at %s", got, mcpproxy.DefaultProtocolVersion)
			}
		})
	}
	t.Run("bad flag", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "proxy", "-protocol-version", "2031-01-01", "--", os.Args[0], versionServerArg)
		cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), `-protocol-version "2031-01-01": not one of 2026-07-28, 2025-11-25`) {
			t.Errorf("%v: %s", err, out)
		}
	})
}
