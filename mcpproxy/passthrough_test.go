package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyProtocol is the protocol version the passthrough tests' servers and
// clients speak: before 2026-07-28, a server sends its client requests of
// its own (sampling, elicitation, roots) while it handles a call.
const legacyProtocol = "2025-11-25"

// A peerServer is a go-sdk server behind the proxy that uses the rest of
// the protocol: completions, subscriptions, and requests to its client.
type peerServer struct {
	s            *mcp.Server
	subscribed   chan string // URIs, as the server is asked to subscribe
	unsubscribed chan string
	rootsChanged chan struct{}
}

func newPeerServer(name string, versions ...string) *peerServer {
	ps := &peerServer{subscribed: make(chan string, 16), unsubscribed: make(chan string, 16), rootsChanged: make(chan struct{}, 16)}
	ps.s = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var all []string
			switch {
			case req.Params.Ref.Type == "ref/prompt" && req.Params.Ref.Name == "greet":
				all = []string{"Ada", "Alan", "Grace"}
			case req.Params.Ref.Type == "ref/resource" && req.Params.Ref.URI == "test://item/{n}":
				all = []string{"1", "12", "2"}
			default:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: name + ": nothing to complete"}
			}
			out := []string{}
			for _, v := range all {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					out = append(out, name+":"+v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: out, Total: len(out)}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			ps.subscribed <- req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			ps.unsubscribed <- req.Params.URI
			return nil
		},
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { ps.rootsChanged <- struct{}{} },
	})
	ps.s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["name"]}}}}, nil
		})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: name + " " + req.Params.URI}}}, nil
	}
	ps.s.AddResource(&mcp.Resource{URI: "test://" + name + "/watched", Name: "watched"}, read)
	ps.s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://item/{n}", Name: "item"}, read)
	tool := func(toolName string, h func(context.Context, *mcp.CallToolRequest) (string, error)) {
		ps.s.AddTool(&mcp.Tool{Name: toolName, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				text, err := h(ctx, req)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
			})
	}
	tool("ask_model", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 10,
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "capital of France?"}}},
		})
		if err != nil {
			return "", err
		}
		return "model said: " + res.Content.(*mcp.TextContent).Text, nil
	})
	tool("ask_user", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: "pick",
			// A multi-select enum (protocol 2025-11-25): the SDK's client
			// refuses it; the proxy passes it on to its client.
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"colors":{"type":"array","items":{"type":"string","enum":["red","blue"]}}}}`),
		})
		if err != nil {
			return "", err
		}
		got, _ := json.Marshal(res.Content)
		return "user said: " + res.Action + " " + string(got), nil
	})
	tool("ask_url", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "sign in", URL: "https://example.com/sign-in", ElicitationID: "e1"})
		if err != nil {
			return "", err
		}
		if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "e1"}); err != nil {
			return "", err
		}
		return "url: " + res.Action, nil
	})
	tool("roots", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return "", err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return "roots: " + strings.Join(uris, " "), nil
	})
	return ps
}

// connectPeer connects ps to a new transport and returns the other end.
func connectPeer(t *testing.T, ps *peerServer) mcp.Transport {
	t.Helper()
	st, pt := pipeTransports()
	ss, err := ps.s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return pt
}

// A peerClient is a go-sdk client of the proxy that answers sampling,
// elicitation and roots, and counts what it was asked.
type peerClient struct {
	cs        *mcp.ClientSession
	c         *mcp.Client
	updated   chan string // the URIs of notifications/resources/updated
	asked     chan string // the methods of the requests it answered
	completed chan string // the ids of notifications/elicitation/complete
}

// connectPeerClient connects a client to server at legacyProtocol; full
// gives it handlers for sampling and elicitation, and roots.
func connectPeerClient(t *testing.T, server *mcp.Server, name string, full bool) *peerClient {
	t.Helper()
	st, ct := pipeTransports()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	return connectPeerClientOver(t, ct, name, full, legacyProtocol)
}

// connectPeerClientOver is connectPeerClient over the transport ct to a
// server, at protocol version.
func connectPeerClientOver(t *testing.T, ct mcp.Transport, name string, full bool, version string) *peerClient {
	t.Helper()
	pc := &peerClient{updated: make(chan string, 16), asked: make(chan string, 16), completed: make(chan string, 16)}
	opts := &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { pc.updated <- req.Params.URI },
		Capabilities:           &mcp.ClientCapabilities{},
	}
	if full {
		opts.Capabilities = &mcp.ClientCapabilities{
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		}
		opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			pc.completed <- req.Params.ElicitationID
		}
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			pc.asked <- "sampling/createMessage"
			q := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: name + " answers " + q}}, nil
		}
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			pc.asked <- "elicitation/create"
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			if req.Params.Message == "sure?" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colors": []any{"blue"}}}, nil
		}
	}
	pc.c = mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	if full {
		pc.c.AddRoots(&mcp.Root{URI: "file:///" + name})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := pc.c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	pc.cs = cs
	return pc
}

// connectPeerProxy connects a proxy to ps.
func connectPeerProxy(t *testing.T, ps *peerServer) *Proxy {
	t.Helper()
	p, err := Connect(context.Background(), connectPeer(t, ps), &Options{Log: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// connectPeerGateway connects a gateway to the servers a and b.
func connectPeerGateway(t *testing.T, a, b *peerServer) *Gateway {
	t.Helper()
	g, err := ConnectGateway(context.Background(), []Downstream{
		{Name: "a", Transport: connectPeer(t, a)},
		{Name: "b", Transport: connectPeer(t, b)},
	}, &Options{Log: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Wait(context.Background()); err != nil { // the servers start in the background
		t.Fatal(err)
	}
	return g
}

// jsonrpcCode returns the code of the JSON-RPC error err carries, or 0.
func jsonrpcCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

func TestPassthroughCompletion(t *testing.T) {
	ctx := context.Background()
	p := connectPeerProxy(t, newPeerServer("one", legacyProtocol))
	g := connectPeerGateway(t, newPeerServer("a"), newPeerServer("b"))
	for _, tc := range []struct {
		name   string
		server *mcp.Server
		ref    mcp.CompleteReference
		value  string
		want   []string
		code   int64 // of the error, when one is wanted
	}{
		{"proxy prompt", p.Server(), mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "A", []string{"one:Ada", "one:Alan"}, 0},
		{"proxy template", p.Server(), mcp.CompleteReference{Type: "ref/resource", URI: "test://item/{n}"}, "1", []string{"one:1", "one:12"}, 0},
		{"gateway prompt of b", g.Server(), mcp.CompleteReference{Type: "ref/prompt", Name: "b__greet"}, "G", []string{"b:Grace"}, 0},
		{"gateway prompt of a", g.Server(), mcp.CompleteReference{Type: "ref/prompt", Name: "a__greet"}, "", []string{"a:Ada", "a:Alan", "a:Grace"}, 0},
		// Both servers have the template; the one whose list was taken
		// first offers it (they start in the background, in no set
		// order), and answers: "a:2" or "b:2", checked below.
		{"gateway template", g.Server(), mcp.CompleteReference{Type: "ref/resource", URI: "test://item/{n}"}, "2", []string{"a:2"}, 0},
		{"gateway unknown prompt", g.Server(), mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "", nil, jsonrpc.CodeInvalidParams},
		{"server's own error", p.Server(), mcp.CompleteReference{Type: "ref/resource", URI: "test://one/watched"}, "", nil, jsonrpc.CodeInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connectPeerClient(t, tc.server, "client", false)
			res, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &tc.ref, Argument: mcp.CompleteParamsArgument{Name: "name", Value: tc.value}})
			if tc.code != 0 {
				if got := jsonrpcCode(err); got != tc.code {
					t.Fatalf("error %v (code %d), want code %d", err, got, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if tc.name == "gateway template" && slices.Equal(res.Completion.Values, []string{"b:2"}) {
				want = []string{"b:2"}
			}
			if diff := cmp.Diff(want, res.Completion.Values); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

// receive returns what comes on ch, failing the test after a minute.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s came", what)
		panic("unreachable")
	}
}

func TestPassthroughSubscriptions(t *testing.T) {
	ctx := context.Background()
	a, b := newPeerServer("a", legacyProtocol), newPeerServer("b", legacyProtocol)
	g := connectPeerGateway(t, a, b)
	c1 := connectPeerClient(t, g.Server(), "c1", false)
	c2 := connectPeerClient(t, g.Server(), "c2", false)
	const uri = "test://b/watched"
	for _, c := range []*peerClient{c1, c2} {
		if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if got := receive(t, b.subscribed, "subscribe at b"); got != uri {
			t.Fatalf("b was subscribed to %q", got)
		}
	}
	b.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	for _, c := range []*peerClient{c1, c2} {
		if got := receive(t, c.updated, "update"); got != uri {
			t.Fatalf("update of %q", got)
		}
	}

	// c1 leaves: b keeps the subscription for c2, and only c2 hears.
	if err := c1.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	b.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	receive(t, c2.updated, "update after c1 left")
	// c2 leaves: b is unsubscribed.
	if err := c2.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, b.unsubscribed, "unsubscribe at b"); got != uri {
		t.Fatalf("b was unsubscribed from %q", got)
	}
	// a's resource: a hears of it, and c1 its updates; the one update c1
	// gets after unsubscribing from b's is a's, so none of b's came.
	if err := c1.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://a/watched"}); err != nil {
		t.Fatal(err)
	}
	receive(t, a.subscribed, "subscribe at a")
	a.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a/watched"})
	if got := receive(t, c1.updated, "update of a's resource"); got != "test://a/watched" {
		t.Fatalf("c1 heard of %q after unsubscribing from it", got)
	}
	if len(b.subscribed) != 0 || len(c2.updated) != 0 {
		t.Errorf("left over: %d subscriptions at b, %d updates to c2", len(b.subscribed), len(c2.updated))
	}

	err := c1.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://nowhere"})
	if jsonrpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "no server offers") {
		t.Errorf("subscribing to a URI no server offers: %v", err)
	}
}

// TestPassthroughSubscriptionsNewProtocol subscribes through a proxy whose
// server speaks protocol 2026-07-28 (subscriptions/listen): the updates
// come all the same.
func TestPassthroughSubscriptionsNewProtocol(t *testing.T) {
	ctx := context.Background()
	ps := newPeerServer("one")
	p := connectPeerProxy(t, ps)
	c := connectPeerClient(t, p.Server(), "c", false)
	const uri = "test://one/watched"
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// The listen request may reach the server after Subscribe returns:
	// updates are sent until one comes.
	for {
		ps.s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		select {
		case got := <-c.updated:
			if got != uri {
				t.Fatalf("update of %q", got)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestPassthroughClientRequests calls, through a proxy and a gateway, tools
// that ask their client for sampling, elicitation and roots: each request
// goes to the session whose call it is, the answer back to the server.
func TestPassthroughClientRequests(t *testing.T) {
	p := connectPeerProxy(t, newPeerServer("one", legacyProtocol))
	g := connectPeerGateway(t, newPeerServer("a", legacyProtocol), newPeerServer("b", legacyProtocol))
	for _, tc := range []struct {
		name   string
		server *mcp.Server
		prefix string
	}{{"proxy", p.Server(), ""}, {"gateway", g.Server(), "b__"}} {
		t.Run(tc.name, func(t *testing.T) {
			// Three clients: the call's session is the one asked.
			other := connectPeerClient(t, tc.server, "other", true)
			bare := connectPeerClient(t, tc.server, "bare", false)
			c := connectPeerClient(t, tc.server, "asker", true)
			for _, call := range []struct{ tool, want, asked string }{
				{"ask_model", "model said: asker answers capital of France?", "sampling/createMessage"},
				{"ask_user", `user said: accept {"colors":["blue"]}`, "elicitation/create"},
				{"roots", "roots: file:///asker", ""},
				{"ask_url", "url: accept", "elicitation/create"},
			} {
				res := callTool(t, c.cs, tc.prefix+call.tool, `{}`)
				if res.IsError || !strings.Contains(text(res), call.want) {
					t.Errorf("%s: %s", call.tool, text(res))
				}
				if call.asked != "" {
					if got := receive(t, c.asked, call.asked); got != call.asked {
						t.Errorf("the client was asked %s", got)
					}
				}
			}
			// The URL elicitation's completion came to the session it
			// went to.
			if id := receive(t, c.completed, "elicitation complete"); id != "e1" {
				t.Errorf("elicitation %q complete", id)
			}
			if len(other.asked) != 0 || len(other.completed) != 0 {
				t.Errorf("another session was asked %d requests, told of %d completions", len(other.asked), len(other.completed))
			}
			// A client that declared neither is not asked; the server hears why.
			for tool, want := range map[string]string{
				"ask_model": "the client did not declare the sampling capability",
				"ask_user":  "the client did not declare the elicitation capability",
			} {
				if res := callTool(t, bare.cs, tc.prefix+tool, `{}`); !res.IsError || !strings.Contains(text(res), want) {
					t.Errorf("%s by a client without the capability: %s", tool, text(res))
				}
			}
		})
	}
}

// TestPassthroughRootsChanged changes a client's roots: every server is
// told, and asks the client again.
func TestPassthroughRootsChanged(t *testing.T) {
	a, b := newPeerServer("a", legacyProtocol), newPeerServer("b", legacyProtocol)
	g := connectPeerGateway(t, a, b)
	c := connectPeerClient(t, g.Server(), "c", true)
	// Its initialization announced its roots.
	receive(t, a.rootsChanged, "roots list_changed at a")
	receive(t, b.rootsChanged, "roots list_changed at b")
	c.c.AddRoots(&mcp.Root{URI: "file:///more"})
	receive(t, a.rootsChanged, "roots list_changed at a")
	receive(t, b.rootsChanged, "roots list_changed at b")
	if res := callTool(t, c.cs, "a__roots", `{}`); !strings.Contains(text(res), "roots: file:///c file:///more") {
		t.Errorf("a__roots: %s", text(res))
	}
}

// TestPassthroughOutsideCalls sends requests to the client outside any
// call: with one client connected it is asked; with none, or two, the
// server is told why not.
func TestPassthroughOutsideCalls(t *testing.T) {
	ps := newPeerServer("one", legacyProtocol)
	p := connectPeerProxy(t, ps)
	ctx := context.Background()
	var down *mcp.ServerSession
	for ss := range ps.s.Sessions() {
		down = ss
	}
	_, err := down.ListRoots(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "no client is connected") {
		t.Errorf("roots/list with no client: %v", err)
	}
	c := connectPeerClient(t, p.Server(), "c", true)
	// ping, both ways: each side answers its own.
	if err := down.Ping(ctx, nil); err != nil {
		t.Errorf("the server's ping: %v", err)
	}
	if err := c.cs.Ping(ctx, nil); err != nil {
		t.Errorf("the client's ping: %v", err)
	}
	res, err := down.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
	if err != nil || res.Content.(*mcp.TextContent).Text != "c answers hi" {
		t.Fatalf("sampling outside a call, one client: %v %v", res, err)
	}
	receive(t, c.asked, "sampling")
	// roots/list goes to the session whose roots were announced last.
	connectPeerClient(t, p.Server(), "d", true)
	waitFor(t, func() bool { return len(ps.rootsChanged) >= 2 })
	roots, err := down.ListRoots(ctx, nil)
	if err != nil || len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///d" {
		t.Fatalf("roots/list after d's roots were announced: %v %v", roots, err)
	}
	_, err = down.Elicit(ctx, &mcp.ElicitParams{Message: "who?"})
	if err == nil || !strings.Contains(err.Error(), "several clients are connected") {
		t.Errorf("elicitation outside a call, two clients: %v", err)
	}
}

// TestPassthroughInputRequests calls tools that ask for input (multi
// round-trip requests, answered within the call before 2026-07-28)
// through a proxy, on the SDK route and the raw call route, by clients of
// every protocol version, the proxy speaking every version to the server
// (Options.ProtocolVersion): at 2026-07-28 the server asks within its
// result, which a client at 2026-07-28 is passed and one before it is
// asked by the proxy's SDK server or by the raw call route; before it the
// server sends requests of its own, which a client before 2026-07-28 is
// sent and one at 2026-07-28 gets within its call's result, bridged
// (bridge.go). Each time the session of the call answers, and the server
// gets the answers.
func TestPassthroughInputRequests(t *testing.T) {
	for _, version := range protocolVersions {
		for _, down := range protocolVersions {
			for _, raw := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/raw=%v", version, down, raw), func(t *testing.T) {
					p, connect := startInputProxy(t, raw, down)
					if got := p.current().down.InitializeResult().ProtocolVersion; got != down {
						t.Errorf("the server is spoken to at %s, want %s", got, down)
					}
					if !raw {
						connectPeerClientOver(t, connect(), "other", true, version)
					}
					c := connectPeerClientOver(t, connect(), "c", true, version)
					for tool, want := range map[string]string{
						"confirm":      "confirmed: accept map[name:Ada]",
						"ask_roots":    "roots: file:///c",
						"ask_model_in": "model: c answers capital?",
					} {
						if res := callTool(t, c.cs, tool, `{}`); res.IsError || !strings.Contains(text(res), want) {
							t.Errorf("%s: %s", tool, text(res))
						}
					}
					receive(t, c.asked, "elicitation")
					receive(t, c.asked, "sampling")
					bridged := version >= protocolRaw && down < protocolRaw
					if n := p.rawN.Load(); (n > 0) != (raw && !bridged) {
						t.Errorf("the raw call route took %d calls", n)
					}
					p.parked.mu.Lock()
					n := len(p.parked.byID)
					p.parked.mu.Unlock()
					if n != 0 {
						t.Errorf("%d calls are left parked", n)
					}
				})
			}
		}
	}
}

// startInputProxy starts a proxy of an input server (newInputServer); raw
// serves it over a LineTransport with Run (the raw call route), and
// connect returns the transport of the one client; else over the SDK
// server, each connect a new client's.
// tel, when given, is the proxy's Telemetry.
func startInputProxy(t *testing.T, raw bool, down string, tel ...Telemetry) (*Proxy, func() mcp.Transport) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	ss, err := newInputServer().Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	// Before the server is closed, once the proxy is: a server whose
	// handlers still write (a call left parked, bridge.go) is not read.
	t.Cleanup(func() { pr.Close() })
	opts := &Options{Log: io.Discard, ProtocolVersion: down}
	if len(tel) > 0 {
		opts.Telemetry = tel[0]
	}
	p, err := Connect(ctx, lineDownstream{pr, pw}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if !raw {
		return p, func() mcp.Transport {
			st, ct := pipeTransports()
			if _, err := p.Server().Connect(ctx, st, nil); err != nil {
				t.Fatal(err)
			}
			return ct
		}
	}
	ur, cw := io.Pipe()
	cr, uw := io.Pipe()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		p.Run(ctx, &LineTransport{Reader: ur, Writer: uw})
	}()
	t.Cleanup(func() {
		cancel()
		cw.Close()
		<-ran
	})
	return p, func() mcp.Transport { return &mcp.IOTransport{Reader: cr, Writer: cw} }
}

// newInputServer returns a server whose tools ask for input within their
// result, then answer with it: at protocol 2026-07-28 the result carries
// the requests; before it the SDK's server asks its client itself.
func newInputServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "confirm", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["ok"].(*mcp.ElicitResult); ok {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("confirmed: %s %v", r.Action, r.Content)}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"ok": &mcp.ElicitParams{Message: "sure?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_roots", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult); ok {
				var uris []string
				for _, root := range r.Roots {
					uris = append(uris, root.URI)
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots: " + strings.Join(uris, " ")}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_model_in", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["q"].(*mcp.CreateMessageWithToolsResult); ok && len(r.Content) == 1 {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model: " + r.Content[0].(*mcp.TextContent).Text}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"q": &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "capital?"}}}},
			}}, nil
		})
	return s
}

// TestPassthroughRouting runs calls of two sessions at once on one server:
// a request the server sends while both are in flight goes to the session
// whose call started last.
func TestPassthroughRouting(t *testing.T) {
	ps := newPeerServer("one", legacyProtocol)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ps.s.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			once.Do(func() { close(started) })
			<-release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "waited"}}}, nil
		})
	p := connectPeerProxy(t, ps)
	first := connectPeerClient(t, p.Server(), "first", true)
	second := connectPeerClient(t, p.Server(), "second", true)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := first.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait", Arguments: json.RawMessage(`{}`)})
		done <- res
	}()
	<-started
	if res := callTool(t, second.cs, "ask_model", `{}`); !strings.Contains(text(res), "second answers") {
		t.Errorf("ask_model by second while first waits: %s", text(res))
	}
	close(release)
	if res := <-done; res == nil || text(res) == "" {
		t.Errorf("first's call: %v", res)
	}
	if got := slices.Collect(func(yield func(string) bool) {
		for len(first.asked) > 0 {
			if !yield(<-first.asked) {
				return
			}
		}
	}); len(got) != 0 {
		t.Errorf("first was asked %v", got)
	}
}

// TestPassthroughHTTPServer does what the other tests do with a server
// reached over Streamable HTTP: its requests come on the call's stream,
// and roots list_changed goes down on a request of its own.
func TestPassthroughHTTPServer(t *testing.T) {
	ps := newPeerServer("web", legacyProtocol)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ps.s }, nil))
	t.Cleanup(srv.Close)
	g, err := ConnectGateway(context.Background(), []Downstream{
		{Name: "web", Transport: &mcp.StreamableClientTransport{Endpoint: srv.URL}},
	}, &Options{Log: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Wait(context.Background()); err != nil { // roots are announced to the servers connected
		t.Fatal(err)
	}
	c := connectPeerClient(t, g.Server(), "c", true)
	receive(t, ps.rootsChanged, "roots list_changed at the server")
	for tool, want := range map[string]string{
		"web__ask_model": "model said: c answers capital of France?",
		"web__ask_user":  `user said: accept {"colors":["blue"]}`,
		"web__roots":     "roots: file:///c",
	} {
		if res := callTool(t, c.cs, tool, `{}`); res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("%s: %s", tool, text(res))
		}
	}
	res, err := c.cs.Complete(context.Background(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "web__greet"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "G"}})
	if err != nil || !slices.Equal(res.Completion.Values, []string{"web:Grace"}) {
		t.Errorf("completion: %v %v", res, err)
	}
}
