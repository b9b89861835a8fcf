package mcpproxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/hooks"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawStructuredKey names the one member of the object that stands in for a
// tool result's structuredContent between the downstream connection and the
// proxy. See rawConn.
const rawStructuredKey = "agentvalues/raw-structured-content"

// rawStructuredBase64Key stands in for rawStructuredKey when the raw JSON
// is not valid UTF-8 (a string holding stray bytes), which a JSON string
// cannot carry exactly: its value is the bytes in standard base64.
const rawStructuredBase64Key = "agentvalues/raw-structured-content-base64"

// rawTransport wraps the downstream transport so that the proxy sees each
// response's result before the SDK decodes it (see [Proxy.fixResult]): the
// structuredContent of every tool result reaches the proxy as the exact
// bytes the server sent, and a result the SDK cannot take is refused with
// an error the agent can read.
//
// The SDK decodes structuredContent into map[string]any: keys would come back
// sorted and integers beyond 2^53 rounded, so a stored value (and every
// reference into it) would differ from what the tool returned. Before the SDK
// decodes a response, the result's structuredContent is replaced with
// {rawStructuredKey: "<the raw JSON, as a string>"}; the proxy unwraps it.
// As a string, it also nests no deeper than the SDK decodes.
type rawTransport struct {
	mcp.Transport
	p    *Proxy
	conn *ownLine       // set by Connect when the connection is the proxy's own
	c    mcp.Connection // set by Connect
}

// An ownLine is the proxy's own line connection to its server (a
// CommandTransport's), with what the raw call route keeps of it.
type ownLine struct {
	*wire.Conn
	sdkMeta atomic.Pointer[sdkMeta] // the _meta of the SDK client's server/discover (see noteDiscover)
}

func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if lc, ok := c.(*wire.Conn); ok {
		own := &ownLine{Conn: lc}
		// Reading starts with the first Read, after these are set.
		lc.SetHooks(wire.Hooks{
			Fix:     t.p.fixResult,
			Outline: wire.NewOutline(mcpresult.OutlineMax, mcpresult.Descend).WithInner(mcpresult.Inner, hooks.ScanLimits),
			Calling: own.noteDiscover,
			Splices: t.p.splices,
			Log:     t.p.log,
		})
		t.conn, t.c = own, lc
		return lc, nil
	}
	rc := &rawConn{Connection: c, fix: t.p.fixResult, splices: t.p.splices}
	if st, ok := t.Transport.(*mcp.StreamableClientTransport); ok && !st.DisableStandaloneSSE {
		rc.sse = newStandalone(st, t.p.log) // see downstream_sse.go
		rc.in, rc.done = make(chan readResult), make(chan struct{})
	}
	t.c = rc
	return rc, nil
}

// rawConn applies the proxy's fix to the responses of a connection other
// than the proxy's own line connection (an in-memory or HTTP transport),
// after the connection has decoded them.
type rawConn struct {
	mcp.Connection
	fix     func(method string, tag any, result json.RawMessage, line wire.ResultLine) (json.RawMessage, *jsonrpc.Error)
	calls   wire.Tracker
	splices *wire.Splices

	// Over Streamable HTTP: the standalone stream, whose messages Read
	// takes along with the connection's, which a goroutine reads into in.
	sse      *standalone
	in       chan readResult
	done     chan struct{} // closed by Close
	pumpOnce sync.Once
	doneOnce sync.Once
	version  string // the session's protocol version, once initialized
	readErr  error  // the connection's last error, once in is closed
}

// A readResult is what one Read of a connection returned.
type readResult struct {
	msg jsonrpc.Message
	err error
}

func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		if req.IsCall() {
			c.calls.Add(req.ID, wire.Pending{Method: req.Method, Tag: wire.TagOf(ctx), ID: req.ID})
		}
		c.calls.ForgetCancelled(req)
		if req.Method == "tools/call" {
			r := *req
			r.Params = c.splices.Expand(req.Params)
			msg = &r
		}
	}
	err := c.Connection.Write(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); ok && err != nil && req.IsCall() {
		c.calls.Done(req.ID) // never sent: no response will come
	}
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && c.sse != nil && req.Method == "notifications/initialized" {
		c.sse.start(c.Connection.SessionID(), c.version)
	}
	return err
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		call, ok := c.calls.Done(resp.ID)
		if ok && call.Method == "initialize" && resp.Error == nil {
			c.version = initializeVersion(resp.Result) // Read and Write of initialize do not overlap
		}
		if ok && resp.Error == nil {
			result := resp.Result
			if !utf8.Valid(result) {
				// Read as the SDK reads it, as wire.Conn does (see doc.go).
				result = jsontext.AppendValidUTF8(nil, result)
			}
			res, werr := c.fix(call.Method, call.Tag, result, wire.ResultLine{})
			if werr != nil {
				resp.Result, resp.Error = nil, werr
			} else {
				resp.Result = res
			}
		}
	}
	return msg, err
}

// read reads the next message of the connection or, over Streamable HTTP,
// of its standalone stream.
func (c *rawConn) read(ctx context.Context) (jsonrpc.Message, error) {
	if c.sse == nil {
		return c.Connection.Read(ctx)
	}
	c.pumpOnce.Do(func() {
		go func() {
			for {
				msg, err := c.Connection.Read(ctx)
				if err != nil {
					c.readErr = err
					close(c.in)
					return
				}
				select {
				case c.in <- readResult{msg, nil}:
				case <-c.done:
					return
				}
			}
		}()
	})
	select {
	case r, ok := <-c.in:
		if !ok {
			return nil, c.readErr
		}
		return r.msg, r.err
	case msg := <-c.sse.msgs:
		return msg, nil
	case <-c.done: // closed: the pump may have stopped without closing in
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the standalone stream, if any, and closes the connection.
func (c *rawConn) Close() error {
	if c.sse != nil {
		c.doneOnce.Do(func() { close(c.done) })
		c.sse.close()
	}
	return c.Connection.Close()
}

// maxToolDepth bounds the nesting of one downstream tool's definition. A
// deeper tool is left out, with a line in the log, and the others are
// offered: the SDK refuses a whole tools/list result that nests past its
// decoding limit, and no honest schema comes near it.
const maxToolDepth = 512

// fixResult, the downstream connection's Fix hook, prepares the result of
// a response to a call of method for the SDK; tag is the store the result
// goes to (callTool's), or the raw call whose vals it is (callToolRaw's);
// nil for another call. A tools/call result must be an object; one the
// agent will get as a preview is stored from its bytes and replaced by a
// small stand-in (presentRaw, the raw result route), and any other has its
// structured content, and its blocks when they are not all text, kept as
// the server sent them (wrapStructured, keepContent); a raw call's result
// of text blocks alone is read for it here (rawDecoded). A tools/list result loses the tools that
// nest too deep. A refused result becomes the error returned. result is
// valid JSON: the connection decoded, or validated, the response; line is
// what is known of the line it came in (see presentRaw).
func (p *Proxy) fixResult(method string, tag any, result json.RawMessage, line wire.ResultLine) (json.RawMessage, *jsonrpc.Error) {
	switch method {
	case "tools/call":
		r := bytes.TrimSpace(result)
		if len(r) == 0 || r[0] != '{' {
			what := "empty"
			if len(r) > 0 {
				what = wire.KindName(r[0]) + " " + wire.ClipText(string(r))
			}
			return nil, &jsonrpc.Error{Code: wire.CodeProxy, Message: "the downstream server's result is " + what + ", not a CallToolResult object"}
		}
		raw, _ := tag.(*rawRequest) // a call of the raw call route
		if len(result) >= p.rawFrom {
			// A call without a store under a store per session was not made
			// by callTool: left to the SDK route.
			vals, _ := tag.(*values.SessionValues)
			if raw != nil {
				vals = raw.vals
			}
			if vals == nil {
				vals = p.stores.shared
			}
			if vals == nil {
				return keepContent(wrapStructured(result)), nil
			}
			if out, ok := p.presentRaw(vals, result, line); ok {
				return out, nil
			}
		}
		if n, over := manyBlocks(r); over {
			return nil, &jsonrpc.Error{Code: wire.CodeProxy, Message: fmt.Sprintf("the downstream server's result has %d content blocks, more than the %d the proxy decodes in one result (a previewed result of text blocks alone may have any number)", n, maxDecodedBlocks)}
		}
		if raw != nil && line.Valid && rawDecoded(raw, r) || resultAsIs(r) {
			return result, nil
		}
		return keepContent(wrapStructured(result)), nil
	case "tools/list":
		return p.dropDeepTools(result), nil
	}
	return result, nil
}

// dropDeepTools returns a tools/list result without the tools that nest
// deeper than maxToolDepth, logging each one left out.
func (p *Proxy) dropDeepTools(result json.RawMessage) json.RawMessage {
	if jsontext.Depth(result) <= maxToolDepth || jsontext.Valid(result) != nil {
		return result
	}
	tools, ok := jsontext.Member(result, "tools")
	if !ok || tools[0] != '[' {
		return result
	}
	at := offsetIn(result, tools)
	out := append([]byte(nil), result[:at]...)
	out = append(out, '[')
	n := 0
	jsontext.EachChild(tools, func(_, t []byte) bool {
		if d := jsontext.Depth(t); d > maxToolDepth {
			var name string
			if v, ok := jsontext.Member(t, "name"); ok && v[0] == '"' {
				name = string(jsontext.AppendUnquoted(nil, v))
			}
			fmt.Fprintf(p.log, "agentvalues: not offering the downstream tool %s: its definition nests %d levels deep, more than %d\n", wire.ClipText(name), d, maxToolDepth)
			return true
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, t...)
		n++
		return true
	})
	out = append(out, ']')
	return append(out, result[at+len(tools):]...)
}

// resultAsIs reports whether wrapStructured and keepContent leave the
// tools/call result r, an object, as it is: it has no member
// structuredContent, and no content block that is not of type "text".
// One pass over its members (and its blocks' types) tells, where the two
// would validate it and read its members three times: the common small
// result of text blocks alone is then passed on at once.
func resultAsIs(r []byte) bool {
	asIs := true
	jsontext.EachChild(r, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "structuredContent"):
			asIs = false
		case jsontext.KeyEquals(k, "content") && v[0] == '[':
			asIs = !otherBlock(v)
		}
		return asIs
	})
	return asIs
}

// offsetIn returns the offset of sub within outer; sub must be a subslice.
func offsetIn(outer, sub []byte) int { return cap(outer) - cap(sub) }

// wrapStructured returns result with its top-level structuredContent, if any,
// replaced by the wrapper object. Anything unexpected leaves result as is.
func wrapStructured(result json.RawMessage) json.RawMessage {
	// jsontext refuses invalid UTF-8 in a string, which encoding/json (and
	// the SDK) accept: the structure is all that matters here.
	if jsontext.Valid(result) != nil && !json.Valid(result) {
		return result
	}
	raw, ok := jsontext.Member(result, "structuredContent")
	// null is no structured content: left as is, the SDK decodes it to nil.
	if !ok || raw[0] == 'n' {
		return result
	}
	at := offsetIn(result, raw)
	var s bytes.Buffer
	s.Grow(len(raw) + len(raw)/8 + 64)
	key, val := rawStructuredKey, string(raw)
	if !utf8.Valid(raw) {
		key, val = rawStructuredBase64Key, base64.StdEncoding.EncodeToString(raw)
	}
	s.WriteString(`{"` + key + `":`)
	enc := json.NewEncoder(&s)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(val); err != nil {
		return result
	}
	s.WriteByte('}')
	out := make([]byte, 0, len(result)-len(raw)+s.Len())
	out = append(out, result[:at]...)
	out = append(out, s.Bytes()...)
	out = append(out, result[at+len(raw):]...)
	return out
}

// rawContentKey is the _meta key under which keepContent hands the proxy
// a result's content blocks as the server sent them, across the SDK's
// decoding. Its value holds rawNonce, as a stand-in's mark does, so that
// a downstream server cannot forge it.
const rawContentKey = "agentvalues/raw-content"

// keepContent returns result with its content array, as the server sent
// it, in its _meta under rawContentKey, when the array holds a block that
// is not text: the SDK decodes such a block and would encode it again in
// its own way (its member order, its numbers, without members it does not
// know), and the proxy stores the blocks as they came (keptContent). A
// result of text blocks alone, or one it cannot read so (a member twice, a
// _meta that is not an object), is returned as it is. result is valid JSON,
// as the Fix hook's is (it is not checked again: keepContent runs for
// every result the SDK decodes).
func keepContent(result json.RawMessage) json.RawMessage {
	r := bytes.TrimSpace(result)
	if len(r) == 0 || r[0] != '{' {
		return result
	}
	var content, meta []byte
	contents, metas := 0, 0
	jsontext.EachChild(r, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "content"):
			content, contents = v, contents+1
		case jsontext.KeyEquals(k, "_meta"):
			meta, metas = v, metas+1
		}
		return true
	})
	if contents != 1 || content[0] != '[' || metas > 1 || meta != nil && meta[0] != '{' || !otherBlock(content) {
		return result
	}
	mark := make([]byte, 0, len(content)+len(content)/8+96)
	mark = append(mark, `"`+rawContentKey+`":{"nonce":"`+rawNonce+`","blocks":`...)
	mark = jsontext.AppendQuote(mark, content)
	mark = append(mark, '}')
	out := make([]byte, 0, len(r)+len(mark)+16)
	if meta == nil {
		end := len(r) - 1 // the closing brace
		out = append(out, r[:end]...)
		out = append(out, `,"_meta":{`...)
		out = append(out, mark...)
		return append(out, "}}"...)
	}
	// Last, so that it wins over a member of that name the server wrote
	// (the SDK decodes the last of a name).
	at := offsetIn(r, meta) + len(meta) - 1 // its closing brace
	out = append(out, r[:at]...)
	if len(bytes.TrimSpace(meta[1:len(meta)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, mark...)
	return append(out, r[at:]...)
}

// otherBlock reports whether the content array content holds a block that
// is not of type "text".
func otherBlock(content []byte) bool {
	other := false
	jsontext.EachChild(content, func(_, blk []byte) bool {
		typ, ok := []byte(nil), blk[0] == '{'
		if ok {
			typ, ok = jsontext.Member(blk, "type")
		}
		other = !ok || typ[0] != '"' || !jsontext.KeyEquals(typ, "text")
		return !other
	})
	return other
}

// keptContent returns the content blocks keepContent kept in the result's
// _meta, and removes them from it; nil when it kept none (a key of that
// name without this process's nonce is removed too).
func keptContent(res *mcp.CallToolResult) []byte {
	mark, found := res.Meta[rawContentKey]
	if !found {
		return nil
	}
	delete(res.Meta, rawContentKey)
	m, _ := mark.(map[string]any)
	if nonce, _ := m["nonce"].(string); nonce != rawNonce {
		return nil
	}
	blocks, _ := m["blocks"].(string)
	return []byte(blocks)
}

// unwrapStructured returns the raw JSON of a result's structured content as
// the downstream server sent it, or nil if there is none.
func unwrapStructured(sc any) (json.RawMessage, error) {
	if sc == nil {
		return nil, nil
	}
	if m, ok := sc.(map[string]any); ok && len(m) == 1 {
		if s, ok := m[rawStructuredKey].(string); ok {
			if s == "null" {
				return nil, nil
			}
			return json.RawMessage(s), nil
		}
		if s, ok := m[rawStructuredBase64Key].(string); ok {
			return base64.StdEncoding.DecodeString(s)
		}
	}
	// Not wrapped (rawConn left it alone): the decoded form is all there is.
	return json.Marshal(sc)
}
