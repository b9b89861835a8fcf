package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatewayFixture is a gateway over two test servers, "files" on a pipe and
// "web" over Streamable HTTP, and a "dead" one whose command does not
// exist, with a client connected to it.
type gatewayFixture struct {
	g      *Gateway
	web    *mcp.Server // the server behind "web"
	log    *syncBuffer
	client *mcp.ClientSession
}

func newGatewayFixture(t *testing.T) *gatewayFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	files, _ := newTestServer()
	st, pt := pipeTransports()
	ss, err := files.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })

	web, _ := newTestServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return web }, nil))
	t.Cleanup(srv.Close)

	f := &gatewayFixture{log: &syncBuffer{}, web: web}
	f.g, err = ConnectGateway(ctx, []Downstream{
		{Name: "files", Transport: pt},
		{Name: "web", Transport: &mcp.StreamableClientTransport{Endpoint: srv.URL}},
		{Name: "dead", Transport: &CommandTransport{Command: exec.Command("/nonexistent/agentvalues-test-server")}},
	}, &Options{Log: f.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.g.Close() })
	if err := f.g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	f.client = connectClient(t, f.g.Server())
	return f
}

func (f *gatewayFixture) call(t *testing.T, name, args string) *mcp.CallToolResult {
	t.Helper()
	return callTool(t, f.client, name, args)
}

// connectClient connects a test client to server over pipes; it is closed
// when the test ends.
func connectClient(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, ct := pipeTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool on cs, failing the test on a protocol error.
func callTool(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s %s: protocol error: %v", name, args, err)
	}
	return res
}

// TestGatewayCrossServerReference passes a value that one server's tool
// returned, by reference, to another server's tool: the second server gets
// the whole value, and the agent's transcript only the preview.
func TestGatewayCrossServerReference(t *testing.T) {
	f := newGatewayFixture(t)
	list := f.call(t, "files__list_items", `{"n":400}`)
	if list.IsError {
		t.Fatalf("files__list_items: %s", text(list))
	}
	h := handle(t, list)
	if !strings.Contains(text(list), h+" holds the full value") {
		t.Fatalf("a 400-item result came back whole or without its hint: %.300s", text(list))
	}
	echo := f.call(t, "web__echo", `{"path":"$`+h+`.items.-1.path","value":"$`+h+`.items"}`)
	if echo.IsError {
		t.Fatalf("web__echo: %s", text(echo))
	}
	got, _ := f.g.Values().Get(handle(t, echo))
	var args struct {
		Path  string
		Value []item
	}
	if err := json.Unmarshal(got.JSON(), &args); err != nil {
		t.Fatalf("the web server's echo %.200s: %v", got.JSON(), err)
	}
	if args.Path != "/files/f0399.txt" || len(args.Value) != 400 || args.Value[399] != listItems(400).Items[399] {
		t.Errorf("the web server got path %q and %d items, want the files server's result", args.Path, len(args.Value))
	}
	page := f.call(t, "read_value", `{"ref":"$`+h+`.items.7"}`)
	if page.IsError || !strings.Contains(text(page), `"/files/f0007.txt"`) {
		t.Errorf("read_value through the gateway: %s", text(page))
	}
}

// TestGatewayTools lists the gateway's tools: every reachable server's
// under its prefix, the value tools once, nothing of the dead server,
// which the log names.
func TestGatewayTools(t *testing.T) {
	f := newGatewayFixture(t)
	ctx := context.Background()
	var names []string
	for tool, err := range f.client.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	var want []string
	for _, server := range []string{"files", "web"} {
		for _, tool := range []string{"big_text", "count", "echo", "list_items", "raw_structured"} {
			want = append(want, server+ToolSeparator+tool)
		}
	}
	want = append(want, "query_value", "read_value")
	slices.Sort(want)
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("tool %s missing from %v", w, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "dead") || !slices.Contains(want, n) && !strings.Contains(n, ToolSeparator) {
			t.Errorf("unexpected tool %s", n)
		}
	}
	if log := f.log.String(); !strings.Contains(log, `leaving out the server "dead"`) {
		t.Errorf("the log does not name the server left out:\n%s", log)
	}
	// Errors name the tool as the agent called it.
	bad := f.call(t, "files__count", `{"n":"$r9"}`)
	if !bad.IsError || !strings.HasPrefix(text(bad), "files__count was not called") {
		t.Errorf("files__count with an unknown handle: %s", text(bad))
	}
}

// TestGatewayLateStart starts a gateway while one of its servers cannot
// be reached: it is left out, started in the background, and its tools are
// offered once it is up.
func TestGatewayLateStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	files, _ := newTestServer()
	st, pt := pipeTransports()
	if _, err := files.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	var attempts sync.WaitGroup
	attempts.Add(2) // one more failure after the start's, then it comes up
	tries := 0
	late := func() mcp.Transport {
		tries++
		if tries < 2 {
			defer attempts.Done()
			return &CommandTransport{Command: exec.Command("/nonexistent/agentvalues-late")}
		}
		attempts.Done()
		server, _ := newTestServer()
		sst, cst := pipeTransports()
		go server.Run(context.Background(), sst)
		return cst
	}
	log := &syncBuffer{}
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "files", Transport: pt},
		{Name: "late", Transport: &CommandTransport{Command: exec.Command("/nonexistent/agentvalues-late")}, Restart: late},
	}, &Options{Log: log, seams: &seams{restartWait: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cs := connectClient(t, g.Server())
	waitFor(t, func() bool {
		for tool, err := range cs.Tools(ctx, nil) {
			if err == nil && tool.Name == "late__count" {
				return true
			}
		}
		return false
	})
	attempts.Wait()
	if res := callTool(t, cs, "late__count", `{"n":3}`); res.IsError || !strings.Contains(text(res), `"n":3`) {
		t.Errorf("late__count: %s", text(res))
	}
	for _, want := range []string{`leaving out the server "late" until it starts`, `starting the server "late"`, `started the server "late"`} {
		waitLog(t, log, want) // the last is written just after its tools are offered
	}
}

// TestGatewayHTTPServerNotifies adds a tool to the server behind "web",
// which tells its clients on the standalone stream of Streamable HTTP: the
// gateway follows, and offers the tool (under its own name, which no other
// server offers; web__fresh is accepted too).
func TestGatewayHTTPServerNotifies(t *testing.T) {
	f := newGatewayFixture(t)
	f.web.AddTool(&mcp.Tool{Name: "fresh", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil
		})
	waitFor(t, func() bool {
		for tool, err := range f.client.Tools(context.Background(), nil) {
			if err == nil && tool.Name == "fresh" { // no other server offers it
				return true
			}
		}
		return false
	})
	if res := f.call(t, "fresh", `{}`); res.IsError || !strings.HasPrefix(text(res), "new") {
		t.Errorf("fresh: %s", text(res))
	}
	if res := f.call(t, "web__fresh", `{}`); res.IsError || !strings.HasPrefix(text(res), "new") {
		t.Errorf("web__fresh, the prefixed name of a tool offered bare: %s", text(res))
	}
}

func TestGatewayNames(t *testing.T) {
	for _, name := range []string{"files", "my-server", "s3.prod", "a_b", "Z9"} {
		if err := ValidServerName(name); err != nil {
			t.Errorf("ValidServerName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "a__b", "_x", "-x", "my server", "é", "a/b", "x__", "a_"} {
		if err := ValidServerName(name); err == nil {
			t.Errorf("ValidServerName(%q) accepted", name)
		}
	}
	ctx := context.Background()
	_, pt := pipeTransports()
	for _, servers := range [][]Downstream{
		{{Name: "a__b", Transport: pt}},
		{{Name: "a", Transport: pt}, {Name: "a", Transport: pt}},
	} {
		if _, err := ConnectGateway(ctx, servers, nil); err == nil {
			t.Errorf("ConnectGateway(%v) accepted", servers)
		}
	}
	g, err := ConnectGateway(ctx, []Downstream{{Name: "dead", Transport: &CommandTransport{Command: exec.Command("/nonexistent/x")}}}, &Options{Log: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Wait(ctx); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), `"dead"`) {
		t.Errorf("a gateway with no reachable server: %v", err)
	}
}

// TestGatewayRestart runs two test servers as child processes behind a
// gateway. While a call of one hangs, the other's calls go on; when the
// hanging one is killed, its call fails saying so, the gateway restarts
// it, and a handle minted before the restart is an argument after it.
func TestGatewayRestart(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var current *exec.Cmd // the latest process of server "a"
	stderr := &syncBuffer{}
	start := func() mcp.Transport {
		cmd := exec.Command(os.Args[0])
		cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
		cmd.Stderr = stderr
		mu.Lock()
		current = cmd
		mu.Unlock()
		return &CommandTransport{Command: cmd}
	}
	other := exec.Command(os.Args[0])
	other.Env = testkit.ChildEnv(testServerEnv + "=1")
	log := &syncBuffer{}
	ctx := context.Background()
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "a", Transport: start(), Restart: start},
		{Name: "b", Transport: &CommandTransport{Command: other}},
	}, &Options{Log: log, seams: &seams{restartWait: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cs := connectClient(t, g.Server())
	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		return callTool(t, cs, name, args)
	}

	h := handle(t, call("a__list_items", `{"n":50}`))
	hung := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__hang", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Errorf("a__hang: %v", err)
		}
		hung <- res
	}()
	waitLog(t, stderr, hangStartedLine)
	if res := call("b__echo", `{"path":"$`+h+`.items.1.path"}`); res.IsError || !strings.Contains(text(res), "/files/f0001.txt") {
		t.Errorf("b__echo while a hangs: %s", text(res))
	}

	mu.Lock()
	killed := current
	mu.Unlock()
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-hung:
		if !res.IsError || !strings.Contains(text(res), "exited (signal: killed) during the call of a__hang") || !strings.Contains(text(res), "being restarted") {
			t.Errorf("the call in flight when a died: %s", text(res))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight when a died never returned")
	}
	waitLog(t, log, `restarted the server "a"`)
	mu.Lock()
	restarted := current
	mu.Unlock()
	if restarted == killed {
		t.Fatal("no new process was started")
	}
	res := call("a__echo", `{"path":"$`+h+`.items.-1.path"}`)
	if res.IsError || !strings.Contains(text(res), "/files/f0049.txt") {
		t.Errorf("a__echo after the restart, with a handle from before it: %s", text(res))
	}
	if res := call("b__count", `{"n":3}`); res.IsError {
		t.Errorf("b__count: %s", text(res))
	}
}

// TestGatewayRestartFails kills a server whose restarts all fail: its
// tools' calls say it is being restarted, the attempts go on with a line
// each on the log, and Close ends them.
func TestGatewayRestartFails(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	log := &syncBuffer{}
	ctx := context.Background()
	g, err := ConnectGateway(ctx, []Downstream{{
		Name: "a", Transport: &CommandTransport{Command: cmd},
		Restart: func() mcp.Transport {
			return &CommandTransport{Command: exec.Command("/nonexistent/agentvalues-test-server")}
		},
	}}, &Options{Log: log, seams: &seams{restartWait: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cs := connectClient(t, g.Server())
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, log, "trying again in 4ms")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{}`)})
	if err != nil || !res.IsError || !strings.Contains(text(res), "echo was not called") || !strings.Contains(text(res), "restarting it failed") {
		t.Errorf("echo while a is down: %v %s", err, text(res))
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the restart attempts")
	}
}

// TestGatewaySessionStores serves a gateway over Streamable HTTP to two
// concurrent client sessions with a store each: each reads and passes on
// its own values, and a large result taken from the bytes of a server's
// response (both connection kinds) lands in the store of the session that
// called. A session made later starts past the handles handed out before.
func TestGatewaySessionStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files, _ := newTestServer()
	st, pt := pipeTransports()
	ss, err := files.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	g, err := ConnectGateway(ctx, []Downstream{
		{Name: "files", Transport: pt},
		{Name: "cmd", Transport: &CommandTransport{Command: cmd}},
	}, &Options{Log: &syncBuffer{}, PerSession: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if g.Values() != nil {
		t.Error("a gateway with a store per session has a shared one")
	}
	srv := httptest.NewServer(g.HTTPHandler(&HTTPOptions{Log: io.Discard}))
	t.Cleanup(srv.Close) // after the clients' sessions, which hold connections open

	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
		t.Helper()
		return callTool(t, cs, name, args)
	}
	a, b := connect(), connect()
	type session struct {
		cs      *mcp.ClientSession
		lines   int
		handles []string
	}
	sessions := []*session{{cs: a, lines: 5000}, {cs: b, lines: 7000}}
	var wg sync.WaitGroup
	for _, c := range sessions {
		wg.Go(func() {
			for _, server := range []string{"files", "cmd"} {
				res := call(c.cs, server+"__big_text", fmt.Sprintf(`{"lines":%d}`, c.lines))
				if want := fmt.Sprintf("len=%d", c.lines); !strings.Contains(text(res), want) {
					t.Errorf("%s__big_text of %d lines: %.200s", server, c.lines, text(res))
				}
				c.handles = append(c.handles, handle(t, res))
			}
		})
	}
	wg.Wait()
	for _, c := range sessions {
		for _, h := range c.handles {
			if page := call(c.cs, "read_value", `{"ref":"`+h+`","limit":100}`); page.IsError {
				t.Errorf("session of %d lines, read_value %s: %s", c.lines, h, text(page))
			}
		}
		ref := "$" + c.handles[1]
		if whole := call(c.cs, "files__echo", `{"value":"`+ref+`"}`); whole.IsError || !strings.Contains(text(whole), fmt.Sprintf("len=%d", c.lines)) {
			t.Errorf("session of %d lines passed %s: %.300s", c.lines, ref, text(whole))
		}
	}

	// A session made after another has ended starts past its handles: one
	// of them, from a transcript that outlived its session, names nothing.
	stale := sessions[0].handles
	a.Close()
	waitFor(t, func() bool {
		n := 0
		g.stores.live.all.Range(func(_, _ any) bool { n++; return true })
		return n == 1
	})
	c := connect()
	for _, h := range stale {
		if res := call(c, "read_value", `{"ref":"`+h+`"}`); !res.IsError || !strings.Contains(text(res), "not a stored value") {
			t.Errorf("read_value %s of a session that ended, in a new one: %.200s", h, text(res))
		}
	}
	if h := handle(t, call(c, "files__count", `{"n":1}`)); slices.Contains(stale, h) || slices.Contains(sessions[1].handles, h) {
		t.Errorf("the new session's first handle %s was handed out before", h)
	}
}

// waitFor waits up to 30 s for ok.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGatewayPromptsAndResources lists and uses the two test servers'
// prompts (one each, prefixed) and resources (the same URIs on both: the
// first server keeps them, the second's are left out and logged); a large
// resource read is stored and previewed, a small one comes whole, both
// with their handle.
func TestGatewayPromptsAndResources(t *testing.T) {
	f := newGatewayFixture(t)
	ctx := context.Background()
	var prompts []string
	for pr, err := range f.client.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, pr.Name)
	}
	slices.Sort(prompts)
	if diff := cmp.Diff([]string{"files__greet", "web__greet"}, prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	got, err := f.client.GetPrompt(ctx, &mcp.GetPromptParams{Name: "web__greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(got.Messages) != 1 || !strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, "Say hello to Ada") {
		t.Errorf("web__greet: %v %+v", err, got)
	}

	var uris []string
	for r, err := range f.client.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	if diff := cmp.Diff([]string{"test://big", "test://small"}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	// Both servers list it; the one whose list was taken first keeps it
	// (they start in the background, in no set order).
	waitLog(t, f.log, `not offering the resource "test://big" of the server "`)

	big, err := f.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://big"})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := big.Contents[0].Meta[MetaHandle].(string)
	v, ok := f.g.Values().Get(h)
	if !ok || string(v.Bytes()) != bigResource {
		t.Fatalf("test://big stored under %q: %v", h, ok)
	}
	if text := big.Contents[0].Text; len(text) > 4<<10 || !strings.Contains(text, h+" holds the full value") {
		t.Errorf("test://big came back as %d bytes: %.200s", len(text), text)
	}
	small, err := f.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://small"})
	if err != nil {
		t.Fatal(err)
	}
	if small.Contents[0].Text != "small resource" || small.Contents[0].Meta[MetaHandle] == nil {
		t.Errorf("test://small: %+v", small.Contents[0])
	}
	// The resource's value is an argument like any other.
	if res := f.call(t, "web__echo", `{"path":"$`+h+`"}`); res.IsError || !strings.Contains(text(res), "big resource") {
		t.Errorf("web__echo of the resource: %.200s", text(res))
	}

	var templates []string
	for rt, err := range f.client.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, rt.URITemplate)
	}
	if diff := cmp.Diff([]string{"test://item/{n}"}, templates); diff != "" {
		t.Errorf("resource templates (-want +got):\n%s", diff)
	}
	waitLog(t, f.log, `not offering the resource template "test://item/{n}" of the server "`)
	item, err := f.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://item/7"})
	if err != nil {
		t.Fatal(err)
	}
	if item.Contents[0].Text != "item 7" || item.Contents[0].Meta[MetaHandle] == nil {
		t.Errorf("test://item/7: %+v", item.Contents[0])
	}
}

// TestCancelledCallForgotten cancels a call the server never answers: the
// connection forgets it (and the store it would have gone to) once the
// cancellation is sent.
func TestCancelledCallForgotten(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	f := newFixture(t, &CommandTransport{Command: cmd, TerminateDuration: 100 * time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.client.CallTool(ctx, &mcp.CallToolParams{Name: "hang", Arguments: json.RawMessage(`{}`)})
		done <- err
	}()
	waitLog(t, stderr, hangStartedLine)
	conn := f.proxy.current().conn
	calls := conn.Waiting("tools/call")
	if len(calls) != 1 {
		t.Fatalf("%d tools/call pending while the hang call runs, want 1", len(calls))
	}
	id := calls[0]
	cancel()
	<-done
	deadline := time.Now().Add(30 * time.Second)
	for {
		if !slices.Contains(conn.Waiting(""), id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled call is still pending (%d calls pending)", len(conn.Waiting("")))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGatewayLeavesOutUnlisted connects a server that cannot list its
// tools: it is left out, and the gateway's instructions do not name it.
func TestGatewayLeavesOutUnlisted(t *testing.T) {
	ctx := context.Background()
	broken := mcp.NewServer(&mcp.Implementation{Name: "broken", Version: "1"}, &mcp.ServerOptions{Instructions: "BROKEN-INSTRUCTIONS"})
	broken.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	broken.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				return nil, errors.New("tools are down")
			}
			return next(ctx, method, req)
		}
	})
	good, _ := newTestServer()
	var downs []Downstream
	for _, s := range []struct {
		name   string
		server *mcp.Server
	}{{"good", good}, {"broken", broken}} {
		st, pt := pipeTransports()
		ss, err := s.server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		downs = append(downs, Downstream{Name: s.name, Transport: pt})
	}
	log := &syncBuffer{}
	g, err := ConnectGateway(ctx, downs, &Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cs := connectClient(t, g.Server())
	if init := cs.InitializeResult(); strings.Contains(init.Instructions, "BROKEN") || !strings.Contains(init.Instructions, "handles") {
		t.Errorf("instructions: %q", init.Instructions)
	}
	if !strings.Contains(log.String(), `leaving out the server "broken"`) || !strings.Contains(log.String(), "tools are down") {
		t.Errorf("log: %q", log.String())
	}
}

// TestGatewayLogging sets a log level: each server is asked for it, and
// their log messages reach the agent at or above it, named by server.
func TestGatewayLogging(t *testing.T) {
	f := newGatewayFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan *mcp.LoggingMessageParams, 16)
	st, ct := pipeTransports()
	if _, err := f.g.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { got <- req.Params },
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, level, text string }{
		{"web__log", "debug", "below the level"},
		{"web__log", "warning", "from web"},
		{"files__log", "info", "from files"},
	} {
		if res := callTool(t, cs, c.tool, fmt.Sprintf(`{"level":%q,"text":%q}`, c.level, c.text)); res.IsError {
			t.Fatalf("%s: %s", c.tool, text(res))
		}
	}
	var msgs []string
	for len(msgs) < 2 {
		select {
		case m := <-got:
			msgs = append(msgs, fmt.Sprintf("%s %s %v", m.Level, m.Logger, m.Data))
		case <-ctx.Done():
			t.Fatalf("log messages received: %q", msgs)
		}
	}
	slices.Sort(msgs) // two servers: their messages may come in either order
	if diff := cmp.Diff([]string{"info files/tester from files", "warning web/tester from web"}, msgs); diff != "" {
		t.Errorf("log messages (-want +got):\n%s", diff)
	}
}

// startLineGateway runs a gateway with Run over a LineTransport, in front
// of two scriptServers, "a" and "b", over the proxy's own line
// connections, with the raw path off when rawOff is set. took reports
// whether the raw path took a call.
func startLineGateway(t *testing.T, rawOff bool) (c *lineClient, srvs []*scriptServer, took func() bool) {
	t.Helper()
	var ds []Downstream
	var outs []io.Closer
	for _, n := range []string{"a", "b"} {
		srv := &scriptServer{script: scriptCases(), cancel: make(chan struct{}, 16), gone: make(chan struct{})}
		sr, pw := io.Pipe()
		pr, sw := io.Pipe()
		go srv.serve(sr, sw)
		srvs, outs = append(srvs, srv), append(outs, sw)
		ds = append(ds, Downstream{Name: n, Transport: lineDownstream{pr, pw}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, err := ConnectGateway(ctx, ds, &Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range g.served() {
		p.rawOff = rawOff
	}
	c = newLineClient(func(lt *LineTransport) { g.Run(ctx, lt) })
	t.Cleanup(func() {
		cancel()
		c.w.Close()
		<-c.ran
		for _, o := range outs {
			o.Close()
		}
	})
	took = func() bool {
		for _, p := range g.served() {
			if p.rawN.Load() > 0 {
				return true
			}
		}
		return false
	}
	return c, srvs, took
}

// TestGatewayRawCall: a gateway run over a LineTransport answers the
// nominal call of a server's tool on the raw path, with the response the
// SDK path gives, a cancelled call included; and returns at once when the
// client goes away during a call.
func TestGatewayRawCall(t *testing.T) {
	for _, name := range []string{"text", "structured", "error", "long error", "deep", "not json", "hang"} {
		t.Run(name, func(t *testing.T) {
			var lines [2]string
			for i, rawOff := range []bool{true, false} {
				c, srvs, took := startLineGateway(t, rawOff)
				c.initialize(t)
				c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"b__result","arguments":{"case":%q}}}`, name))
				if name == "hang" {
					// Cancelled: not answered; a ping after it is.
					waitFor(t, func() bool { return len(srvs[1].lines(`"hang"`)) == 1 })
					c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`)
					c.send(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
					for !strings.Contains(lines[i], `"id":"p"`) {
						if lines[i] = c.next(t); strings.Contains(lines[i], `"id":"s"`) {
							t.Errorf("rawOff=%v: the cancelled call was answered: %s", rawOff, lines[i])
						}
					}
				} else {
					lines[i] = c.next(t)
				}
				if took() == rawOff {
					t.Errorf("rawOff=%v: raw path taken: %v", rawOff, took())
				}
			}
			if diff := cmp.Diff(lines[0], lines[1]); diff != "" {
				t.Errorf("raw path differs from SDK path (-sdk +raw):\n%s", diff)
			}
		})
	}
	for _, rawOff := range []bool{true, false} {
		t.Run(fmt.Sprintf("client gone/rawOff=%v", rawOff), func(t *testing.T) {
			c, srvs, _ := startLineGateway(t, rawOff)
			c.initialize(t)
			c.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"b__result","arguments":{"case":"hang"}}}`)
			waitFor(t, func() bool { return len(srvs[1].lines(`"hang"`)) == 1 })
			c.w.Close()
			select {
			case <-c.ran:
			case <-time.After(10 * time.Second):
				t.Fatal("Run still running 10 s after the client went away")
			}
			for _, srv := range srvs {
				select {
				case <-srv.gone:
				case <-time.After(10 * time.Second):
					t.Error("a downstream connection is still open")
				}
			}
		})
	}
}
