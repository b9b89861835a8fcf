package mcpproxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBridgeParked drives the bridge (bridge.go) by hand, with a client at
// 2026-07-28 that answers input requests itself, and a server at
// 2025-11-25: a call whose server asks for input ends with the request
// and a requestState, and is parked until the answer comes, at most
// maxParked at once (a server's request past it fails, saying why); the
// answer resumes the call; a requestState that names no parked call is
// answered with an error saying to call again.
func TestBridgeParked(t *testing.T) {
	_, connect := startInputProxy(t, false, legacyProtocol)
	c := mcp.NewClient(&mcp.Implementation{Name: "hand", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities: &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
		},
	})
	cs, err := c.Connect(context.Background(), connect(), &mcp.ClientSessionOptions{ProtocolVersion: protocolRaw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	confirm := func(params *mcp.CallToolParams) *mcp.CallToolResult {
		t.Helper()
		params.Name, params.Arguments = "confirm", json.RawMessage(`{}`)
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var states []string
	for range maxParked {
		res := confirm(&mcp.CallToolParams{})
		el, ok := res.InputRequests["1"].(*mcp.ElicitParams)
		if !ok || el.Message != "sure?" || !strings.HasPrefix(res.RequestState, bridgeStatePrefix) {
			t.Fatalf("want the server's elicitation, got %+v", res)
		}
		states = append(states, res.RequestState)
	}
	if res := confirm(&mcp.CallToolParams{}); !res.IsError || !strings.Contains(text(res), "too many calls wait for their clients' answers (at most 64)") {
		t.Errorf("past maxParked: %+v %s", res, text(res))
	}
	res := confirm(&mcp.CallToolParams{RequestState: states[3], InputResponses: mcp.InputResponseMap{"1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}})
	if res.IsError || !strings.HasPrefix(text(res), "confirmed: accept map[name:Ada]") {
		t.Errorf("answered: %s", text(res))
	}
	res = confirm(&mcp.CallToolParams{RequestState: states[3], InputResponses: mcp.InputResponseMap{"1": &mcp.ElicitResult{Action: "accept"}}})
	if !res.IsError || !strings.Contains(text(res), "the call this answers is no longer waiting") {
		t.Errorf("answered twice: %s", text(res))
	}
	// Without the answer it was asked for, the server's request fails.
	res = confirm(&mcp.CallToolParams{RequestState: states[4], InputResponses: mcp.InputResponseMap{"2": &mcp.ElicitResult{Action: "accept"}}})
	if !res.IsError || !strings.Contains(text(res), `the client did not answer input request \"1\"`) && !strings.Contains(text(res), `the client did not answer input request "1"`) {
		t.Errorf("unanswered: %s", text(res))
	}
}
