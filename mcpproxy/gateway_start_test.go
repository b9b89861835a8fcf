package mcpproxy

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startClient is a client of a gateway that records the list_changed
// notifications it receives.
type startClient struct {
	cs                       *mcp.ClientSession
	tools, prompts, resource chan struct{}
}

func connectStartClient(t *testing.T, server *mcp.Server) *startClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &startClient{tools: make(chan struct{}, 64), prompts: make(chan struct{}, 64), resource: make(chan struct{}, 64)}
	st, ct := pipeTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.tools <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { c.prompts <- struct{}{} },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.resource <- struct{}{} },
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// toolNames lists the tools offered, sorted.
func (c *startClient) toolNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for tool, err := range c.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// await waits (a minute at most: a bound on a hang) for a notification
// on ch.
func await(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("no %s notification", what)
	}
}

// hungCommand is a server that never speaks: the issue's `sleep 100000`.
func hungCommand() *exec.Cmd { return exec.Command("sleep", "100000") }

// TestGatewayStartsInBackground runs a gateway over a server that never
// answers (sleep) and one whose handshake waits until the test lets it
// through. initialize is answered and tools/list gives the value tools
// while neither is ready; a call of the gated server's tool says it is
// still starting; once it is let through, the client is told the tools,
// prompts and resources changed, and its tools answer, while the hung
// server is still in its first attempt. Close ends the hung attempt.
func TestGatewayStartsInBackground(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hung := hungCommand()
	st, pt := pipeTransports() // the gate: nothing reads pt until the test serves st
	log := &syncBuffer{}
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "stuck", Transport: &CommandTransport{Command: hung, TerminateDuration: 100 * time.Millisecond}},
		{Name: "gated", Transport: pt},
	}, &Options{Log: log, StartWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := connectStartClient(t, g.Server()) // initialize, answered with no server ready
	if diff := cmp.Diff([]string{"query_value", "read_value"}, c.toolNames(t)); diff != "" {
		t.Errorf("tools before any server is ready (-want +got):\n%s", diff)
	}
	if init := c.cs.InitializeResult(); !strings.Contains(init.Instructions, "handles") {
		t.Errorf("instructions: %q", init.Instructions)
	}
	early := callTool(t, c.cs, "gated__count", `{"n":1}`)
	if !early.IsError || !strings.Contains(text(early), `gated__count was not called: the server "gated" is still starting`) {
		t.Errorf("a call of a server still starting: %s", text(early))
	}

	server, _ := newTestServer()
	ss, err := server.Connect(ctx, st, nil) // the gate opens
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	await(t, c.tools, "tools/list_changed")
	await(t, c.prompts, "prompts/list_changed")
	await(t, c.resource, "resources/list_changed")
	if names := c.toolNames(t); !slices.Contains(names, "count") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "stuck") }) {
		t.Errorf("tools once gated is ready: %v", names)
	}
	if res := callTool(t, c.cs, "count", `{"n":3}`); res.IsError || !strings.Contains(text(res), `"n":3`) {
		t.Errorf("count once gated is ready: %s", text(res))
	}
	if res := callTool(t, c.cs, "gated__count", `{"n":4}`); res.IsError || !strings.Contains(text(res), `"n":4`) {
		t.Errorf("gated__count, its prefixed name, once it is ready: %s", text(res))
	}
	// The hung server is still in its first attempt: nothing waited on it.
	stuck := callTool(t, c.cs, "stuck__anything", `{}`)
	if !stuck.IsError || !strings.Contains(text(stuck), `the server "stuck" is still starting`) {
		t.Errorf("a call of the hung server's tool: %s", text(stuck))
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "stuck__greet"}); err == nil || !strings.Contains(err.Error(), `prompt "stuck__greet": the server "stuck" is still starting`) {
		t.Errorf("prompts/get of the hung server's prompt: %v", err)
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "gated__greet", Arguments: map[string]string{"name": "Ada"}}); err != nil {
		t.Errorf("gated__greet once it is ready: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Close has waited for the attempts (g.late): hung is the test's to read.
	if hung.Process == nil {
		t.Fatal("the hung server was never started")
	}
	// Close ended the hung attempt, and its process.
	if err := hung.Process.Signal(syscall.Signal(0)); err == nil {
		t.Error("the hung server still runs after Close")
	}
	if err := g.Wait(ctx); err != nil {
		t.Errorf("Wait after Close, with gated served: %v", err)
	}
}

// TestGatewaySlowServerKeepsOthers is the regression test of a gateway
// that shared its caller's one connect context between its servers: a
// server that hangs used it up, and the healthy servers' first listing
// then failed on it, so that all were dropped. The caller's context here
// ends a second after the call (as the command's connect timeout did) and
// is cancelled once ConnectGateway returns: the healthy server is served,
// and the hung one is tried on, under deadlines of its own.
func TestGatewaySlowServerKeepsOthers(t *testing.T) {
	t.Parallel()
	files, _ := newTestServer()
	st, pt := pipeTransports()
	ss, err := files.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	connectCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	log := &syncBuffer{}
	g, err := ConnectGateway(connectCtx, []Downstream{
		{Name: "files", Transport: pt},
		{Name: "stuck", Transport: &CommandTransport{Command: hungCommand(), TerminateDuration: 100 * time.Millisecond}},
	}, &Options{Log: log, StartWait: -1})
	cancel()
	if err != nil {
		t.Fatalf("ConnectGateway with a hung server: %v\nlog:\n%s", err, log.String())
	}
	defer g.Close()
	c := connectStartClient(t, g.Server())
	waitFor(t, func() bool { return slices.Contains(c.toolNames(t), "count") })
	if res := callTool(t, c.cs, "count", `{"n":2}`); res.IsError || !strings.Contains(text(res), `"n":2`) {
		t.Errorf("count with the caller's context gone: %s", text(res))
	}
	if strings.Contains(log.String(), `"files"`) {
		t.Errorf("the log names the healthy server:\n%s", log.String())
	}
}

// TestGatewayStartDeadline gives each attempt to start a server a short
// deadline: the hung server's first attempt runs out of it, is left out
// and tried again with its Restart (a server that answers this time), while
// the healthy server, reached first, is served throughout.
func TestGatewayStartDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	files, _ := newTestServer()
	st, pt := pipeTransports()
	ss, err := files.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	restarts := make(chan struct{}, 16)
	log := &syncBuffer{}
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "files", Transport: pt},
		{Name: "slow", Transport: &CommandTransport{Command: hungCommand(), TerminateDuration: 100 * time.Millisecond},
			Restart: func() mcp.Transport {
				restarts <- struct{}{}
				server, _ := newTestServer()
				sst, cst := pipeTransports()
				go server.Run(context.Background(), sst)
				return cst
			}},
	}, &Options{Log: log, StartWait: -1, seams: &seams{startTimeout: 200 * time.Millisecond, restartWait: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c := connectStartClient(t, g.Server())
	if err := g.Wait(ctx); err != nil { // files served, slow's first attempt over
		t.Fatal(err)
	}
	waitLog(t, log, `leaving out the server "slow" until it starts: `)
	if !strings.Contains(log.String(), "deadline exceeded") {
		t.Errorf("the log does not say the attempt ran out of time:\n%s", log.String())
	}
	if res := callTool(t, c.cs, "files__count", `{"n":1}`); res.IsError {
		t.Errorf("files__count: %s", text(res))
	}
	<-restarts
	waitLog(t, log, `started the server "slow"`)
	waitFor(t, func() bool { return slices.Contains(c.toolNames(t), "slow__count") })
	if res := callTool(t, c.cs, "slow__count", `{"n":4}`); res.IsError || !strings.Contains(text(res), `"n":4`) {
		t.Errorf("slow__count after its restart: %s", text(res))
	}
}

// TestGatewayStartWait: a tools/list made while a server is in its first
// attempt, within StartWait, waits for it and answers with its tools; a
// call of a server left out (no Restart) says so.
func TestGatewayStartWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, pt := pipeTransports()
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "gated", Transport: pt},
		{Name: "dead", Transport: &CommandTransport{Command: exec.Command("/nonexistent/agentvalues-dead")}},
	}, &Options{Log: &syncBuffer{}, StartWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c := connectStartClient(t, g.Server())
	listed := make(chan []string, 1)
	go func() {
		res, err := c.cs.ListTools(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		var names []string
		if res != nil {
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
		}
		listed <- names
	}()
	waitFor(t, func() bool { return g.held.Load() == 1 }) // the listing waits
	select {
	case names := <-listed:
		t.Fatalf("tools/list answered before gated was ready: %v", names)
	default:
	}
	server, _ := newTestServer()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if names := <-listed; !slices.Contains(names, "count") {
		t.Errorf("tools/list held for gated answered %v", names)
	}
	res := callTool(t, c.cs, "dead__count", `{}`)
	if !res.IsError || !strings.Contains(text(res), `dead__count was not called: the server "dead" is left out: `) {
		t.Errorf("a call of a server left out: %s", text(res))
	}
}
