package mcpproxy

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// namedServer is an MCP server named server whose tools and prompts are
// named as given; each answers with "server:name".
func namedServer(server string, tools, prompts []string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: server, Version: "1"}, nil)
	for _, n := range tools {
		s.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: server + ":" + n}}}, nil
			})
	}
	for _, n := range prompts {
		s.AddPrompt(&mcp.Prompt{Name: n}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: server + ":" + n}}}}, nil
		})
	}
	return s
}

// serveNamed serves s over an in-memory pipe and returns the client's end.
func serveNamed(t *testing.T, s *mcp.Server) mcp.Transport {
	t.Helper()
	st, pt := pipeTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return pt
}

// promptNames lists the prompts offered, sorted.
func (c *startClient) promptNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for pr, err := range c.cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, pr.Name)
	}
	slices.Sort(names)
	return names
}

// calls checks that each tool name answers with its text ("" for an
// isError result containing the text instead).
func calls(t *testing.T, cs *mcp.ClientSession, want map[string]string) {
	t.Helper()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		res := callTool(t, cs, name, `{}`)
		w := want[name]
		switch got := text(res); {
		case strings.HasPrefix(w, "error: "):
			if !res.IsError || !strings.Contains(got, strings.TrimPrefix(w, "error: ")) {
				t.Errorf("%s: want an error with %q, got %q", name, strings.TrimPrefix(w, "error: "), got)
			}
		case res.IsError || !strings.HasPrefix(got, w):
			t.Errorf("%s: want %q, got %q (isError %v)", name, w, got, res.IsError)
		}
	}
}

// TestGatewayBareNames: a tool or prompt that one server offers keeps its
// name; one that two offer is SERVER__NAME for both, logged once; a
// server's read_value is prefixed, never the gateway's; a name of the form
// OTHER__REST is prefixed; a bare name of a colliding tool fails naming
// the prefixed ones, and SERVER__NAME reaches a tool offered bare.
func TestGatewayBareNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &syncBuffer{}
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "a", Transport: serveNamed(t, namedServer("a", []string{"alpha", "shared", "read_value"}, []string{"hello", "only_a"}))},
		{Name: "b", Transport: serveNamed(t, namedServer("b", []string{"beta", "shared", "a__alpha"}, []string{"hello"}))},
	}, &Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c := connectStartClient(t, g.Server())
	want := []string{"a__read_value", "a__shared", "alpha", "b__a__alpha", "b__shared", "beta", "query_value", "read_value"}
	if diff := cmp.Diff(want, c.toolNames(t)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a__hello", "b__hello", "only_a"}, c.promptNames(t)); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	calls(t, c.cs, map[string]string{
		"alpha":         "a:alpha",
		"a__alpha":      "a:alpha", // the prefixed name of a tool offered bare
		"b__a__alpha":   "b:a__alpha",
		"beta":          "b:beta",
		"b__beta":       "b:beta",
		"a__shared":     "a:shared",
		"b__shared":     "b:shared",
		"a__read_value": "a:read_value",
		"shared":        `error: shared was not called: more than one server offers a tool named "shared", so it is offered as a__shared or b__shared`,
		"read_value":    "error: read_value: ", // the gateway's own, which wants a handle
	})
	for name, want := range map[string]string{"a__hello": "a:hello", "b__hello": "b:hello", "only_a": "a:only_a", "a__only_a": "a:only_a"} {
		res, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != want {
			t.Errorf("prompt %s: %v %+v", name, err, res)
		}
	}
	for up, want := range map[string]string{"a__hello": "a hello", "b__hello": "b hello", "only_a": "a only_a", "a__only_a": "a only_a", "hello": " "} {
		p, name := g.names.prompt(up)
		got := " "
		if p != nil {
			got = p.gatewayName() + " " + name
		}
		if got != want {
			t.Errorf("names.prompt(%q) = %q, want %q", up, got, want)
		}
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hello"}); err == nil || !strings.Contains(err.Error(), "a__hello or b__hello") {
		t.Errorf("prompt hello, offered by both: %v", err)
	}
	var collisions []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "each offer") {
			collisions = append(collisions, line)
		}
	}
	wantLog := []string{
		`agentvalues: the servers "a" and "b" each offer a prompt named "hello": it is offered as a__hello, b__hello`,
		`agentvalues: the servers "a" and "b" each offer a tool named "shared": it is offered as a__shared, b__shared`,
	}
	slices.Sort(collisions)
	if diff := cmp.Diff(wantLog, collisions); diff != "" {
		t.Errorf("collisions logged (-want +got):\n%s\nlog:\n%s", diff, log.String())
	}
}

// TestGatewayNameCollidesLater: a server that starts after another has
// offered a name bare and offers the same name turns it into two prefixed
// names; the client is told the tool list changed, and the bare name then
// fails naming both.
func TestGatewayNameCollidesLater(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, pt := pipeTransports() // the gate: nothing reads pt until the test serves st
	log := &syncBuffer{}
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "early", Transport: serveNamed(t, namedServer("early", []string{"search", "mine"}, nil))},
		{Name: "late", Transport: pt},
	}, &Options{Log: log, StartWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var ss *mcp.ServerSession
	open := func() { // the gate opens
		if ss, err = namedServer("late", []string{"search", "other"}, nil).Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { // before Close, which waits for late's attempt
		if ss == nil {
			open()
		}
		ss.Close()
	}()
	c := connectStartClient(t, g.Server())
	waitFor(t, func() bool { return slices.Contains(c.toolNames(t), "search") })
	calls(t, c.cs, map[string]string{
		"search": "early:search",
		"other":  `error: other was not called: no server offers a tool of that name now, and the servers "late" are not ready`,
	})
	for len(c.tools) > 0 { // the notifications of early's start
		<-c.tools
	}

	open()
	await(t, c.tools, "tools/list_changed")
	waitFor(t, func() bool { return slices.Contains(c.toolNames(t), "other") })
	want := []string{"early__search", "late__search", "mine", "other", "query_value", "read_value"}
	if diff := cmp.Diff(want, c.toolNames(t)); diff != "" {
		t.Errorf("tools once late is ready (-want +got):\n%s", diff)
	}
	calls(t, c.cs, map[string]string{
		"early__search": "early:search",
		"late__search":  "late:search",
		"search":        `error: more than one server offers a tool named "search", so it is offered as early__search or late__search: call one of those`,
		"mine":          "early:mine",
		"other":         "late:other",
	})
	waitLog(t, log, `the servers "early" and "late" each offer a tool named "search": it is offered as early__search, late__search`)
}

// TestGatewayPrefixNames: Options.PrefixNames offers every name prefixed,
// as before bare names; Downstream.PrefixNames does so for one server,
// whose names then collide with no other's.
func TestGatewayPrefixNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		all, onA   bool
		tools      []string
		prompts    []string
		collisions bool
	}{
		{name: "default", tools: []string{"a__shared", "alpha", "b__shared", "beta"}, prompts: []string{"hi"}, collisions: true},
		{name: "gateway", all: true, tools: []string{"a__alpha", "a__shared", "b__beta", "b__shared"}, prompts: []string{"a__hi"}},
		{name: "server", onA: true, tools: []string{"a__alpha", "a__shared", "beta", "shared"}, prompts: []string{"a__hi"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := &syncBuffer{}
			g, err := ConnectGateway(ctx, []Downstream{
				{Name: "a", PrefixNames: c.onA, Transport: serveNamed(t, namedServer("a", []string{"alpha", "shared"}, []string{"hi"}))},
				{Name: "b", Transport: serveNamed(t, namedServer("b", []string{"beta", "shared"}, nil))},
			}, &Options{Log: log, PrefixNames: c.all})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if err := g.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			cl := connectStartClient(t, g.Server())
			wantTools := append(c.tools, "query_value", "read_value")
			slices.Sort(wantTools)
			if diff := cmp.Diff(wantTools, cl.toolNames(t)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.prompts, cl.promptNames(t)); diff != "" {
				t.Errorf("prompts (-want +got):\n%s", diff)
			}
			want := map[string]string{"a__alpha": "a:alpha", "b__beta": "b:beta", "a__shared": "a:shared", "b__shared": "b:shared"}
			if c.onA {
				want["shared"] = "b:shared"
			}
			calls(t, cl.cs, want)
			if got := strings.Contains(log.String(), "each offer"); got != c.collisions {
				t.Errorf("a collision logged: %v, want %v; log:\n%s", got, c.collisions, log.String())
			}
		})
	}
}

// TestGatewayBareNameRawCall: a call of a tool offered bare through a
// gateway run over a LineTransport takes the raw call route, found by its
// name.
func TestGatewayBareNameRawCall(t *testing.T) {
	srv := &scriptServer{script: scriptCases(), cancel: make(chan struct{}, 16), gone: make(chan struct{})}
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	go srv.serve(sr, sw)
	ctx, cancel := context.WithCancel(context.Background())
	g, err := ConnectGateway(ctx, []Downstream{{Name: "a", Transport: lineDownstream{pr, pw}}}, &Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c := newLineClient(func(lt *LineTransport) { g.Run(ctx, lt) })
	t.Cleanup(func() {
		cancel()
		c.w.Close()
		<-c.ran
		sw.Close()
	})
	c.initialize(t)
	c.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"result","arguments":{"case":"text"}}}`)
	if line := c.next(t); !strings.Contains(line, `"id":1,"result"`) || strings.Contains(line, `"isError":true`) {
		t.Errorf("result: %s", line)
	}
	if n := g.served()[0].rawN.Load(); n != 1 {
		t.Errorf("raw call route took %d calls, want 1", n)
	}
}
