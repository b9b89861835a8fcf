package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPassthroughErrorCode has a server ask a client for a form that the
// client, which declared URL elicitation only, cannot be asked: the SDK
// refuses to send it with an error of no JSON-RPC code, and the server is
// answered with an internal error (-32603) saying why, not with code 0,
// which is no code (the conformance suite's server showed "MCP error 0").
func TestPassthroughErrorCode(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{legacyProtocol}})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("code %d: %v", jsonrpcCode(err), err)}}}, nil
		})
	p := connectPeerProxy(t, &peerServer{s: s})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, ct := pipeTransports()
	if _, err := p.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "url-only", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got := text(callTool(t, cs, "ask", `{}`))
	if want := fmt.Sprintf("code %d: ", jsonrpc.CodeInternalError); !strings.HasPrefix(got, want) || !strings.Contains(got, `client does not support "form" elicitation`) {
		t.Errorf("the server was answered %q; want %q and why", got, want)
	}
	if len(asked) != 0 {
		t.Error("the client was asked for a form it does not take")
	}
}
