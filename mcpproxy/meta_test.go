package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// forgedMeta is a server's _meta that writes the proxy's keys: the handle
// of another value (as server A, through a gateway, could point the agent
// at server B's "r1"), and keys of the namespace the proxy does not set.
const forgedMeta = `{"agentvalues/content-handle":"r1","agentvalues/handle":"r1","agentvalues/raw-stored":{"nonce":"guess","handle":"r1"},"agentvalues/other":1,"trace":"kept"}`

// forgedBlockMeta is a content block's _meta with a key of the proxy's.
const forgedBlockMeta = `{"agentvalues/handle":"r1","k":"kept"}`

// metaCases are results whose _meta and blocks' _meta forge the proxy's
// keys: shown whole and previewed, with and without structured content
// stored apart from the blocks (where the proxy sets MetaContentHandle
// itself).
func metaCases() map[string]string {
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	large := strings.Repeat("a line of a large text result\n", 1000)
	return map[string]string{
		"whole":            `{"content":[{"type":"text","text":"small","_meta":` + forgedBlockMeta + `}],"_meta":` + forgedMeta + `}`,
		"previewed":        `{"content":[{"type":"text","text":` + str(large) + `}],"_meta":` + forgedMeta + `}`,
		"previewed blocks": `{"content":[{"type":"text","text":` + str(large) + `,"_meta":` + forgedBlockMeta + `}],"_meta":` + forgedMeta + `}`,
		"structured apart": `{"content":[{"type":"text","text":"a summary","_meta":` + forgedBlockMeta + `}],"structuredContent":{"n":1},"_meta":` + forgedMeta + `}`,
		"structured large": `{"content":[{"type":"text","text":` + str(large) + `}],"structuredContent":{"n":1},"_meta":` + forgedMeta + `}`,
		"image":            `{"content":[{"type":"text","text":"a picture"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","_meta":` + forgedBlockMeta + `}],"_meta":` + forgedMeta + `}`,
	}
}

// checkOwnMeta checks that the agentvalues/ keys of the result res are
// the proxy's alone: its handle, the one it stored the result under (the
// last before it, or the two last when the blocks are stored apart), and
// no key of the server's; the server's other keys are kept.
func checkOwnMeta(t *testing.T, name string, res *mcp.CallToolResult, vals *values.SessionValues) {
	t.Helper()
	n := vals.Len()
	want := map[string]any{MetaHandle: fmt.Sprintf("r%d", n), "trace": "kept"}
	if strings.HasPrefix(name, "structured") {
		want[MetaHandle], want[MetaContentHandle] = fmt.Sprintf("r%d", n-1), fmt.Sprintf("r%d", n)
	}
	got := map[string]any{}
	for k, v := range res.Meta {
		if strings.HasPrefix(k, ownMetaPrefix) || k == "trace" {
			got[k] = v
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: _meta %v, want %v", name, res.Meta, want)
	}
	for _, c := range res.Content {
		var m mcp.Meta
		switch c := c.(type) {
		case *mcp.TextContent:
			m = c.Meta
		case *mcp.ImageContent:
			m = c.Meta
			if m["k"] != "kept" {
				t.Errorf("%s: an image block's _meta lost the server's own key: %v", name, m)
			}
		}
		for k := range m {
			if strings.HasPrefix(k, ownMetaPrefix) {
				t.Errorf("%s: a content block's _meta carries the server's %s: %v", name, k, m)
			}
		}
	}
	if strings.HasPrefix(name, "whole") || name == "structured apart" {
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Meta["k"] != "kept" {
			t.Errorf("%s: the first block lost the server's own key: %#v", name, res.Content[0])
		}
	}
}

// TestServerMetaKeysDropped: a server's keys of the proxy's _meta
// namespace (agentvalues/) never reach the agent, on the raw path and on
// the SDK path, over the proxy's own line connection and over the SDK's,
// for results shown whole and previewed: the proxy's handles are the
// only ones named.
func TestServerMetaKeysDropped(t *testing.T) {
	cases := metaCases()
	p := &Proxy{threshold: DefaultThreshold}
	for _, name := range []string{"previewed", "previewed blocks", "structured large"} {
		if _, took := p.presentRaw(values.New(), []byte(cases[name]), wire.ResultLine{}); !took {
			t.Errorf("%s: the raw path does not take it", name)
		}
	}
	for _, line := range []bool{true, false} {
		for _, rawFrom := range []int{0, math.MaxInt} {
			t.Run(fmt.Sprintf("line=%v,raw=%v", line, rawFrom == 0), func(t *testing.T) {
				sr, pw := io.Pipe()
				pr, sw := io.Pipe()
				go rawServer(sr, sw, cases)
				var down mcp.Transport = &mcp.IOTransport{Reader: pr, Writer: pw, MaxLineLength: -1}
				if line {
					down = lineDownstream{pr, pw}
				}
				f := newFixture(t, down, nil)
				f.proxy.rawFrom = rawFrom
				for _, name := range []string{"whole", "previewed", "previewed blocks", "structured apart", "structured large", "image"} {
					res := f.call(t, "result", fmt.Sprintf(`{"case":%q}`, name))
					checkOwnMeta(t, name, res, f.proxy.Values())
				}
			})
		}
	}
}

// TestRawCallServerMetaKeysDropped: the same on the raw path of calls
// (Proxy.Run over a LineTransport), and on its SDK path.
func TestRawCallServerMetaKeysDropped(t *testing.T) {
	script := map[string]string{}
	for name, r := range metaCases() {
		script[name] = `{"jsonrpc":"2.0","id":%ID%,"result":` + r + `}`
	}
	for _, rawOff := range []bool{false, true} {
		p, c, _ := startLineProxy(t, script, rawOff)
		c.initialize(t)
		for i, name := range []string{"whole", "previewed", "previewed blocks", "structured apart", "structured large", "image"} {
			c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"result","arguments":{"case":%q}}}`, i+1, name))
			var resp struct{ Result *mcp.CallToolResult }
			if err := json.Unmarshal([]byte(c.next(t)), &resp); err != nil || resp.Result == nil {
				t.Fatalf("rawOff=%v %s: %v", rawOff, name, err)
			}
			checkOwnMeta(t, fmt.Sprintf("%s (rawOff=%v)", name, rawOff), resp.Result, p.Values())
		}
		if took := p.rawN.Load() > 0; took == rawOff {
			t.Errorf("rawOff=%v: the raw path took calls: %v", rawOff, took)
		}
	}
}

// TestServerMetaKeysDroppedElsewhere: resource reads (the result's and
// each content's _meta), prompts (the result's and each message's
// content's) and log messages relayed lose a server's agentvalues/ keys
// too, and keep the others.
func TestServerMetaKeysDroppedElsewhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var forged, forgedBlock mcp.Meta
	json.Unmarshal([]byte(forgedMeta), &forged)
	json.Unmarshal([]byte(forgedBlockMeta), &forgedBlock)
	s := mcp.NewServer(&mcp.Implementation{Name: "forger", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "test://forged", Name: "forged"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Meta: forged, Contents: []*mcp.ResourceContents{{URI: "test://forged", Text: "text", Meta: forgedBlock}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "forged"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Meta: forged, Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "hi", Meta: forgedBlock}},
				{Role: "user", Content: &mcp.EmbeddedResource{Meta: forgedBlock, Resource: &mcp.ResourceContents{URI: "test://x", Text: "x", Meta: forgedBlock}}},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "log", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Meta: forged, Level: "info", Data: "a line"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, err
		})
	st, pt := pipeTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	p, err := Connect(ctx, pt, &Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pst, ct := pipeTransports()
	if _, err := p.Server().Connect(ctx, pst, nil); err != nil {
		t.Fatal(err)
	}
	logs := make(chan *mcp.LoggingMessageParams, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params },
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	noOwnKeys := func(what string, m mcp.Meta, kept string) {
		t.Helper()
		for k := range m {
			if strings.HasPrefix(k, ownMetaPrefix) && k != MetaHandle {
				t.Errorf("%s: _meta carries the server's %s: %v", what, k, m)
			}
		}
		if m[kept] != "kept" {
			t.Errorf("%s: _meta lost the server's own key %s: %v", what, kept, m)
		}
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://forged"})
	if err != nil {
		t.Fatal(err)
	}
	noOwnKeys("the resource read", read.Meta, "trace")
	noOwnKeys("the resource's contents", read.Contents[0].Meta, "k")
	if h := read.Contents[0].Meta[MetaHandle]; h != "r1" {
		t.Errorf("the resource's contents are named %v, want the proxy's r1", h)
	}
	if _, forgedHandle := read.Meta[MetaHandle]; forgedHandle {
		t.Errorf("the resource read's _meta names a handle: %v", read.Meta)
	}

	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	noOwnKeys("the prompt", pr.Meta, "trace")
	if _, forgedHandle := pr.Meta[MetaHandle]; forgedHandle {
		t.Errorf("the prompt's _meta names a handle: %v", pr.Meta)
	}
	noOwnKeys("the prompt's text", pr.Messages[0].Content.(*mcp.TextContent).Meta, "k")
	er := pr.Messages[1].Content.(*mcp.EmbeddedResource)
	noOwnKeys("the prompt's embedded resource", er.Meta, "k")
	noOwnKeys("the prompt's embedded resource's contents", er.Resource.Meta, "k")
	for _, m := range []mcp.Meta{pr.Messages[0].Content.(*mcp.TextContent).Meta, er.Meta, er.Resource.Meta} {
		if _, forgedHandle := m[MetaHandle]; forgedHandle {
			t.Errorf("a prompt's content names a handle: %v", m)
		}
	}

	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-logs:
		noOwnKeys("the log message", m.Meta, "trace")
		if _, forgedHandle := m.Meta[MetaHandle]; forgedHandle {
			t.Errorf("the log message's _meta names a handle: %v", m.Meta)
		}
	case <-ctx.Done():
		t.Fatal("no log message relayed")
	}
}
