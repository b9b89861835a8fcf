package mcpgo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentvalues/values/contrib/mcpgo"
	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// usersOutput is what list_users returns: 300 rows and their ids, about
// 13 KiB of JSON text, more than the 8 KiB threshold.
var usersOutput = func() string {
	var b strings.Builder
	b.WriteString(`{"rows":[`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"email":"user%d@example.com"}`, i, i)
	}
	b.WriteString(`],"ids":[`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString("]}")
	return b.String()
}()

// sendArgs is what send_email's handler received in one call.
type sendArgs struct {
	To  string `json:"to"`
	IDs []int  `json:"ids"`
}

// tools records what the tool handlers of the test server were given.
type tools struct {
	mu   sync.Mutex
	sent []sendArgs
}

func (tl *tools) calls() []sendArgs {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]sendArgs(nil), tl.sent...)
}

// newServer returns an mcp-go server with av installed and the test's
// tools: list_users (a large result), send_email (a string and an array
// of integers), report (small structured content) and big_report (large
// structured content).
func newServer(av *mcpgo.Values, extra ...server.ServerOption) (*server.MCPServer, *tools) {
	s := server.NewMCPServer("test", "1.0.0", append([]server.ServerOption{av.ServerOption()}, extra...)...)
	tl := &tools{}
	s.AddTool(mcp.NewTool("list_users", mcp.WithDescription("List every user.")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(usersOutput), nil
		})
	s.AddTool(mcp.NewTool("send_email",
		mcp.WithDescription("Send an email."),
		mcp.WithString("to", mcp.Required()),
		mcp.WithArray("ids", mcp.WithNumberItems()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a sendArgs
		if err := req.BindArguments(&a); err != nil {
			return nil, err
		}
		if got := req.GetString("to", ""); got != a.To { // the decoded map agrees with the raw bytes
			return nil, fmt.Errorf("GetString says %q, BindArguments %q", got, a.To)
		}
		tl.mu.Lock()
		tl.sent = append(tl.sent, a)
		tl.mu.Unlock()
		return mcp.NewToolResultText(fmt.Sprintf("sent to %s (%d ids)", a.To, len(a.IDs))), nil
	})
	s.AddTool(mcp.NewTool("report", mcp.WithOutputSchema[report]()),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructuredOnly(report{Count: 2, Names: []string{"a", "b"}}), nil
		})
	s.AddTool(mcp.NewTool("big_report"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := report{Count: 2000}
			for i := range r.Count {
				r.Names = append(r.Names, fmt.Sprintf("name-%04d", i))
			}
			return mcp.NewToolResultStructuredOnly(r), nil
		})
	return s, tl
}

type report struct {
	Count int      `json:"count"`
	Names []string `json:"names"`
}

// connect returns mcp-go's in-process client of s, initialized; it is
// closed when the test ends.
func connect(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "scripted-model", Version: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// send is the scripted model's tool call going through the mcp-go client,
// as an agent host sends it: the tool and its arguments as the model wrote
// them. It returns what the client hands back.
func send(t *testing.T, cl *client.Client, name, args string) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = json.RawMessage(args)
	res, err := cl.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

// text is the text of a result's text blocks, joined by newlines: what a
// host puts in the model's transcript.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// metaHandle is the handle a result's _meta names, or "".
func metaHandle(res *mcp.CallToolResult) string {
	if res.Meta == nil {
		return ""
	}
	h, _ := res.Meta.AdditionalFields[mcpgo.MetaHandle].(string)
	return h
}

// previewHandle is the scripted model reading a transcript entry: the
// handle a preview names ("r1 = …"), or "".
var previewHandle = regexp.MustCompile(`^(r[1-9][0-9]*) = `)

// nextPage is the scripted model reading a read_value page: its
// continuation line, with the bytes shown and the next call's arguments.
var nextPage = regexp.MustCompile(`\[shown: bytes (\d+)-(\d+) of \d+; next page: read_value (\{.*\})\]$`)

// TestModelLoop drives a real mcp-go server through mcp-go's in-process
// client with a scripted model: each turn is written from what the client
// handed back before, and each assertion is on what the client returns
// (the model's view) or what the tool handler received.
func TestModelLoop(t *testing.T) {
	av := mcpgo.New()
	s, tl := newServer(av)
	cl := connect(t, s)

	// Turn 1: a large result reaches the model as a preview.
	res := send(t, cl, "list_users", `{}`)
	got := text(res)
	m := previewHandle.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("turn 1: the model got no preview but %d bytes:\n%.300s…", len(got), got)
	}
	r1 := m[1]
	if r1 != "r1" || metaHandle(res) != r1 {
		t.Errorf("turn 1: handle %q, _meta %q; want r1 for both", r1, metaHandle(res))
	}
	for _, want := range []string{"rows: array(len=300", `"$r1.<field>"`, `read_value {"ref":"r1"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("turn 1: the preview lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "user150@") || len(got) > 4<<10 || res.IsError || res.StructuredContent != nil {
		t.Errorf("turn 1: the model got %d bytes (isError %v, structured %v), want a bounded preview without the middle rows:\n%s",
			len(got), res.IsError, res.StructuredContent != nil, got)
	}

	// Turn 2: the model passes parts of r1 by reference; the tool gets the values.
	res = send(t, cl, "send_email", `{"to":"$`+r1+`.rows.57.email","ids":"$`+r1+`.ids"}`)
	wantIDs := make([]int, 300)
	for i := range wantIDs {
		wantIDs[i] = i
	}
	if diff := cmp.Diff([]sendArgs{{To: "user57@example.com", IDs: wantIDs}}, tl.calls()); diff != "" {
		t.Fatalf("turn 2: the tool received (-want +got):\n%s", diff)
	}
	if got := text(res); res.IsError || got != "sent to user57@example.com (300 ids)\n"+`[stored as r2 (text, 36 B, 1 line): pass "$r2" as a tool argument to reuse it]` {
		t.Errorf("turn 2: the model got (isError %v):\n%s", res.IsError, got)
	}

	// Turn 3: references that name nothing, or the wrong kind of value,
	// come back as tool errors naming them; the tool is not called.
	for _, bad := range []struct{ args, want string }{
		{`{"to":"$r9.email"}`, `"$r9.email" is not a stored value`},
		{`{"to":"$r1.rows.999.email"}`, `$r1.rows.999.email`},
		{`{"to":"$r1..rows"}`, `$r1..rows`},
		{`{"to":"$r1.rows"}`, `/to: want string, got array (from $r1.rows)`},
	} {
		res := send(t, cl, "send_email", bad.args)
		got := text(res)
		if !res.IsError || !strings.HasPrefix(got, "send_email was not called: ") || !strings.Contains(got, bad.want) {
			t.Errorf("turn 3 %s: the model got (isError %v):\n%s\nwant an error naming %s", bad.args, res.IsError, got, bad.want)
		}
	}
	if n := len(tl.calls()); n != 1 {
		t.Errorf("turn 3: the tool was called %d times in all, want 1", n)
	}

	// Turn 4: read_value pages r1; following each page's continuation line
	// reassembles the value byte for byte.
	var pages []string
	var whole strings.Builder
	args := `{"ref":"` + r1 + `","limit":2048}`
	for len(pages) < 100 {
		res := send(t, cl, "read_value", args)
		page := text(res)
		if res.IsError {
			t.Fatalf("turn 4: read_value %s: %s", args, page)
		}
		pages = append(pages, page)
		if len(page) > 2048 {
			t.Errorf("turn 4: a page of %d bytes, over its limit", len(page))
		}
		m := nextPage.FindStringSubmatch(page)
		if m == nil {
			whole.WriteString(page)
			break
		}
		from, _ := strconv.Atoi(m[1])
		to, _ := strconv.Atoi(m[2])
		whole.WriteString(page[:to-from+1])
		var next map[string]any
		if err := json.Unmarshal([]byte(m[3]), &next); err != nil {
			t.Fatalf("turn 4: the continuation line names %s: %v", m[3], err)
		}
		next["limit"] = 2048
		b, _ := json.Marshal(next)
		args = string(b)
	}
	if len(pages) < 2 || whole.String() != usersOutput {
		t.Errorf("turn 4: %d pages reassemble %d bytes, want at least 2 pages and the %d bytes of the value", len(pages), whole.Len(), len(usersOutput))
	}

	// Turn 5: query_value computes over r1; its result is a handle too.
	res = send(t, cl, "query_value", `{"ref":"r1","jq":"[.rows[] | select(.id % 100 == 0) | .email]"}`)
	if got, h := text(res), metaHandle(res); res.IsError || h == "" || !strings.Contains(got, `"user200@example.com"`) {
		t.Fatalf("turn 5: the model got (isError %v, handle %q):\n%s", res.IsError, h, got)
	}
	q := metaHandle(res)
	send(t, cl, "send_email", `{"to":"$`+q+`.-1"}`)
	if sent := tl.calls(); sent[len(sent)-1].To != "user200@example.com" {
		t.Errorf("turn 5: the tool received %q, want user200@example.com", sent[len(sent)-1].To)
	}
}

// TestToolsList checks what tools/list hands the model: the server's tools
// with references admitted, and read_value and query_value.
func TestToolsList(t *testing.T) {
	s, _ := newServer(mcpgo.New())
	cl := connect(t, s)
	list, err := cl.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]mcp.Tool{}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
	}
	if diff := cmp.Diff([]string{"big_report", "list_users", "query_value", "read_value", "report", "send_email"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	send := byName["send_email"]
	if !strings.HasPrefix(send.Description, "Send an email.\n\n") || !strings.Contains(send.Description, `"$r1.items.0.path"`) {
		t.Errorf("send_email description:\n%s", send.Description)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	raw, err := json.Marshal(send.InputSchema) // as the client decoded it
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("send_email input schema %s: %v", raw, err)
	}
	if got := string(schema.Properties["to"]); got != `{"type":"string"}` {
		t.Errorf("to: %s, want the string schema as it was (it admits references already)", got)
	}
	if got := string(schema.Properties["ids"]); !strings.Contains(got, `"anyOf"`) || !strings.Contains(got, `"pattern"`) || !strings.Contains(got, `"type":"array"`) {
		t.Errorf("ids: %s, want the array schema or a reference string", got)
	}
	if diff := cmp.Diff([]string{"to"}, schema.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	if r := byName["report"]; r.RawOutputSchema != nil || r.OutputSchema.Type != "" {
		t.Errorf("report is advertised with an output schema, which a preview cannot conform to")
	}
	if rv := byName["read_value"]; rv.Description == "" || strings.Contains(rv.Description, "Via agentvalues") || rv.InputSchema.Properties["ref"] == nil {
		t.Errorf("read_value as advertised: %+v", rv)
	}
}

// TestStructured checks results with structured content: small ones come
// whole with the handle, large ones as a preview without structured
// content, and a tool's output schema still holds under mcp-go's output
// validation.
func TestStructured(t *testing.T) {
	s, _ := newServer(mcpgo.New(), server.WithOutputSchemaValidation())
	cl := connect(t, s)

	res := send(t, cl, "report", `{}`)
	if res.IsError || metaHandle(res) != "r1" {
		t.Fatalf("report: isError %v, handle %q:\n%s", res.IsError, metaHandle(res), text(res))
	}
	if got, want := text(res), `{"count":2,"names":["a","b"]}`+"\n"+`[stored as r1 (object, 2 keys, 29 B): pass "$r1" or "$r1.<field>" as a tool argument to reuse it]`; got != want {
		t.Errorf("report text:\n%s\nwant:\n%s", got, want)
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"count":2,"names":["a","b"]}` {
		t.Errorf("report structured content %s, want it as the tool returned it (it has an output schema)", b)
	}

	res = send(t, cl, "big_report", `{}`)
	got := text(res)
	if res.IsError || res.StructuredContent != nil || !strings.HasPrefix(got, "r2 = json(") || !strings.Contains(got, "names: array(len=2000") || strings.Contains(got, "name-1000") {
		t.Errorf("big_report: isError %v, structured %v:\n%s", res.IsError, res.StructuredContent != nil, got)
	}

	// Without an output schema, a small result's structured content names
	// its handle first.
	s2 := server.NewMCPServer("t", "1", mcpgo.New().ServerOption())
	s2.AddTool(mcp.NewTool("small"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructuredOnly(map[string]int{"n": 1}), nil
	})
	res = send(t, connect(t, s2), "small", `{}`)
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"agentvalues/handle":"r1","n":1}` {
		t.Errorf("small structured content %s", b)
	}
}

// TestSessions checks one store per client session: handles of one
// session are unknown in another and numbered past each other, calls run
// in parallel, and a closed session's store is dropped.
func TestSessions(t *testing.T) {
	av := mcpgo.New()
	s, tl := newServer(av)
	a, b := connect(t, s), connect(t, s)

	if h := metaHandle(send(t, a, "list_users", `{}`)); h != "r1" {
		t.Fatalf("a's first handle %q, want r1", h)
	}
	res := send(t, b, "list_users", `{}`)
	if h := metaHandle(res); h != "r2" || !strings.HasPrefix(text(res), "r2 = ") {
		t.Fatalf("b's first handle %q, want r2 (past a's):\n%s", h, text(res))
	}
	if res := send(t, b, "read_value", `{"ref":"r1"}`); !res.IsError || !strings.Contains(text(res), "r1") {
		t.Errorf("b read a's r1: isError %v:\n%s", res.IsError, text(res))
	}
	if res := send(t, a, "send_email", `{"to":"$r2.rows.0.email"}`); !res.IsError || !strings.Contains(text(res), "$r2.rows.0.email") {
		t.Errorf("a passed b's r2: isError %v:\n%s", res.IsError, text(res))
	}

	// Parallel calls in both sessions, each passing its own session's value.
	var wg sync.WaitGroup
	for i := range 16 {
		cl, h := a, "r1"
		if i%2 == 1 {
			cl, h = b, "r2"
		}
		wg.Go(func() {
			res := send(t, cl, "send_email", fmt.Sprintf(`{"to":"$%s.rows.%d.email","ids":"$%s.ids"}`, h, i, h))
			if want := fmt.Sprintf("sent to user%d@example.com (300 ids)", i); !strings.HasPrefix(text(res), want) {
				t.Errorf("parallel call %d: %s, want %s", i, text(res), want)
			}
		})
	}
	wg.Wait()
	if n := len(tl.calls()); n != 16 {
		t.Errorf("the tool was called %d times, want 16", n)
	}

	// Closing a drops its store; a new session starts past every handle
	// handed out, by a (r1 … r9) and b (r2 … r10).
	if n := mcpgo.Sessions(av); n != 2 {
		t.Errorf("%d stores before closing a, want 2", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := mcpgo.Sessions(av); n != 1 {
		t.Errorf("%d stores after closing a, want 1", n)
	}
	c := connect(t, s)
	if h := metaHandle(send(t, c, "list_users", `{}`)); h != "r11" {
		t.Errorf("a new session's first handle %q, want r11", h)
	}
}

// TestInputSchemaValidationRunsFirst shows what the package documentation
// says mcp-go cannot express: WithInputSchemaValidation checks the raw
// arguments before any middleware, so a reference where the schema wants
// an array is refused by mcp-go, while one in a string field still works.
// If mcp-go ever validates after middlewares, this test fails and the
// documentation must change.
func TestInputSchemaValidationRunsFirst(t *testing.T) {
	s, tl := newServer(mcpgo.New(), server.WithInputSchemaValidation())
	cl := connect(t, s)
	send(t, cl, "list_users", `{}`)

	res := send(t, cl, "send_email", `{"to":"$r1.rows.3.email","ids":"$r1.ids"}`)
	if !res.IsError || strings.Contains(text(res), "was not called") || len(tl.calls()) != 0 {
		t.Errorf("mcp-go's validation did not refuse the array reference first: isError %v, %d calls:\n%s", res.IsError, len(tl.calls()), text(res))
	}
	res = send(t, cl, "send_email", `{"to":"$r1.rows.3.email"}`)
	if res.IsError || len(tl.calls()) != 1 || tl.calls()[0].To != "user3@example.com" {
		t.Errorf("a reference in a string field under mcp-go's validation: isError %v, calls %v:\n%s", res.IsError, tl.calls(), text(res))
	}
}

// TestThreshold checks that WithThreshold moves the line between a result
// shown whole and a preview.
func TestThreshold(t *testing.T) {
	s, _ := newServer(mcpgo.New(mcpgo.WithThreshold(1 << 20)))
	if got := text(send(t, connect(t, s), "list_users", `{}`)); !strings.HasPrefix(got, usersOutput+"\n[stored as r1 (") {
		t.Errorf("under a 1 MiB threshold list_users came back as:\n%.300s…", got)
	}
	s, _ = newServer(mcpgo.New(mcpgo.WithThreshold(-1)))
	cl := connect(t, s)
	send(t, cl, "list_users", `{}`)
	got := text(send(t, cl, "send_email", `{"to":"$r1.rows.0.email"}`))
	if !strings.HasPrefix(got, `r2 = text(`) || !strings.Contains(got, "sent to user0@example.com") {
		t.Errorf("with a negative threshold a small result came back as:\n%s", got)
	}
}
