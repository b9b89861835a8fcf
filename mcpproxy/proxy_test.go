package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeTransports returns two connected transports with no cap on message
// size (the SDK's in-memory transports stop at 16 MiB).
func pipeTransports() (a, b mcp.Transport) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	return &mcp.IOTransport{Reader: ar, Writer: aw, MaxLineLength: -1},
		&mcp.IOTransport{Reader: br, Writer: bw, MaxLineLength: -1}
}

// syncBuffer is a bytes.Buffer safe for the proxy's log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A fixture is a proxy between an SDK client and a downstream test server.
type fixture struct {
	proxy     *Proxy
	client    *mcp.ClientSession
	log       *syncBuffer
	listed    chan struct{}                        // receives after each upstream tools/list_changed
	progress  chan *mcp.ProgressNotificationParams // progress the client received
	downstrm  *mcp.ServerSession
	server    *mcp.Server // the downstream server, when in process
	calls     *serverCalls
	transport mcp.Transport // the proxy's downstream transport
}

// newFixture starts the proxy over downstream (nil: an in-process test
// server) and connects an SDK client to it.
func newFixture(t *testing.T, downstream mcp.Transport, opts *Options) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := &fixture{log: &syncBuffer{}, listed: make(chan struct{}, 16), progress: make(chan *mcp.ProgressNotificationParams, 16)}
	if downstream == nil {
		f.server, f.calls = newTestServer()
		st, pt := pipeTransports()
		ss, err := f.server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.downstrm = ss
		downstream = pt
	}
	f.transport = downstream
	if opts == nil {
		opts = &Options{}
	}
	opts.Log = f.log
	p, err := Connect(ctx, downstream, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.proxy = p
	pst, ct := pipeTransports()
	if _, err := p.Server().Connect(ctx, pst, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case f.listed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			f.progress <- req.Params
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.client = cs
	t.Cleanup(func() {
		cs.Close()
		p.Close()
		if f.downstrm != nil {
			f.downstrm.Close()
		}
	})
	return f
}

// call calls a tool through the proxy; a protocol error fails the test,
// since the proxy must answer every call with a result.
func (f *fixture) call(t *testing.T, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := f.client.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s %s: protocol error: %v", name, args, err)
	}
	return res
}

// text returns the text of a result's content blocks, joined by newlines.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func handle(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	h, _ := res.Meta[MetaHandle].(string)
	if h == "" {
		t.Fatalf("result has no %s in _meta: %v", MetaHandle, res.Meta)
	}
	return h
}

// readAll pages through ref with read_value and returns the reassembled
// bytes and the number of pages.
func (f *fixture) readAll(t *testing.T, ref string, limit int) (string, int) {
	t.Helper()
	all, pages, err := testkit.ReadPages(0, func(offset int) (testkit.Page, error) {
		res := f.call(t, "read_value", fmt.Sprintf(`{"ref":%q,"offset":%d,"limit":%d}`, ref, offset, limit))
		if res.IsError {
			t.Fatalf("read_value %s at %d: %s", ref, offset, text(res))
		}
		page := text(res)
		if len(page) > limit {
			t.Fatalf("read_value page of %d bytes exceeds limit %d", len(page), limit)
		}
		return testkit.ParsePage(offset, page), nil
	})
	if err != nil {
		t.Fatalf("read_value %s: %v", ref, err)
	}
	return all, pages
}

func TestToolsMirrored(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	up, err := f.client.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range up.Tools {
		names = append(names, tool.Name)
		if tool.Name == "read_value" || tool.Name == "query_value" {
			continue
		}
		if !strings.Contains(tool.Description, referenceNote) {
			t.Errorf("%s: description %q does not mention references", tool.Name, tool.Description)
		}
		if tool.OutputSchema != nil {
			t.Errorf("%s: outputSchema %v was not dropped", tool.Name, tool.OutputSchema)
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"big_text", "count", "echo", "hang", "image", "late_progress", "list_items", "log", "mixed", "progress", "query_value", "raw_structured", "read_value"}, names); diff != "" {
		t.Errorf("mirrored tools (-want +got):\n%s", diff)
	}

	// Input schemas are the downstream ones, with references admitted
	// (schema_test.go tests the rewriting).
	var down []*mcp.Tool
	for tool, err := range f.proxy.current().down.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		down = append(down, tool)
	}
	for _, d := range down {
		i := slices.IndexFunc(up.Tools, func(u *mcp.Tool) bool { return u.Name == d.Name })
		raw, _ := json.Marshal(d.InputSchema)
		admitted, err := values.AdmitReferences(raw)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		json.Unmarshal(admitted, &want)
		if diff := cmp.Diff(want, up.Tools[i].InputSchema); diff != "" {
			t.Errorf("%s input schema (-downstream +upstream):\n%s", d.Name, diff)
		}
	}
}

func TestLargeResultPreviewedAndReferenced(t *testing.T) {
	f := newFixture(t, nil, nil)

	res := f.call(t, "list_items", `{"n":500}`)
	h := handle(t, res)
	if h != "r1" {
		t.Fatalf("first handle = %q, want r1", h)
	}
	got := text(res)
	if res.IsError || len(res.Content) != 1 || !strings.HasPrefix(got, "r1 = ") || !strings.Contains(got, `"$r1`) {
		t.Fatalf("want a preview of r1 with its hint, got %q", got)
	}
	if len(got) > 4096 {
		t.Errorf("preview is %d bytes", len(got))
	}
	if res.StructuredContent != nil {
		t.Errorf("previewed result kept structuredContent")
	}
	want, _ := json.Marshal(listItems(500))
	v, ok := f.proxy.Values().Get("r1")
	if !ok {
		t.Fatal("r1 not stored")
	}
	var gotItems, wantItems any
	json.Unmarshal(v.JSON(), &gotItems)
	json.Unmarshal(want, &wantItems)
	if diff := cmp.Diff(wantItems, gotItems); diff != "" {
		t.Errorf("stored r1 (-want +got):\n%s", diff)
	}

	// A later call receives the real value behind a reference.
	res = f.call(t, "echo", `{"path":"$r1.items.57.path","value":"$r1.items.-1"}`)
	if res.IsError {
		t.Fatalf("echo: %s", text(res))
	}
	wantEcho := `{"path":"/files/f0057.txt","value":{"id":499,"path":"/files/f0499.txt","size":49900}}`
	if got := res.Content[0].(*mcp.TextContent).Text; got != wantEcho {
		t.Errorf("echo received %s, want %s", got, wantEcho)
	}
	// The small echo result comes back whole, with its handle named.
	if h := handle(t, res); h != "r2" || !strings.Contains(text(res), `[stored as r2`) {
		t.Errorf("small result: handle %q, text %q", h, text(res))
	}

	// read_value pages reassemble the full stored result.
	all, pages := f.readAll(t, "r1", 4096)
	if all != string(v.JSON()) {
		t.Errorf("read_value pages reassemble %d bytes, want the %d stored", len(all), len(v.JSON()))
	}
	if pages < 2 {
		t.Errorf("read %d pages of %d bytes with a 4 KiB limit", pages, len(all))
	}
}

func TestSmallStructuredResultWhole(t *testing.T) {
	f := newFixture(t, nil, nil)
	res := f.call(t, "list_items", `{"n":2}`)
	if res.IsError || handle(t, res) != "r1" {
		t.Fatalf("list_items: %s", text(res))
	}
	want, _ := json.Marshal(listItems(2))
	got, _ := json.Marshal(res.StructuredContent)
	var g any
	var w map[string]any
	json.Unmarshal(got, &g)
	json.Unmarshal(want, &w)
	w[MetaHandle] = "r1" // for clients that show the model only structuredContent
	if diff := cmp.Diff(any(w), g); diff != "" {
		t.Errorf("structuredContent (-want +got):\n%s", diff)
	}
	if n := len(res.Content); n != 2 || !strings.Contains(text(res), `"path":"/files/f0001.txt"`) || !strings.HasSuffix(text(res), "\n[stored as r1 (object, 2 keys, 127 B): pass \"$r1\" or \"$r1.<field>\" as a tool argument to reuse it]") {
		t.Errorf("want the content whole and a line naming r1, got %d blocks: %q", n, text(res))
	}
}

// TestStructuredContentExact checks that structured content is stored
// byte for byte as the server sent it (key order kept, integers beyond 2^53
// exact), and passed on so, with the handle as one more member.
func TestStructuredContentExact(t *testing.T) {
	f := newFixture(t, nil, nil)
	res := f.call(t, "raw_structured", `{}`)
	v, _ := f.proxy.Values().Get(handle(t, res))
	if string(v.JSON()) != rawStructured {
		t.Errorf("stored %s, want %s", v.JSON(), rawStructured)
	}
	if res.StructuredContent == nil {
		t.Fatal("small result lost its structuredContent")
	}
	got, _ := json.Marshal(res.StructuredContent)
	var g, w any // as the client decodes them
	json.Unmarshal(got, &g)
	json.Unmarshal([]byte(`{"`+MetaHandle+`":"r1",`+rawStructured[1:]), &w)
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("structuredContent passed on (-want +got):\n%s", diff)
	}
	res = f.call(t, "echo", `{"value":"$r1.big"}`)
	if got, want := res.Content[0].(*mcp.TextContent).Text, `{"value":4611686018427387905}`; got != want {
		t.Errorf("echo received %s, want %s", got, want)
	}
}

func TestBadReferencesRefused(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.call(t, "list_items", `{"n":100}`)
	for _, tc := range []struct {
		name, tool, args string
		mention          []string
	}{
		{"unknown handle", "echo", `{"path":"$r9"}`, []string{"$r9"}},
		{"no such path", "echo", `{"path":"$r1.items.100.path"}`, []string{"$r1.items.100.path"}},
		{"wrong type from a reference", "count", `{"n":"$r1.items.0.path"}`, []string{"/n", "$r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.calls.all.Load()
			res := f.call(t, tc.tool, tc.args)
			if !res.IsError {
				t.Fatalf("want an isError result, got %q", text(res))
			}
			for _, m := range tc.mention {
				if !strings.Contains(text(res), m) {
					t.Errorf("error %q does not mention %s", text(res), m)
				}
			}
			if f.calls.all.Load() != before {
				t.Errorf("a bad call was forwarded downstream")
			}
		})
	}
}

// checkTwentyMiB calls big_text for a result of over 20 MiB and checks it
// is stored whole, previewed, and reachable by reference and read_value.
func checkTwentyMiB(t *testing.T, f *fixture) {
	t.Helper()
	res := f.call(t, "big_text", fmt.Sprintf(`{"lines":%d}`, mib20Lines))
	if res.IsError {
		t.Fatalf("big_text: %s", text(res))
	}
	h := handle(t, res)
	v, _ := f.proxy.Values().Get(h)
	want := bigLines(mib20Lines)
	if len(want) < 20<<20 {
		t.Fatalf("test result is only %d bytes", len(want))
	}
	if string(v.JSON()) != want {
		t.Fatalf("stored %d bytes, want the %d sent", len(v.JSON()), len(want))
	}
	if n := len(text(res)); n > 4096 {
		t.Errorf("transcript text of a 20 MiB result is %d bytes", n)
	}
	res = f.call(t, "echo", fmt.Sprintf(`{"value":"$%s.-1"}`, h))
	if got, wantEcho := res.Content[0].(*mcp.TextContent).Text, fmt.Sprintf(`{"value":"line %07d %s"}`, mib20Lines-1, strings.Repeat("x", 85)); got != wantEcho {
		t.Errorf("echo of the last line: got %.200s", got)
	}
	tail := f.call(t, "read_value", fmt.Sprintf(`{"ref":%q,"offset":%d}`, h, len(want)-50))
	if text(tail) != want[len(want)-50:] {
		t.Errorf("last page = %q, want %q", text(tail), want[len(want)-50:])
	}
}

func TestToolListChangesFollowed(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.server.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late result"}}}, nil
		})
	f.server.RemoveTools("count")
	f.waitTools(t, func(names []string) bool {
		return slices.Contains(names, "late") && !slices.Contains(names, "count")
	})
	if res := f.call(t, "late", `{}`); res.IsError || !strings.HasPrefix(text(res), "late result") {
		t.Errorf("late: %q", text(res))
	}
}

// waitTools waits for a tools/list_changed notification after which the
// upstream tool names satisfy ok.
func (f *fixture) waitTools(t *testing.T, ok func([]string) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		res, err := f.client.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if ok(names) {
			return
		}
		select {
		case <-f.listed:
		case <-deadline:
			t.Fatalf("tool list not updated; upstream has %v", names)
		}
	}
}

func TestProgressRelayed(t *testing.T) {
	f := newFixture(t, nil, nil)
	params := &mcp.CallToolParams{Name: "progress", Arguments: json.RawMessage(`{}`)}
	params.SetProgressToken("tok-7")
	res, err := f.client.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("progress: %v %v", err, res)
	}
	for i := range 2 {
		select {
		case p := <-f.progress:
			if p.ProgressToken != "tok-7" || p.Progress != float64(i+1) || p.Message != fmt.Sprintf("step %d", i+1) {
				t.Errorf("progress notification %d = %+v", i+1, p)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("progress notification %d not relayed", i+1)
		}
	}
}

func TestDownstreamGone(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.call(t, "list_items", `{"n":3}`)
	f.downstrm.Close()
	waitLog(t, f.log, "disconnected")
	res := f.call(t, "echo", `{"path":"x"}`)
	if !res.IsError || !strings.Contains(text(res), "echo was not called") || !strings.Contains(text(res), "disconnected") {
		t.Errorf("call after the server went away: %q", text(res))
	}
	// What is stored stays readable.
	if res := f.call(t, "read_value", `{"ref":"r1"}`); res.IsError {
		t.Errorf("read_value after the server went away: %q", text(res))
	}
}

func waitLog(t *testing.T, log *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log never said %q; it says %q", want, log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCommandTransport runs the test server as a child process: a result
// of over 20 MiB crosses real pipes (past the SDK's 16 MiB line cap), and
// the server's death is reported once on the log and to every later call.
func TestCommandTransport(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	cmd.Stderr = os.Stderr
	ct := &CommandTransport{Command: cmd}
	f := newFixture(t, ct, nil)
	checkTwentyMiB(t, f)

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, f.log, "exited (signal: killed)")
	res := f.call(t, "echo", `{"path":"x"}`)
	if !res.IsError || !strings.Contains(text(res), "exited (signal: killed)") {
		t.Errorf("call after the server died: %q", text(res))
	}
	if strings.Count(f.log.String(), "\n") != 1 {
		t.Errorf("want one log line, got %q", f.log.String())
	}
}

// TestCommandTransportClose checks that closing the proxy ends the child.
func TestCommandTransportClose(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	ct := &CommandTransport{Command: cmd}
	p, err := Connect(context.Background(), ct, &Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ct.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("child still running after Close")
	}
	if _, err := Connect(context.Background(), ct, nil); err == nil {
		t.Error("a CommandTransport connected twice")
	}
}

// TestCloseWithCallInFlight checks that Close returns promptly while a call
// is stuck downstream, and that the agent gets an isError result for it.
func TestCloseWithCallInFlight(t *testing.T) {
	f := newFixture(t, nil, nil)
	defer close(f.calls.hangRelease)
	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Errorf("hang: protocol error: %v", err)
		}
		got <- res
	}()
	<-f.calls.hangStarted
	closed := make(chan error, 1)
	go func() { closed <- f.proxy.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close still blocked 10s after it was called with a call in flight")
	}
	select {
	case res := <-got:
		if res == nil || !res.IsError || !strings.Contains(text(res), "may have partly run") {
			t.Errorf("the call in flight got %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight was never answered")
	}
}

// TestRunCancelWithCallInFlight checks that Run returns promptly once its
// context is done (what SIGTERM does in the command), even with a call stuck
// in a downstream server that ignores cancellation.
func TestRunCancelWithCallInFlight(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	// The server does not exit while hang runs: Close signals it after this.
	ct := &CommandTransport{Command: cmd, TerminateDuration: 100 * time.Millisecond}
	p, err := Connect(context.Background(), ct, &Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pst, cto := pipeTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, pst) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), cto, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: json.RawMessage(`{}`)})
	waitLog(t, stderr, hangStartedLine) // the call is in flight
	cancel()
	select {
	case <-ran:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("Run still blocked 15s after its context was cancelled")
	}
	select {
	case <-ct.exited:
	case <-time.After(10 * time.Second):
		t.Error("the downstream server still runs after Run returned")
	}
}

// TestDownstreamDiesDuringCall checks that a call in flight when the
// downstream server dies gets an isError result saying so, not a bare EOF
// nor a claim that the tool was not called.
func TestDownstreamDiesDuringCall(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	f := newFixture(t, &CommandTransport{Command: cmd}, nil)
	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Errorf("hang: protocol error: %v", err)
		}
		got <- res
	}()
	waitLog(t, stderr, hangStartedLine)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-got:
		msg := text(res)
		if res == nil || !res.IsError || !strings.Contains(msg, "exited (signal: killed) during the call of hang") ||
			!strings.Contains(msg, "may have partly run") || strings.Contains(msg, "not called") {
			t.Errorf("the call in flight got %q", msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call in flight was never answered")
	}
}

// TestProgressTokenReused checks that a reused progress token still routes
// progress: a second call with the token of a first, from the same session,
// gets its progress even though the first call's token expires while the
// second call runs. The test expires it, through the proxy's clock seam,
// instead of waiting out progressGrace.
func TestProgressTokenReused(t *testing.T) {
	expire := make(chan func(), 4) // the release of each call's token, in call order
	f := newFixture(t, nil, &Options{seams: &seams{afterFunc: func(d time.Duration, release func()) {
		if d != progressGrace {
			t.Errorf("a token is released after %v, want progressGrace (%v)", d, progressGrace)
		}
		expire <- release
	}}})
	var got []string
	receive := func(n int) {
		t.Helper()
		for range n {
			select {
			case p := <-f.progress:
				if p.ProgressToken != "tok" {
					t.Errorf("progress %+v has another token", p)
				}
				got = append(got, p.Message)
			case <-time.After(10 * time.Second):
				t.Fatalf("relayed only %q", got)
			}
		}
	}
	call := func(tool string) error {
		params := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(`{}`)}
		params.SetProgressToken("tok")
		_, err := f.client.CallTool(context.Background(), params)
		return err
	}

	if err := call("progress"); err != nil {
		t.Fatal(err)
	}
	receive(2)
	late := make(chan error, 1)
	go func() { late <- call("late_progress") }()
	select {
	case <-f.calls.lateStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("late_progress never started")
	}
	select {
	case release := <-expire:
		release() // the first call's token expires
	default:
		t.Fatal("the first call's token was never released")
	}
	close(f.calls.lateRelease)
	receive(1)
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"step 1", "step 2", "late"}, got); diff != "" {
		t.Errorf("progress relayed (-want +got):\n%s", diff)
	}
}

// TestStructuredWithContent checks results that carry both structured
// content and content blocks that are not a copy of it: the preview is
// decided on everything that would be sent, and the content blocks are
// stored too, under a handle named in _meta.
func TestStructuredWithContent(t *testing.T) {
	big := strings.Repeat("y", 1<<20)
	for _, tc := range []struct {
		name, args   string
		wantPreview  bool
		wantStruct   string // the value stored under the handle
		wantContent  string // the value stored under the content handle; "" for none
		wantMaxBytes int    // bound on the transcript text
	}{
		{"large text, small structured", `{"text":"y","repeat":1048576,"structured":{"ok":true}}`, true, `{"ok":true}`, big, 8 << 10},
		{"small text, large structured", fmt.Sprintf(`{"text":"see structuredContent","structured":{"big":%q}}`, big), true, fmt.Sprintf(`{"big":%q}`, big), "see structuredContent", 8 << 10},
		{"small both", `{"text":"see structuredContent","structured":{"ok":true}}`, false, `{"ok":true}`, "see structuredContent", 1 << 10},
		{"text mirrors structured", `{"text":"{\"ok\": true}","structured":{"ok":true}}`, false, `{"ok":true}`, "", 1 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil, nil)
			res := f.call(t, "mixed", tc.args)
			if res.IsError {
				t.Fatalf("mixed: %.300s", text(res))
			}
			if n := len(text(res)); n > tc.wantMaxBytes {
				t.Errorf("transcript text is %d bytes, want at most %d", n, tc.wantMaxBytes)
			}
			if got := res.StructuredContent == nil; got != tc.wantPreview {
				t.Errorf("structuredContent dropped = %v, want %v", got, tc.wantPreview)
			}
			v, _ := f.proxy.Values().Get(handle(t, res))
			if string(v.JSON()) != tc.wantStruct {
				t.Errorf("stored %.100s, want %.100s", v.JSON(), tc.wantStruct)
			}
			ch, _ := res.Meta[MetaContentHandle].(string)
			if tc.wantContent == "" {
				if ch != "" {
					t.Errorf("content stored apart as %s", ch)
				}
				return
			}
			cv, ok := f.proxy.Values().Get(ch)
			if !ok {
				t.Fatalf("content blocks not stored: _meta %v", res.Meta)
			}
			if want, _ := json.Marshal(tc.wantContent); string(cv.JSON()) != string(want) {
				got := string(cv.JSON())
				t.Errorf("content stored as %.100s, want %.100s", got, want)
			}
			if !strings.Contains(text(res), ch) {
				t.Errorf("transcript does not name %s: %.300s", ch, text(res))
			}
		})
	}
}

// TestStructuredNull checks that "structuredContent": null counts as none.
func TestStructuredNull(t *testing.T) {
	f := newFixture(t, nil, nil)
	res := f.call(t, "mixed", `{"text":"the text","structured":null}`)
	v, _ := f.proxy.Values().Get(handle(t, res))
	if string(v.JSON()) != "the text" && string(v.JSON()) != `"the text"` {
		t.Errorf("stored %s, want the text", v.JSON())
	}
	if res.StructuredContent != nil || !strings.HasPrefix(text(res), "the text\n") {
		t.Errorf("result passed on: structured %v, text %q", res.StructuredContent, text(res))
	}
}

// TestImagePassedOn checks that an image block reaches the agent as an
// image, whatever its size, and is stored with the rest of the result.
func TestImagePassedOn(t *testing.T) {
	f := newFixture(t, nil, nil)
	res := f.call(t, "image", `{}`)
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || !bytes.Equal(img.Data, testImage) || img.MIMEType != "image/png" {
		t.Fatalf("image not passed on: %d blocks, text %.200q", len(res.Content), text(res))
	}
	if !strings.HasPrefix(text(res), "a picture") {
		t.Errorf("text = %.200q", text(res))
	}
	v, _ := f.proxy.Values().Get(handle(t, res))
	var stored []struct {
		Type string `json:"type"`
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(v.JSON(), &stored); err != nil || len(stored) != 2 || stored[1].Type != "image" || !bytes.Equal(stored[1].Data, testImage) {
		t.Errorf("stored %.200s (%v)", v.JSON(), err)
	}
}

// TestLargeArgument checks that an upstream message over the SDK's 16 MiB
// line cap reaches the proxy and is passed on whole: a 17 MiB argument. It
// crosses once: the tool, which takes the same arguments as echo, answers
// with their length rather than with them (TestCommandTransport stores a
// result of over 20 MiB).
func TestLargeArgument(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	received := make(chan json.RawMessage, 1)
	f.server.AddTool(&mcp.Tool{
		Name:        "measure",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"value":{}},"additionalProperties":false}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		received <- req.Params.Arguments
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"bytes":%d}`, len(req.Params.Arguments))}}}, nil
	})
	f.waitTools(t, func(names []string) bool { return slices.Contains(names, "measure") })

	args := `{"path":"` + strings.Repeat("z", 17<<20) + `"}`
	res := f.call(t, "measure", args)
	if res.IsError {
		t.Fatalf("measure: %.300s", text(res))
	}
	if got := <-received; string(got) != args {
		t.Errorf("the server received %d bytes of arguments, want the %d sent", len(got), len(args))
	}
	v, _ := f.proxy.Values().Get(handle(t, res))
	if want := fmt.Sprintf(`{"bytes":%d}`, len(args)); string(v.JSON()) != want {
		t.Errorf("stored %.100s, want the server's answer %s", v.JSON(), want)
	}
}

// TestToolListRetried checks that a change is not lost when the first
// re-listing after a tools/list_changed fails: the proxy retries.
func TestToolListRetried(t *testing.T) {
	f := newFixture(t, nil, &Options{seams: &seams{listBackoff: time.Millisecond}})
	var failing atomic.Int64 // tools/list requests left to fail
	f.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && failing.Add(-1) >= 0 {
				return nil, errors.New("tools/list failing for the test")
			}
			return next(ctx, method, req)
		}
	})
	failing.Store(2)
	f.server.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late result"}}}, nil
		})
	f.waitTools(t, func(names []string) bool { return slices.Contains(names, "late") })
	if n := failing.Load(); n >= 0 {
		t.Errorf("%d failing tools/list left: the change was listed without going through the failures", n+1)
	}
	if strings.Contains(f.log.String(), "gave up") {
		t.Errorf("log: %s", f.log.String())
	}
}
