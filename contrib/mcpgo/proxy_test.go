package mcpgo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/contrib/mcpgo"
	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
)

// sameResults are tool results that a server built with mcp-go returns,
// by name: each must be stored the same by the adapter in that server and
// by agentvalues proxy in front of it. They differ from their text only in
// what a decoding would not see (member order, 1.0 for 1, a key twice),
// mirror their text, carry media beside it, hold bytes that are not UTF-8,
// and come whole or, past the threshold, previewed.
func sameResults() map[string]*mcp.CallToolResult {
	raw := func(text, structured string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}, RawStructuredContent: json.RawMessage(structured)}
	}
	var rows strings.Builder
	rows.WriteString(`{"rows":[`)
	for i := range 400 {
		if i > 0 {
			rows.WriteByte(',')
		}
		fmt.Fprintf(&rows, `{"id":%d,"name":"item-%d <&> é"}`, i, i)
	}
	rows.WriteString(`]}`)
	big := rows.String()
	reordered := strings.Replace(big, `{"rows":[`, `{"n":1,"rows":[`, 1)
	log := strings.Repeat("2026-12-03 INFO a line of the log, with <tags> & \"quotes\" ✓\n", 300)
	image := mcp.NewImageContent("iVBORw0KGgo=", "image/png")
	audio := mcp.NewAudioContent("UklGRg==", "audio/wav")
	return map[string]*mcp.CallToolResult{
		"text":                     mcp.NewToolResultText("hello <world> & ✓"),
		"json text":                mcp.NewToolResultText(`{"ok":true,"n":[1,2.50,3]}`),
		"member order":             raw(`{"a":1,"b":2}`, `{"b":2,"a":1}`),
		"member order, same":       raw(`{"b":2,"a":1}`, `{"b":2,"a":1}`),
		"1.0":                      raw(`{"a":1}`, `{"a":1.0}`),
		"duplicate keys":           raw(`{"a":2}`, `{"a":1,"a":2}`),
		"duplicate keys, same":     raw(`{"a":1,"a":2}`, `{"a":1,"a":2}`),
		"spaced, same":             raw(`{ "a" : [1, 2] }`, `{"a":[1,2]}`),
		"structured as a map":      mcp.NewToolResultStructured(map[string]any{"b": 2, "a": 1}, `{"b":2,"a":1}`),
		"mirror":                   raw("plain", `{"text":"plain"}`),
		"mirror, not quite":        raw("plain", `{"text":"plain","n":1}`),
		"structured only":          mcp.NewToolResultStructuredOnly(map[string]any{"rows": []int{1, 2}}),
		"media":                    {Content: []mcp.Content{mcp.NewTextContent("a picture"), image, audio}},
		"media and structured":     {Content: []mcp.Content{image, mcp.NewTextContent(`{"a":1}`)}, RawStructuredContent: json.RawMessage(`{"a":1}`)},
		"resource link":            {Content: []mcp.Content{mcp.NewResourceLink("file:///x", "x", "a file", "text/plain")}},
		"invalid UTF-8":            raw("a\xffb \xe2\x82 c", `{"s":"a`+"\xff"+`b","t":"`+"\xed\xa0\x80"+`"}`),
		"invalid UTF-8, mirror":    raw("a\xffb", `{"text":"a`+"\xff"+`b"}`),
		"error":                    {Content: []mcp.Content{mcp.NewTextContent("it failed")}, IsError: true},
		"large text":               mcp.NewToolResultText(log),
		"large json text":          mcp.NewToolResultText(big),
		"large, same":              raw(big, big),
		"large, member order":      raw(big, reordered),
		"large mirror":             raw(log, `{"content":`+mustJSON(log)+`}`),
		"large, two blocks":        {Content: []mcp.Content{mcp.NewTextContent(log), mcp.NewTextContent(big)}},
		"large media":              {Content: []mcp.Content{mcp.NewTextContent(log), image}},
		"large invalid UTF-8":      mcp.NewToolResultText(strings.Repeat("a\xffb \xc0\xaf ", 2000)),
		"large structured, media":  {Content: []mcp.Content{audio}, RawStructuredContent: json.RawMessage(big)},
		"large structured, spaced": raw(strings.ReplaceAll(big, ",", ", "), big),
	}
}

func mustJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sameResultsEnv marks the child that serves sameResults with mcp-go over
// its standard input and output, without the adapter.
const sameResultsEnv = "AGENTVALUES_MCPGO_SAME_RESULTS"

// resultTool is the tool that returns sameResults()[case].
var resultTool = mcp.NewTool("result", mcp.WithString("case", mcp.Required()))

func handleResult(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, ok := sameResults()[req.GetString("case", "")]
	if !ok {
		return nil, fmt.Errorf("no case %q", req.GetString("case", ""))
	}
	return res, nil
}

// TestProxyAndAdapterStoreAlike feeds the same results to agentvalues
// proxy, in front of a plain mcp-go server run as a command, and to the
// adapter in the same server, and requires the same stored values: the
// adapter follows the proxy's rule by construction. The proxy is called on
// each of its routes: through the SDK (a client of its server), and on the
// raw call route (a client over a LineTransport, as agentvalues proxy
// serves standard input); results past the threshold take the raw result
// route on both.
func TestProxyAndAdapterStoreAlike(t *testing.T) {
	if os.Getenv(sameResultsEnv) == "1" {
		s := server.NewMCPServer("plain", "1.0.0")
		s.AddTool(resultTool, handleResult)
		if err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout); err != nil && err != io.EOF {
			fmt.Fprintln(os.Stderr, "mcp-go server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The adapter, in the server.
	av := mcpgo.New()
	s := server.NewMCPServer("adapted", "1.0.0", av.ServerOption())
	s.AddTool(resultTool, handleResult)
	adapted := connect(t, s)

	// The proxy, in front of the plain server.
	p, err := mcpproxy.Connect(ctx, &mcpproxy.CommandTransport{
		Command:           testkit.ChildCommand("TestProxyAndAdapterStoreAlike", sameResultsEnv+"=1"),
		TerminateDuration: time.Second,
	}, &mcpproxy.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, ct := sdk.NewInMemoryTransports()
	if _, err := p.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	viaSDK, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer viaSDK.Close()
	viaLines := newLineClient(t, func(lt *mcpproxy.LineTransport) { p.Run(ctx, lt) })

	for _, name := range slices.Sorted(maps.Keys(sameResults())) {
		args := map[string]any{"case": name}
		res := send(t, adapted, "result", argsJSON(args))
		want := storedBy(t, adapterStore(t, av, res), res.Meta.AdditionalFields[mcpgo.MetaHandle], res.Meta.AdditionalFields[mcpgo.MetaContentHandle])

		callCtx, cancelCall := context.WithTimeout(ctx, time.Minute) // a bound on a hang, not a timing
		sres, err := viaSDK.CallTool(callCtx, &sdk.CallToolParams{Name: "result", Arguments: args})
		cancelCall()
		if err != nil {
			t.Fatalf("%s through the proxy: %v", name, err)
		}
		if diff := cmp.Diff(want, storedBy(t, p.Values(), sres.Meta[mcpproxy.MetaHandle], sres.Meta[mcpproxy.MetaContentHandle])); diff != "" {
			t.Errorf("%s: the proxy (SDK route) stores it otherwise than the adapter (-adapter +proxy):\n%s", name, diff)
		}

		meta := viaLines.call(t, argsJSON(args))
		if diff := cmp.Diff(want, storedBy(t, p.Values(), meta[mcpproxy.MetaHandle], meta[mcpproxy.MetaContentHandle])); diff != "" {
			t.Errorf("%s: the proxy (raw call route) stores it otherwise than the adapter (-adapter +proxy):\n%s", name, diff)
		}
	}
}

func argsJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// adapterStore returns the store of the adapter that holds the handle res
// names.
func adapterStore(t *testing.T, av *mcpgo.Values, res *mcp.CallToolResult) *values.SessionValues {
	t.Helper()
	h, _ := res.Meta.AdditionalFields[mcpgo.MetaHandle].(string)
	for _, vals := range mcpgo.Stores(av) {
		if _, ok := vals.Get(h); ok {
			return vals
		}
	}
	t.Fatalf("no store of the adapter holds %q (result %s)", h, text(res))
	return nil
}

// storedBy returns what vals holds under the handle h and the content
// handle ch (nil when there is none): kind and bytes.
func storedBy(t *testing.T, vals *values.SessionValues, h, ch any) []string {
	t.Helper()
	var out []string
	for i, x := range []any{h, ch} {
		s, _ := x.(string)
		if s == "" {
			if i == 0 {
				t.Fatalf("no handle in the result's _meta")
			}
			continue
		}
		v, ok := vals.Get(s)
		if !ok {
			t.Fatalf("%s is not stored", s)
		}
		out = append(out, v.Kind().String()+": "+string(v.Bytes()))
	}
	return out
}

// A lineClient is an agent that speaks to a proxy's Run in lines.
type lineClient struct {
	w     io.WriteCloser
	lines chan string
	id    int
}

// newLineClient returns a client of run, which serves the transport it is
// given until the client's side ends, at the end of the test; the client
// has initialized the session.
func newLineClient(t *testing.T, run func(*mcpproxy.LineTransport)) *lineClient {
	ur, cw := io.Pipe()
	cr, uw := io.Pipe()
	c := &lineClient{w: cw, lines: make(chan string, 16)}
	go func() {
		in := bufio.NewReader(cr)
		for {
			l, err := in.ReadString('\n')
			if err != nil {
				close(c.lines)
				return
			}
			c.lines <- l
		}
	}()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		defer uw.Close()
		run(&mcpproxy.LineTransport{Reader: ur, Writer: uw})
	}()
	t.Cleanup(func() { cw.Close(); <-ran })
	c.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}}`)
	c.next(t)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *lineClient) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (c *lineClient) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatal("the proxy's output ended")
		}
		return l
	case <-time.After(time.Minute): // a bound on a hang, not a timing
		t.Fatal("no line from the proxy within a minute")
		return ""
	}
}

// call calls the tool "result" with args and returns the result's _meta.
func (c *lineClient) call(t *testing.T, args string) map[string]any {
	t.Helper()
	c.id++
	c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"result","arguments":%s}}`, c.id, args))
	var resp struct {
		ID     int `json:"id"`
		Result struct {
			Meta map[string]any `json:"_meta"`
		} `json:"result"`
		Error any `json:"error"`
	}
	l := c.next(t)
	if err := json.Unmarshal([]byte(l), &resp); err != nil || resp.ID != c.id || resp.Error != nil {
		t.Fatalf("the response to call %d: %s (%v)", c.id, l, err)
	}
	return resp.Result.Meta
}
