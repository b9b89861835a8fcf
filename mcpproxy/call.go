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
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressGrace is how long after a call's result the proxy still relays
// the downstream progress notifications of that call.
const progressGrace = 2 * time.Second

// goneWait bounds how long a call that failed on a broken connection waits
// for the watcher to learn why (the exit status of a command is known a
// moment after its output closes).
const goneWait = 3 * time.Second

// spliceMin is the size of prepared arguments from which callTool has the
// downstream connection splice them into the request it writes (see
// wire.Splices), rather than the SDK encode them again.
const spliceMin = 64 << 10

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
		return p.notCalled(m.up, err), nil
	}
	vals := p.stores.of(req.Session)
	prepared, _, err := vals.Prepare(m.schema, toolArgs(req))
	if err != nil {
		return errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil
	}

	params := &mcp.CallToolParams{
		Meta:      p.requestMeta(req.Params.Meta),
		Name:      m.name,
		Arguments: json.RawMessage(prepared),
	}
	if len(prepared) >= spliceMin {
		var release func()
		params.Arguments, release = p.splices.Hold(prepared) // see wire.Splices
		defer release()
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		// The call's progress goes on its own stream (over Streamable
		// HTTP, the response to its POST, which a client without the
		// standalone stream reads too), written before its result.
		sess := p.stores.session(req.Session)
		own := sess.callLane(ctx)
		down, release := p.progressToken(sess, tok, own)
		defer release()
		defer own.flush(ctx) // first: the result follows its progress
		params.SetProgressToken(down)
	}
	callCtx, cancel := context.WithCancel(wire.WithTag(ctx, vals)) // for fixResult
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	l := p.current()
	res, err := l.down.CallTool(callCtx, params)
	return p.finishCall(ctx, callCtx, l, m, vals, res, err)
}

// finishCall returns what the agent gets for a call of m made over the
// link l under callCtx (a child of the call's ctx that Close cancels),
// whose result went to vals: the result res presented, or, for err, the
// result or error that says what went wrong. The SDK path and the raw
// path (call_rawcall.go) both end here.
func (p *Proxy) finishCall(ctx, callCtx context.Context, l *link, m *mirroredTool, vals *values.SessionValues, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
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
	return p.present(vals, res), nil
}

// present stores a downstream result and builds the result the agent gets.
// Whether it comes whole is judged on the size of what would be sent: the
// text of the content blocks plus the structured content. Over the
// threshold the agent gets a preview and a hint of each stored value, and
// no structuredContent; otherwise the result as it came with one more text
// block naming the handles. Image and audio blocks are passed on either
// way (and stored with the rest). _meta carries the handle under
// MetaHandle, and, when the content blocks are stored apart from the
// structured content, theirs under MetaContentHandle.
func (p *Proxy) present(vals *values.SessionValues, res *mcp.CallToolResult) *mcp.CallToolResult {
	h, ch, raw := storedRaw(res) // stored from its bytes (call_rawresult.go), to be previewed
	var structured json.RawMessage
	if !raw {
		var err error
		if structured, err = unwrapStructured(res.StructuredContent); err != nil {
			structured = nil
		}
		h, ch = store(vals, res.Content, structured)
	}

	// The stored value is the server's; what the agent gets carries none of
	// its keys of the proxy's namespace.
	dropOwnKeys(res.Content)
	meta := forwardMeta(res.Meta)
	if meta == nil {
		meta = mcp.Meta{}
	}
	meta[MetaHandle] = h
	if ch != "" {
		meta[MetaContentHandle] = ch
	}
	v, _ := vals.Get(h)
	if raw || p.threshold < 0 || v.Kind() == values.KindBinary || wholeSize(res.Content, structured) > p.threshold {
		text := preview(vals, h)
		if ch != "" {
			text += "\n\nThe content blocks, stored apart:\n" + preview(vals, ch)
		}
		content := []mcp.Content{&mcp.TextContent{Text: text}}
		for _, c := range res.Content {
			if isMedia(c) {
				content = append(content, c)
			}
		}
		return &mcp.CallToolResult{Meta: meta, Content: content, IsError: res.IsError}
	}
	out := &mcp.CallToolResult{
		Meta:    meta,
		Content: append(slicesClip(res.Content), &mcp.TextContent{Text: handleLine(h, ch)}),
		IsError: res.IsError,
	}
	if structured != nil {
		out.StructuredContent = withHandle(structured, h)
	}
	return out
}

// withHandle returns the structured content of a result shown whole with
// its handle as one more member, first: some clients (Claude Code, Cursor)
// give the model only the structured content when there is any, and the
// model must see the handle to pass the value on. The stored value is the
// server's, without it. A member of that name already there (a proxy
// behind the proxy put it) gets this handle, the one the agent can use.
// Structured content that is not an object is returned as it is.
func withHandle(structured json.RawMessage, h string) json.RawMessage {
	i := jsontext.SkipSpace(structured, 0)
	if i >= len(structured) || structured[i] != '{' || jsontext.Valid(structured) != nil {
		return structured
	}
	if v, taken := jsontext.Member(structured[i:], MetaHandle); taken {
		at := i + offsetIn(structured[i:], v)
		out := append([]byte(nil), structured[:at]...)
		out = jsontext.AppendQuote(out, []byte(h))
		return append(out, structured[at+len(v):]...)
	}
	out := make([]byte, 0, len(structured)+len(MetaHandle)+len(h)+8)
	out = append(out, '{')
	out = jsontext.AppendQuote(out, []byte(MetaHandle))
	out = append(out, ':')
	out = jsontext.AppendQuote(out, []byte(h))
	if rest := jsontext.SkipSpace(structured, i+1); structured[rest] != '}' {
		out = append(out, ',')
	}
	return append(out, structured[i+1:]...)
}

// MetaContentHandle is the key, in a tool result's _meta, of the handle
// under which the proxy stored the result's content blocks when it also had
// structured content that they do not merely repeat.
const MetaContentHandle = "agentvalues/content-handle"

// store puts a result in the store and returns its handle, and the handle
// of its content blocks when they are stored apart (else ""). See the
// package documentation (What is stored) for the rules.
func store(vals *values.SessionValues, content []mcp.Content, structured json.RawMessage) (h, contentHandle string) {
	if structured == nil {
		return storeContent(vals, content), ""
	}
	text, allText := joinText(content)
	if allText && mirrorsText(structured, text) {
		return vals.PutOutput([]byte(text)), ""
	}
	h, err := vals.Put(structured)
	if err != nil {
		h = vals.PutOutput(structured)
	}
	if len(content) > 0 && !(allText && sameJSON(structured, text)) {
		contentHandle = storeContent(vals, content)
	}
	return h, contentHandle
}

// storeContent stores content blocks: their text when all are text, else
// the JSON array of the blocks, so nothing is lost.
func storeContent(vals *values.SessionValues, content []mcp.Content) string {
	text, allText := joinText(content)
	if allText {
		return vals.PutOutput([]byte(text))
	}
	blocks, err := json.Marshal(content)
	if err != nil {
		return vals.PutOutput([]byte(text))
	}
	if h, err := vals.Put(json.RawMessage(blocks)); err == nil {
		return h
	}
	return vals.PutOutput(blocks)
}

// sameJSON reports whether text is the JSON of structured again, as servers
// send it beside structured content for older clients (whitespace aside).
func sameJSON(structured json.RawMessage, text string) bool {
	return jsontext.Valid(structured) == nil && jsontext.SameJSON(structured, []byte(text))
}

// wholeSize is the number of bytes a result shown whole would add to the
// transcript: its text blocks, other non-media blocks as JSON, and the
// structured content. Image and audio blocks are not counted: the client
// shows them as what they are, and the proxy passes them on either way.
func wholeSize(content []mcp.Content, structured json.RawMessage) int {
	n := len(structured)
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			n += len(c.Text)
		case *mcp.ImageContent, *mcp.AudioContent:
		default:
			b, _ := json.Marshal(c)
			n += len(b)
		}
	}
	return n
}

// isMedia reports whether a content block is an image or audio, which the
// proxy passes on to the agent even with a preview.
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

// mirrorsText reports whether structured content is only the text again: an
// object with a single string member equal to text.
func mirrorsText(structured json.RawMessage, text string) bool {
	if jsontext.Valid(structured) != nil {
		return false
	}
	member, ok := onlyStringMember(structured[jsontext.SkipSpace(structured, 0):])
	return ok && jsontext.KeyEquals(member, text)
}

// onlyStringMember returns the JSON string that is the only member of the
// valid value v, when v is an object with one member and that member is a
// string. It reads the members only up to the first that rules this out,
// so that a large first member that is not a string is not read at all.
func onlyStringMember(v []byte) ([]byte, bool) {
	if v[0] != '{' {
		return nil, false
	}
	var member []byte
	whole := jsontext.EachChildAt(v, 0, func(_ []byte, at int) int {
		if member != nil || v[at] != '"' {
			return -1 // a second member, or one not a string
		}
		end := jsontext.SkipString(v, at)
		member = v[at:end]
		return end
	}) >= 0
	if !whole || member == nil {
		return nil, false
	}
	return member, true
}

// handleLine is the text block appended to a result shown whole; it says
// what [values.SessionValues.Observe] says below a value it shows whole,
// and names the content blocks' handle ch when they are stored apart.
func handleLine(h, ch string) string {
	if ch != "" {
		return fmt.Sprintf(`[stored as %s, the content blocks as %s: pass "$%s" or "$%s.<field>" as a tool argument to reuse it]`, h, ch, h, h)
	}
	return fmt.Sprintf(`[stored as %s: pass "$%s" or "$%s.<field>" as a tool argument to reuse it]`, h, h, h)
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
	return "(the message is stored)\n" + preview(vals, vals.PutOutput([]byte(msg)))
}

// preview is the preview and hint of the value under h, whatever its size:
// the proxy shows a result whole itself when it is under the threshold.
func preview(vals *values.SessionValues, h string) string {
	v, _ := vals.Get(h)
	return values.RenderPreview(h, v) + values.ReferenceHint(h)
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

// protocolMetaPrefix begins the protocol's own keys of a _meta.
const protocolMetaPrefix = "io.modelcontextprotocol/"

// ownMetaPrefix begins the keys of a _meta that are the proxy's own
// ([MetaHandle], [MetaContentHandle]): the proxy drops every such key a
// downstream server writes, wherever it relays a _meta (results, their
// content blocks, resource contents, prompts, log messages), so that one
// the agent sees was set by the proxy it talks to. A server could
// otherwise name, through a gateway, another server's value as its own
// result's content blocks.
const ownMetaPrefix = "agentvalues/"

// forwardMeta copies _meta across the proxy, leaving out the protocol's own
// keys (io.modelcontextprotocol/...), which each side sets for itself, and
// the proxy's (ownMetaPrefix), which only the proxy sets.
func forwardMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	out := maps.Clone(m)
	for k := range out {
		if strings.HasPrefix(k, protocolMetaPrefix) || strings.HasPrefix(k, ownMetaPrefix) {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// withoutOwnKeys returns m without the proxy's keys (ownMetaPrefix): m
// itself when it has none, else a copy (nil when nothing is left). It is
// for the _meta of what the proxy relays inside a message (content
// blocks), whose protocol keys are the server's to set.
func withoutOwnKeys(m mcp.Meta) mcp.Meta {
	for k := range m {
		if strings.HasPrefix(k, ownMetaPrefix) {
			out := maps.Clone(m)
			maps.DeleteFunc(out, func(k string, _ any) bool { return strings.HasPrefix(k, ownMetaPrefix) })
			if len(out) == 0 {
				return nil
			}
			return out
		}
	}
	return m
}

// dropOwnKeys removes the proxy's keys (ownMetaPrefix) from the _meta of
// each content block, and of the resource a block embeds, in place.
func dropOwnKeys(content []mcp.Content) {
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.ImageContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.AudioContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.ResourceLink:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.EmbeddedResource:
			c.Meta = withoutOwnKeys(c.Meta)
			if c.Resource != nil {
				c.Resource.Meta = withoutOwnKeys(c.Resource.Meta)
			}
		case *mcp.ToolUseContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.ToolResultContent:
			c.Meta = withoutOwnKeys(c.Meta)
			dropOwnKeys(c.Content)
		}
	}
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
func handleQueryValue(ctx context.Context, vals *values.SessionValues, req *mcp.CallToolRequest) *mcp.CallToolResult {
	obs, err := vals.HandleQueryValue(ctx, toolArgs(req))
	if err != nil {
		return errorResult(err.Error())
	}
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
