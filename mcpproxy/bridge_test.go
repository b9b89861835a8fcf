package mcpproxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectHand connects over t a client at 2026-07-28 that can elicit and
// answers input requests itself (its SDK's multi round trip off).
func connectHand(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "hand", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities: &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
		},
	})
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolRaw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestBridgeParked drives the bridge (bridge.go) by hand, with a client at
// 2026-07-28 that answers input requests itself, and a server at
// 2025-11-25: a call whose server asks for input ends with the request
// and a requestState, and is parked until the answer comes, at most
// maxParked at once (a server's request past it fails, saying why); the
// answer resumes the call; a requestState that names no parked call is
// answered with an error saying to call again.
func TestBridgeParked(t *testing.T) {
	_, connect := startInputProxy(t, false, legacyProtocol)
	cs := connectHand(t, connect())
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

// TestBridgeParkTimeout fires a parked call's parkTimeout timer (through
// the parkedCalls.afterFunc seam, as the clock would after 10 minutes):
// the downstream call is cancelled, its place among the maxParked is
// free, and the client's late answer is told the call no longer waits.
func TestBridgeParkTimeout(t *testing.T) {
	p, connect := startInputProxy(t, false, legacyProtocol)
	type timer struct {
		d    time.Duration
		fire func()
	}
	timers := make(chan timer, 1)
	p.parked.mu.Lock()
	p.parked.afterFunc = func(d time.Duration, f func()) func() bool {
		timers <- timer{d, f}
		return func() bool { return true }
	}
	p.parked.mu.Unlock()
	cs := connectHand(t, connect())
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confirm", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.RequestState, bridgeStatePrefix) {
		t.Fatalf("want the server's elicitation and a requestState, got %+v", res)
	}
	tm := <-timers
	if tm.d != parkTimeout {
		t.Errorf("the parked call's timer is %v, want parkTimeout (%v)", tm.d, parkTimeout)
	}
	p.parked.mu.Lock()
	pc := p.parked.byID[res.RequestState]
	p.parked.mu.Unlock()
	if pc == nil {
		t.Fatalf("the call is not parked under %q", res.RequestState)
	}
	tm.fire()
	<-pc.b.ctx.Done() // the downstream call is cancelled
	p.parked.mu.Lock()
	left := len(p.parked.byID)
	p.parked.mu.Unlock()
	if left != 0 {
		t.Errorf("%d calls still parked after the timeout", left)
	}
	late, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confirm", Arguments: json.RawMessage(`{}`),
		RequestState: res.RequestState, InputResponses: mcp.InputResponseMap{"1": &mcp.ElicitResult{Action: "accept"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !late.IsError || !strings.Contains(text(late), "the call this answers is no longer waiting (it waits at most 10m0s for an answer") {
		t.Errorf("an answer after the timeout: %s", text(late))
	}
}

// TestBridgeTelemetry: a bridged call is one downstream request across
// its client's two (the call, then the answer), and Telemetry is told of
// it once, as the downstream call ends, besides the end of each of the
// client's requests.
func TestBridgeTelemetry(t *testing.T) {
	rec := &recorder{}
	_, connect := startInputProxy(t, false, legacyProtocol, rec)
	cs := connectHand(t, connect())
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confirm", Arguments: json.RawMessage(`{}`)})
	if err != nil || !strings.HasPrefix(res.RequestState, bridgeStatePrefix) {
		t.Fatalf("want the server's elicitation and a requestState, got %+v, %v", res, err)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confirm", Arguments: json.RawMessage(`{}`),
		RequestState: res.RequestState, InputResponses: mcp.InputResponseMap{"1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}})
	if err != nil || res.IsError {
		t.Fatalf("the answer: %+v, %v", res, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 2 || !slices.Equal(rec.downs, []string{"ok"}) {
		t.Errorf("Telemetry was told of %d requests and the downstream outcomes %q; want 2 and one ok", len(rec.reqs), rec.downs)
	}
}
