package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goneWait bounds how long a call that failed on a broken connection waits
// for the watcher to learn why (the exit status of a command is known a
// moment after its output closes).
const goneWait = 3 * time.Second

// finishCall returns what the agent gets for a call of m made over the
// link l under callCtx (a child of the call's ctx that Close cancels; on
// the raw call route, the call's wire.Cancel, which is cancelled when
// either is), whose result went to vals: the result res presented, or,
// for err, the result or error that says what went wrong. The SDK route
// and the raw call route (call_rawcall.go) both end here. pr, when not
// nil, is the memory present builds the result in (see rawAnswer).
func (p *Proxy) finishCall(ctx context.Context, callCtx interface{ Err() error }, l *link, m *mirroredTool, vals *values.SessionValues, res *mcp.CallToolResult, err error, pr *presented) (*mcp.CallToolResult, error) {
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			if werr.Code == wire.CodeProxy {
				return errorResult(fmt.Sprintf("%s ran, but the proxy could not take its result: %s", m.up, werr.Message)), nil
			}
			return errorResult(fmt.Sprintf("the downstream server answered the call of %s with an error: %s", m.up, p.errorText(vals, werr.Message))), nil
		}
		if callCtx.Err() != nil {
			return errorResult(fmt.Sprintf("the proxy shut down during the call of %s; it may have partly run", m.up)), nil
		}
		if l.conn != nil && !l.conn.Broken() {
			// The connection is up: the SDK could not decode the result.
			return errorResult(fmt.Sprintf("%s ran, but its result is not a valid MCP tool result: %s", m.up, wire.ClipText(err.Error()))), nil
		}
		// The call was sent: the connection broke under it, most likely
		// because the server died. Wait for the watcher to say why.
		select {
		case <-l.ended:
		case <-time.After(goneWait):
		}
		p.mu.Lock()
		gone := l.gone
		p.mu.Unlock()
		switch {
		case gone != nil && p.restart != nil:
			return errorResult(fmt.Sprintf("%v during the call of %s; it may have partly run. It is being restarted: call again in a moment; stored values can still be read with read_value.", gone, m.up)), nil
		case gone != nil:
			return errorResult(fmt.Sprintf("%v during the call of %s; it may have partly run. Restart the MCP server (or the client) to reconnect; stored values can still be read with read_value.", gone, m.up)), nil
		}
		return errorResult(fmt.Sprintf("the call of %s failed: %v; it may have partly run", m.up, err)), nil
	}
	out := p.present(vals, res, pr)
	p.stores.noteResult(vals, m.up, p.noteServer(l), out)
	return out, nil
}

// noteServer names the server of p, whose link is l, for a note: its name
// in a gateway, else the name it gave in its initialize result.
func (p *Proxy) noteServer(l *link) string {
	if name := p.gatewayName(); name != "" {
		return name
	}
	if init := l.down.InitializeResult(); init != nil && init.ServerInfo != nil {
		return init.ServerInfo.Name
	}
	return ""
}

// present stores a downstream result and builds the result the agent gets,
// by the rule of what is stored and what is shown (mcpresult): over the
// threshold the agent gets a preview and a hint of each stored value, the
// image and audio blocks, and no structuredContent; otherwise the result
// as it came with one more text block naming the handles. _meta carries
// the handle under MetaHandle, and, when the content blocks are stored
// apart from the structured content, theirs under MetaContentHandle.
//
// The result is built in pr, a zero presented or one reset (see
// rawAnswer), or in a new one when pr is nil.
func (p *Proxy) present(vals *values.SessionValues, res *mcp.CallToolResult, pr *presented) *mcp.CallToolResult {
	h, ch, raw := storedRaw(res) // stored from its bytes (call_rawresult.go), to be previewed
	var structured json.RawMessage
	if pr == nil {
		pr = new(presented)
	}
	pr.content = sdkContent{blocks: res.Content, json: keptContent(res)}
	c := &pr.content
	if !raw {
		var err error
		if structured, err = unwrapStructured(res.StructuredContent); err != nil {
			structured = nil
		}
		h, ch = mcpresult.Store(vals, structured, c)
	}

	// The stored value is the server's; what the agent gets carries none of
	// its keys of the proxy's namespace.
	dropOwnKeys(res.Content)
	meta := forwardMeta(res.Meta)
	if meta == nil {
		if pr.meta == nil {
			pr.meta = mcp.Meta{}
		}
		meta = pr.meta
	}
	meta[MetaHandle] = h
	if ch != "" {
		meta[MetaContentHandle] = ch
	}
	v, _ := vals.Get(h)
	if raw || !mcpresult.Whole(p.threshold, v, structured, c) {
		pr.line.Text = mcpresult.Preview(vals, h, ch)
		content := append(pr.blocks[:0], &pr.line)
		for _, b := range res.Content {
			if isMedia(b) {
				content = append(content, b)
			}
		}
		pr.out = mcp.CallToolResult{Meta: meta, Content: content, IsError: res.IsError}
		return &pr.out
	}
	pr.line.Text = mcpresult.HandleLine(vals, h, ch)
	var content []mcp.Content
	if len(res.Content) < len(pr.blocks) {
		content = append(append(pr.blocks[:0], res.Content...), &pr.line)
	} else {
		content = append(slicesClip(res.Content), &pr.line)
	}
	out := &pr.out
	*out = mcp.CallToolResult{
		Meta:    meta,
		Content: content,
		IsError: res.IsError,
	}
	if structured != nil {
		out.StructuredContent = json.RawMessage(mcpresult.WithHandle(structured, h))
	}
	return out
}

// presented is what present allocates, once: the result the agent gets,
// the blocks of the downstream result as the rule reads them, and the
// block present adds (the handle line, or the preview) with, for a
// result of one block, the content array it goes in, and its _meta when
// the server's result had none to forward (which a presented reset keeps,
// emptied: see rawAnswer).
type presented struct {
	out     mcp.CallToolResult
	content sdkContent
	line    mcp.TextContent
	blocks  [2]mcp.Content
	meta    mcp.Meta
}

// sdkContent is a result's content blocks as the SDK decoded them, for the
// rule (mcpresult.Content): json is the content array as the server sent
// it, when the connection kept it (keepContent), else nil.
type sdkContent struct {
	blocks []mcp.Content
	json   []byte
	text   []byte // Text's, once made
	made   bool
}

func (c *sdkContent) Len() int { return len(c.blocks) }

func (c *sdkContent) AllText() bool {
	for _, b := range c.blocks {
		if _, ok := b.(*mcp.TextContent); !ok {
			return false
		}
	}
	return true
}

// Text returns the memory of the joined text itself, not a copy: the text
// of one block, or the string joinText made of several. The store keeps it
// and nothing writes to it, as nothing writes to a string's memory; for a
// result shown whole, a copy would be all of its text again.
func (c *sdkContent) Text() []byte {
	if !c.made {
		text, _ := joinText(c.blocks)
		c.text, c.made = []byte{}, true
		if text != "" {
			c.text = unsafe.Slice(unsafe.StringData(text), len(text))
		}
	}
	return c.text
}

// JSON returns the blocks as the server sent them when the connection
// kept them, else as the SDK encodes them (a result of an in-process
// server, which the SDK encodes so: see Middleware).
func (c *sdkContent) JSON() ([]byte, error) {
	if c.json != nil {
		return c.json, nil
	}
	return json.Marshal(c.blocks)
}

// Size is the number of bytes the blocks add to a transcript shown whole
// (mcpresult.Sizer): the text of text blocks, and other blocks but images
// and audio as the SDK encodes them for the agent.
func (c *sdkContent) Size() int {
	n := 0
	for _, b := range c.blocks {
		switch b := b.(type) {
		case *mcp.TextContent:
			n += len(b.Text)
		case *mcp.ImageContent, *mcp.AudioContent:
		default:
			j, _ := json.Marshal(b)
			n += len(j)
		}
	}
	return n
}

// isMedia reports whether a content block is an image or audio
// (mcpresult.IsMedia), which the proxy passes on to the agent even with a
// preview.
func isMedia(c mcp.Content) bool {
	switch c.(type) {
	case *mcp.ImageContent, *mcp.AudioContent:
		return true
	}
	return false
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

// maxErrorText is the longest downstream error message shown whole. A
// longer one is stored like a result and shown as its preview and hint, so
// the agent can read all of it with read_value without the transcript
// holding it.
const maxErrorText = 2 << 10

// errorText is a downstream error message as the agent sees it: whole when
// short (at most maxErrorText bytes and the threshold), else stored and
// previewed.
func (p *Proxy) errorText(vals *values.SessionValues, msg string) string {
	limit := maxErrorText
	if p.threshold > 0 {
		limit = min(limit, p.threshold)
	}
	if len(msg) <= limit {
		return msg
	}
	return "(the message is stored)\n" + mcpresult.Preview(vals, vals.PutOutput([]byte(msg)), "")
}

// notCalled is the result of a call the downstream server cannot take.
func (p *Proxy) notCalled(tool string, why error) *mcp.CallToolResult {
	if p.restart != nil { // why says it is being restarted
		return errorResult(fmt.Sprintf("%s was not called: %v. Stored values can still be read with read_value.", tool, why))
	}
	return errorResult(fmt.Sprintf("%s was not called: %v. Restart the MCP server (or the client) to reconnect; stored values can still be read with read_value.", tool, why))
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

func slicesClip(c []mcp.Content) []mcp.Content { return c[:len(c):len(c)] }

// handleReadValue serves the read_value tool over vals. Its arguments are
// not resolved: its ref argument is itself reference-shaped.
func handleReadValue(vals *values.SessionValues, req *mcp.CallToolRequest) *mcp.CallToolResult {
	page, err := vals.HandleReadValue(toolArgs(req))
	if err != nil {
		return errorResult(err.Error())
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: page}}}
}

// handleQueryValue serves the query_value tool over vals. Its arguments are
// not resolved (its ref is a reference); its result is stored under a new
// handle, named in _meta as a tool result's is.
func handleQueryValue(ctx context.Context, st *stores, vals *values.SessionValues, req *mcp.CallToolRequest) *mcp.CallToolResult {
	obs, err := vals.HandleQueryValue(ctx, toolArgs(req))
	if err != nil {
		return errorResult(err.Error())
	}
	st.note(vals, Note{Handle: obs.Handle, Tool: req.Params.Name, Time: time.Now(), Previewed: obs.Previewed, Returned: valueSize(vals, obs.Handle), Shown: len(obs.Text)})
	return &mcp.CallToolResult{Meta: mcp.Meta{MetaHandle: obs.Handle}, Content: []mcp.Content{&mcp.TextContent{Text: obs.Text}}}
}

// toolArgs returns the arguments of a call, {} when there are none.
func toolArgs(req *mcp.CallToolRequest) []byte {
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || string(args) == "null" {
		return []byte("{}")
	}
	return args
}

// queryValueTool is the library's query_value tool in the SDK's terms.
func queryValueTool() *mcp.Tool {
	t := values.QueryValueTool()
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
}

// readValueTool is the library's read_value tool in the SDK's terms.
func readValueTool() *mcp.Tool {
	t := values.ReadValueTool()
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
}
