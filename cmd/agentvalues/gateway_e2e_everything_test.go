package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeConfig writes servers as an mcpServers config file and returns its
// path.
func writeConfig(t *testing.T, servers map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// servingAt matches the line a command serving over HTTP writes first.
var servingAt = regexp.MustCompile(` at (http://\S+)`)

// clientProtocol is the protocol version the end-to-end clients that
// answer a server's requests speak: the servers (server-everything,
// server-filesystem) speak it at most, and before 2026-07-28 a server asks
// its client in requests of its own while it handles a call, which the
// gateway passes to its client as they are. (A 2026-07-28 client cannot
// be sent such requests, and the gateway does not yet turn them into the
// input requests of a result.)
const clientProtocol = "2025-11-25"

// connectGateway runs this test binary as `agentvalues gateway --config
// config` and connects client to it at the protocol version: over its
// standard input and output when over is "stdio", else over Streamable
// HTTP (--listen on a free port of 127.0.0.1). The command's standard
// error, where its servers write theirs, is collected. The session is
// closed, then the command stopped, when the test ends.
func connectGateway(t *testing.T, over, config string, client *mcp.Client, version string) (*mcp.ClientSession, *syncWriter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"gateway", "--config", config}
	if over != "stdio" {
		args = append(args, "--listen", "127.0.0.1:0")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	var transport mcp.Transport = &mcpproxy.CommandTransport{Command: cmd}
	if over != "stdio" {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // after the session's Close: its stream would hold the shutdown
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
		if !stderr.waitFor(ctx, "serving MCP") {
			t.Fatalf("the gateway never said where it serves:\n%s", stderr.String())
		}
		m := servingAt.FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("no URL in the gateway's stderr:\n%s", stderr.String())
		}
		transport = &mcp.StreamableClientTransport{Endpoint: m[1]}
	}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to the gateway over %s: %v\nstderr:\n%s", over, err, stderr.String())
	}
	if v := cs.InitializeResult().ProtocolVersion; v != version {
		t.Fatalf("the gateway over %s speaks %s, want %s", over, v, version)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// TestGatewayEverythingClientRequests runs the real server-everything
// (stdio) behind the gateway, reached over stdio and over Streamable HTTP,
// by a go-sdk client that answers sampling, elicitation and roots. The
// server's trigger-sampling-request, trigger-elicitation-request and
// get-roots-list tools ask the client through the gateway: the client's
// handler gets the server's request as the server made it, and the tool's
// result, stored by the gateway under a handle, carries the client's
// answer. When the client's roots change, the server is told, asks again,
// and lists the new roots.
func TestGatewayEverythingClientRequests(t *testing.T) {
	t.Parallel()
	everything := everythingServer.command(t)
	for _, over := range []string{"stdio", "http"} {
		t.Run(over, func(t *testing.T) {
			t.Parallel()
			config := writeConfig(t, map[string]any{
				"everything": map[string]any{"command": everything[0], "args": everything[1:]},
			})
			samples := make(chan *mcp.CreateMessageParams, 4)
			elicits := make(chan *mcp.ElicitParams, 4)
			rootsAsked := make(chan struct{}, 16)
			logs := make(chan string, 256)
			client := e2eClient(&mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					samples <- req.Params
					return &mcp.CreateMessageResult{Model: "e2e-model-7", Role: "assistant", StopReason: "endTurn",
						Content: &mcp.TextContent{Text: "the answer the client sampled"}}, nil
				},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					elicits <- req.Params
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true, "integer": 7}}, nil
				},
				LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
					if s, ok := req.Params.Data.(string); ok {
						select {
						case logs <- s:
						default:
						}
					}
				},
			})
			client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "roots/list" {
						rootsAsked <- struct{}{}
					}
					return next(ctx, method, req)
				}
			})
			client.AddRoots(&mcp.Root{URI: "file:///e2e/alpha", Name: "alpha"})
			cs, stderr := connectGateway(t, over, config, client, clientProtocol)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			waitTools(t, cs, "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list")

			// call calls a tool that asks the client, and returns the
			// stored value's full text, read back by its handle.
			call := func(name, args string) string {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
				if err != nil {
					t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
				}
				if res.IsError {
					t.Fatalf("%s: %s\nstderr:\n%s", name, textOf(res), stderr.String())
				}
				h, _ := res.Meta[mcpproxy.MetaHandle].(string)
				if h == "" {
					t.Fatalf("%s: the gateway gave no handle: %+v", name, res.Meta)
				}
				read, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_value", Arguments: map[string]any{"ref": h}})
				if err != nil || read.IsError {
					t.Fatalf("read_value %s: %v %s", h, err, textOf(read))
				}
				if got, full := textOf(read), textOf(res); !strings.Contains(got, strings.TrimSpace(strings.SplitN(full, "\n", 2)[0])) {
					t.Errorf("%s: read_value %s gave %.300q, which does not hold the preview's first line %.100q", name, h, got, full)
				}
				return textOf(read)
			}

			got := call("trigger-sampling-request", `{"prompt":"count the stored values","maxTokens":77}`)
			select {
			case p := <-samples:
				text := ""
				if len(p.Messages) == 1 {
					if tc, ok := p.Messages[0].Content.(*mcp.TextContent); ok {
						text = tc.Text
					}
				}
				if text != "Resource trigger-sampling-request context: count the stored values" || p.MaxTokens != 77 || p.SystemPrompt != "You are a helpful test server." {
					t.Errorf("the client was asked to sample %q, maxTokens %d, system prompt %q", text, p.MaxTokens, p.SystemPrompt)
				}
			default:
				t.Fatalf("the tool answered, but the client was never asked to sample: %.500s", got)
			}
			for _, want := range []string{"the answer the client sampled", "e2e-model-7", "endTurn"} {
				if !strings.Contains(got, want) {
					t.Errorf("the sampling tool's result lacks %q: %.500s", want, got)
				}
			}

			got = call("trigger-elicitation-request", `{}`)
			select {
			case p := <-elicits:
				schema, _ := json.Marshal(p.RequestedSchema)
				if p.Message != "Please provide inputs for the following fields:" || !strings.Contains(string(schema), `"required":["name"]`) {
					t.Errorf("the client was asked %q with the schema %.300s", p.Message, schema)
				}
			default:
				t.Fatalf("the tool answered, but the client was never asked for input: %.500s", got)
			}
			for _, want := range []string{"User provided the requested information", "- Name: Ada Lovelace", "- Agreed to terms: true", "- Favorite Integer: 7"} {
				if !strings.Contains(got, want) {
					t.Errorf("the elicitation tool's result lacks %q: %.500s", want, got)
				}
			}

			got = call("get-roots-list", `{}`)
			if !strings.Contains(got, "(1 total)") || !strings.Contains(got, "1. alpha\n   URI: file:///e2e/alpha") {
				t.Fatalf("get-roots-list with the client's one root: %.500s", got)
			}
			// The roots change: the server is told through the gateway,
			// asks the client again (outside any call), and says so in a
			// log message.
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
			for len(rootsAsked) > 0 {
				<-rootsAsked
			}
			client.AddRoots(&mcp.Root{URI: "file:///e2e/beta", Name: "beta"})
			backstop := time.After(time.Minute) // a bound on a hang, not a timing
			for seen := false; !seen; {
				select {
				case s := <-logs:
					seen = strings.Contains(s, "Roots updated: 2 root(s) received from client")
				case <-backstop:
					t.Fatalf("server-everything never said it got the two roots\nstderr:\n%s", stderr.String())
				}
			}
			if len(rootsAsked) == 0 {
				t.Errorf("server-everything got the new roots, but the client was not asked for them")
			}
			got = call("get-roots-list", `{}`)
			if !strings.Contains(got, "(2 total)") || !strings.Contains(got, "2. beta\n   URI: file:///e2e/beta") {
				t.Errorf("get-roots-list after the roots changed: %.500s", got)
			}
		})
	}
}

// TestGatewayEverythingNewClient runs server-everything behind the gateway
// for a client at protocol 2026-07-28, which takes a server's requests
// only within a call's result: the server's sampling and elicitation
// requests, made within its tool's call, reach the client as that call's
// input requests (bridge.go), and its answers go back to the server.
func TestGatewayEverythingNewClient(t *testing.T) {
	t.Parallel()
	everything := everythingServer.command(t)
	config := writeConfig(t, map[string]any{
		"everything": map[string]any{"command": everything[0], "args": everything[1:]},
	})
	asked := make(chan string, 4)
	client := e2eClient(&mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked <- "sampling"
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "x"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- "elicitation"
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	const newProtocol = "2026-07-28"
	cs, stderr := connectGateway(t, "stdio", config, client, newProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitTools(t, cs, "trigger-sampling-request", "trigger-elicitation-request")
	for _, tc := range []struct{ tool, args, method string }{
		{"trigger-sampling-request", `{"prompt":"p"}`, "sampling/createMessage"},
		{"trigger-elicitation-request", `{}`, "elicitation/create"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", tc.tool, err, stderr.String())
		}
		if res.IsError {
			t.Errorf("%s: %.400s", tc.tool, textOf(res))
		}
		select {
		case got := <-asked:
			if got+"/" != strings.SplitAfter(tc.method, "/")[0] {
				t.Errorf("%s: the client was asked for %s", tc.tool, got)
			}
		default:
			t.Errorf("%s: the client was never asked (%s)", tc.tool, tc.method)
		}
	}
	if len(asked) > 0 {
		t.Errorf("the client was asked once more: %s", <-asked)
	}
}
