package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// progressGrace is how long after a call's result the proxy still relays
// the downstream progress notifications of that call.
const progressGrace = 2 * time.Second

// goneWait bounds how long a call that failed on a broken connection waits
// for the watcher to learn why (the exit status of a command is known a
// moment after its output closes).
const goneWait = 3 * time.Second

// callTool handles a call of a mirrored tool: prepare the arguments, forward
// the call, store the result and return what the agent should see. Every
// failure the agent can act on is a tool result with IsError set; only a
// call the agent cancelled returns an error.
//
// The downstream call runs under a context that Close (and Run, when its
// context is done) cancels, so a stuck downstream server cannot hold the
// proxy open.
func (p *Proxy) callTool(ctx context.Context, req *mcp.CallToolRequest, m *mirroredTool) (*mcp.CallToolResult, error) {
	if err := p.downstreamErr(); err != nil {
		return notCalled(m.name, err), nil
	}
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	prepared, _, err := p.values.Prepare(m.schema, args)
	if err != nil {
		return errorResult(fmt.Sprintf("%s was not called: %v", m.name, err)), nil
	}

	params := &mcp.CallToolParams{
		Meta:      forwardMeta(req.Params.Meta),
		Name:      m.name,
		Arguments: json.RawMessage(prepared),
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		down, release := p.progressToken(req.Session, tok)
		defer release()
		params.SetProgressToken(down)
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	res, err := p.down.CallTool(callCtx, params)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return errorResult(fmt.Sprintf("the downstream server answered the call of %s with an error: %s", m.name, werr.Message)), nil
		}
		if callCtx.Err() != nil {
			return errorResult(fmt.Sprintf("the proxy shut down during the call of %s; it may have partly run", m.name)), nil
		}
		// The call was sent: the connection broke under it, most likely
		// because the server died. Wait for the watcher to say why.
		select {
		case <-p.goneCh:
		case <-time.After(goneWait):
		}
		if gone := p.downstreamErr(); gone != nil {
			return errorResult(fmt.Sprintf("%v during the call of %s; it may have partly run. Restart the MCP server (or the client) to reconnect; stored values can still be read with read_value.", gone, m.name)), nil
		}
		return errorResult(fmt.Sprintf("the call of %s failed: %v; it may have partly run", m.name, err)), nil
	}
	return p.present(res), nil
}

// present stores a downstream result and builds the result the agent gets:
// preview and hint over the threshold, otherwise the result as it came with
// one more text block naming the handle. Either way _meta carries the handle.
func (p *Proxy) present(res *mcp.CallToolResult) *mcp.CallToolResult {
	structured, err := unwrapStructured(res.StructuredContent)
	if err != nil {
		structured = nil
	}
	h := p.store(res.Content, structured)
	v, _ := p.values.Get(h)

	meta := forwardMeta(res.Meta)
	if meta == nil {
		meta = mcp.Meta{}
	}
	meta[MetaHandle] = h
	if p.threshold < 0 || v.Kind() == values.KindBinary || size(v) > p.threshold {
		return &mcp.CallToolResult{
			Meta:    meta,
			Content: []mcp.Content{&mcp.TextContent{Text: values.RenderPreview(h, v) + values.ReferenceHint(h)}},
			IsError: res.IsError,
		}
	}
	out := &mcp.CallToolResult{
		Meta:    meta,
		Content: append(slicesClip(res.Content), &mcp.TextContent{Text: handleLine(h)}),
		IsError: res.IsError,
	}
	if structured != nil {
		out.StructuredContent = structured
	}
	return out
}

// store puts a result in the store and returns its handle. See the package
// documentation (What is stored) for the rules.
func (p *Proxy) store(content []mcp.Content, structured json.RawMessage) string {
	text, allText := joinText(content)
	if structured != nil && !(allText && mirrorsText(structured, text)) {
		if h, err := p.values.Put(structured); err == nil {
			return h
		}
		return p.values.PutOutput(structured)
	}
	if allText {
		return p.values.PutOutput([]byte(text))
	}
	blocks, err := json.Marshal(content)
	if err != nil {
		return p.values.PutOutput([]byte(text))
	}
	if h, err := p.values.Put(json.RawMessage(blocks)); err == nil {
		return h
	}
	return p.values.PutOutput(blocks)
}

// joinText returns the text of the content blocks joined by newlines, and
// whether every block is text.
func joinText(content []mcp.Content) (string, bool) {
	if len(content) == 1 {
		if tc, ok := content[0].(*mcp.TextContent); ok {
			return tc.Text, true
		}
	}
	var b strings.Builder
	allText, first := true, true
	for _, c := range content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			allText = false
			continue
		}
		if !first {
			b.WriteByte('\n')
		}
		first = false
		b.WriteString(tc.Text)
	}
	return b.String(), allText
}

// mirrorsText reports whether structured content is only the text again: an
// object with a single string member equal to text.
func mirrorsText(structured json.RawMessage, text string) bool {
	r := gjson.ParseBytes(structured)
	if !r.IsObject() {
		return false
	}
	n, same := 0, false
	r.ForEach(func(_, v gjson.Result) bool {
		n++
		same = v.Type == gjson.String && v.Str == text
		return n == 1
	})
	return n == 1 && same
}

// size is the number of bytes a value would add to the transcript whole.
func size(v values.Value) int {
	if v.Kind() == values.KindText {
		return v.Len()
	}
	return len(v.JSON())
}

// handleLine is the text block appended to a result shown whole; it says
// what [values.SessionValues.Observe] says below a value it shows whole.
func handleLine(h string) string {
	return fmt.Sprintf(`[stored as %s: pass "$%s" or "$%s.<field>" as a tool argument to reuse it]`, h, h, h)
}

// notCalled is the result of a call the downstream server can no longer take.
func notCalled(tool string, why error) *mcp.CallToolResult {
	return errorResult(fmt.Sprintf("%s was not called: %v. Restart the MCP server (or the client) to reconnect; stored values can still be read with read_value.", tool, why))
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// forwardMeta copies _meta across the proxy, leaving out the protocol's own
// keys (io.modelcontextprotocol/...), which each side sets for itself.
func forwardMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	out := maps.Clone(m)
	for k := range out {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func slicesClip(c []mcp.Content) []mcp.Content { return c[:len(c):len(c)] }

// handleReadValue serves the proxy's read_value tool. Its arguments are not
// resolved: its ref argument is itself reference-shaped.
func (p *Proxy) handleReadValue(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	page, err := p.values.HandleReadValue(args)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: page}}}, nil
}

// readValueTool is the library's read_value tool in the SDK's terms.
func readValueTool() *mcp.Tool {
	t := values.ReadValueTool()
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
}
