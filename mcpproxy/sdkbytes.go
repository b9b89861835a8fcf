package mcpproxy

// This file is the only place in the package that must match the SDK byte
// for byte: what the raw routes write where the SDK would write it, and
// read as the SDK would decode it. The SDK server writes the response line
// and encodes its result (rawLine, encodeResponse, rawResponse,
// encodeResult); the SDK client writes the downstream request and its
// cancellation (callMeta, callFrame, cancelNote, noteDiscover), decodes the response
// (decodeResult, textResult; sdkDecodes for the raw result route) and
// words the errors of a call that ends without one (callError); the SDK
// server decodes a request's params (callParams). TestRawCallMatchesSDKPath,
// TestRawCallDownstreamRequest, FuzzRawCall, FuzzPresentRaw and
// FuzzAppendString hold each to the SDK: a new SDK version is checked here
// first. (The wire layer reads the JSON-RPC envelope of a message as the
// SDK decodes it, held to the SDK by FuzzPlainEnvelope.)

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeResponse returns the line of resp as the SDK writes it. A result
// with a number id, the common case, is written around the result's bytes
// (which the SDK would compact again: they are compact).
func encodeResponse(resp *jsonrpc.Response) []byte {
	if n, ok := resp.ID.Raw().(int64); ok && resp.Error == nil && len(resp.Result) > 0 {
		b := make([]byte, 0, len(resp.Result)+48)
		b = appendResponseHead(b, n)
		b = append(b, resp.Result...)
		return append(b, "}\n"...)
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil { // cannot happen: the result is JSON the proxy made
		data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: resp.ID, Error: fmt.Errorf("mcpproxy: encoding a result: %w", err)})
	}
	return append(data, '\n')
}

// appendResponseHead appends what comes before the result in the line of
// a response of the number id n, as the SDK writes it.
func appendResponseHead(b []byte, n int64) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, `,"result":`...)
}

// rawLine returns the response line to the raw call req, whose id is
// req.id, and whose outcome is res or err, as the SDK server writes it
// (rawResponse, encodeResponse). A result appendResult writes, under a
// number id, is written once, into dst's memory (grown to about the
// line's size when it has not the room), rather than encoded and then
// copied into the line; any other line is new memory.
func rawLine(dst []byte, req *rawRequest, res *mcp.CallToolResult, err error) []byte {
	if n, ok := req.id.Raw().(int64); ok && err == nil {
		if req.serverInfo != nil { // see rawResponse
			if res.Meta == nil {
				res.Meta = mcp.Meta{}
			}
			res.Meta[mcp.MetaKeyServerInfo] = req.serverInfo
		}
		b := appendResponseHead(slices.Grow(dst[:0], rawLineSize(res)), n)
		if out, ok := appendResult(b, res); ok {
			return append(appendResultType(out, req, res), "}\n"...)
		}
	}
	resp := rawResponse(req, res, err)
	resp.ID = req.id
	return encodeResponse(resp)
}

// rawLineSize is about the size of the response line rawLine writes for
// res: its text and _meta, and some room for their escapes.
func rawLineSize(res *mcp.CallToolResult) int {
	n := 128 // the envelope, the members' names and a resultType
	for k, v := range res.Meta {
		n += len(k) + 8
		switch v := v.(type) {
		case string:
			n += len(v) + len(v)/8 + 16
		case json.RawMessage:
			n += len(v)
		}
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			n += len(tc.Text) + len(tc.Text)/8 + 64 // the block, and escapes: a quote, <, > and & are 2 to 6 bytes
		}
	}
	return n
}

// rawResponse is the response to the raw call req whose outcome is res or
// err, as the SDK server writes it.
func rawResponse(req *rawRequest, res *mcp.CallToolResult, err error) *jsonrpc.Response {
	if err != nil {
		return &jsonrpc.Response{Error: err}
	}
	if req.serverInfo != nil { // as the SDK server annotates a result at 2026-07-28
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[mcp.MetaKeyServerInfo] = req.serverInfo
	}
	out, err := encodeResult(res)
	if err != nil {
		return &jsonrpc.Response{Error: fmt.Errorf("mcpproxy: encoding a result: %w", err)}
	}
	return &jsonrpc.Response{Result: appendResultType(out, req, res)}
}

// appendResultType adds to out, the encoded result res of the raw call
// req, its resultType, at protocol 2026-07-28, which the SDK encodes
// after the other members.
func appendResultType(out []byte, req *rawRequest, res *mcp.CallToolResult) []byte {
	if req.serverInfo != nil && len(out) > 0 && out[len(out)-1] == '}' {
		kind := resultComplete
		if res.InputRequests != nil {
			kind = resultInputRequired
		}
		out = append(out[:len(out)-1], `,"resultType":"`+kind+`"}`...)
	}
	return out
}

// resultComplete is the resultType of a complete result (protocol
// 2026-07-28), as against one that asks the client for input.
const resultComplete = "complete"

// resultInputRequired is the resultType of a result that asks the client
// for input (protocol 2026-07-28).
const resultInputRequired = "input_required"

// encodeResult encodes res as the SDK server does (encoding/json, HTML not
// escaped around the result's own encoding, which escapes it). A result
// of the shape the proxy builds most (a _meta of strings and raw JSON,
// text blocks with no _meta or annotations, no structured content) is
// written directly, each string and raw value encoded by encoding/json,
// to the same bytes at a fraction of the reflection; tests hold the two
// to the same bytes.
func encodeResult(res *mcp.CallToolResult) ([]byte, error) {
	if out, ok := appendResult(make([]byte, 0, 256), res); ok {
		return out, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// appendResult appends res's JSON to b, as CallToolResult.MarshalJSON
// writes it, and reports false for a result it does not write.
func appendResult(b []byte, res *mcp.CallToolResult) ([]byte, bool) {
	if res.StructuredContent != nil || res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() {
		return nil, false
	}
	b = append(b, '{')
	if len(res.Meta) > 0 {
		var few [4]string // the handle's key, the content handle's, serverInfo: on the stack
		keys := few[:0]
		for k := range res.Meta {
			keys = append(keys, k)
		}
		slices.Sort(keys) // as encoding/json orders a map's keys
		b = append(b, `"_meta":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			switch v := res.Meta[k].(type) {
			case string:
				b = appendString(b, v)
			case json.RawMessage:
				enc, _ := json.Marshal(v)
				if enc == nil { // invalid raw JSON
					return nil, false
				}
				b = append(b, enc...)
			default: // b is dropped: the caller encodes res another way
				return nil, false
			}
		}
		b = append(b, "},"...)
	}
	b = append(b, `"content":`...)
	if res.Content == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range res.Content {
			tc, ok := c.(*mcp.TextContent)
			if !ok || tc.Meta != nil || tc.Annotations != nil {
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			b = appendString(b, tc.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), true
}

// appendString appends s as encoding/json encodes a string (HTML
// escaped), which cannot fail: '"' and '\\' escaped, control characters
// as \b, \f, \n, \r, \t or \u00XX, '<', '>' and '&' as \u003c, \u003e and
// \u0026, U+2028 and U+2029 as \u2028 and \u2029, and each byte of invalid
// UTF-8 as \ufffd (FuzzAppendString holds it to encoding/json). The
// previews the proxy writes hold non-ASCII ('…', '·') in nearly every
// result, which encoding/json would take a reflection and a copy to write.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // of the run of bytes written as they are
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			// '<', '>' and '&' get AppendEscape's \u00XX, as a control
			// character without a short escape does.
			b = jsontext.AppendEscape(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', '0'+byte(r&0xF))
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// callParams reads the params of a nominal tools/call: an object of a
// string name and, if any, an arguments object and a _meta object, and
// nothing else. valid reports that params are known to be valid as
// jsontext.Valid reads JSON (see wire.Hooks.Take), which is then not
// checked again.
func callParams(params json.RawMessage, valid bool) (name string, args, meta []byte, ok bool) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || p[0] != '{' || !valid && jsontext.Valid(p) != nil {
		return "", nil, nil, false
	}
	var rawName []byte
	ok = true
	jsontext.EachChild(p, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "name") && rawName == nil && v[0] == '"':
			rawName = v
		case jsontext.KeyEquals(k, "arguments") && args == nil && (v[0] == '{' || v[0] == 'n'):
			args = v
		case jsontext.KeyEquals(k, "_meta") && meta == nil && v[0] == '{':
			meta = v
		default:
			ok = false
		}
		return ok
	})
	if !ok || rawName == nil {
		return "", nil, nil, false
	}
	if len(args) > 0 && args[0] == 'n' {
		args = nil // null: none, as toolArgs reads it
	}
	return unquote(rawName), args, meta, true
}

// errRawClosed is why a raw call fails when the downstream connection
// ends under it (wire.ErrClosed), worded as the SDK words its own.
var errRawClosed = fmt.Errorf("%w: calling %q: the downstream connection is closed", mcp.ErrConnectionClosed, "tools/call")

// callMeta returns the _meta of a raw call's tools/call request as the
// SDK client writes it, nil for none: meta is the request's own _meta (nil
// for none), to which the SDK client's own (downMeta, at protocol
// 2026-07-28; nil before) is added, not over the caller's keys.
func callMeta(meta mcp.Meta, downMeta *sdkMeta) ([]byte, error) {
	var metaJSON []byte
	switch {
	case downMeta != nil && meta == nil: // the common case: the SDK client's alone
		metaJSON = downMeta.json
	case downMeta != nil:
		for k, v := range downMeta.meta { // as the SDK client adds its own: not over the caller's
			if _, ok := meta[k]; !ok {
				meta[k] = v
			}
		}
	}
	if meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		metaJSON = b
	}
	return metaJSON, nil
}

// callError is the error of a raw call that ended without a response,
// worded as the SDK client words its own: the downstream connection ended
// (wire.ErrClosed), or the request could not be written.
func callError(err error) error {
	if errors.Is(err, wire.ErrClosed) {
		return errRawClosed
	}
	return fmt.Errorf("calling %q: %w", "tools/call", err)
}

// rawJoinMax is the size up to which a raw call's request is joined into
// one buffer; a larger one is written in its parts, its arguments never
// copied.
const rawJoinMax = 16 << 10

// callFrame returns the line of a tools/call request whose id on the wire
// is wire, of the tool name with the arguments args and the _meta meta
// (callMeta's; nil for none), as the SDK client writes it: in one piece up
// to rawJoinMax bytes, or for a call made by the goroutine reading the
// client (onReader, whose arguments are small); otherwise in pieces, the
// arguments not copied. A frame of one piece is returned in one's memory.
func callFrame(wire jsonrpc.ID, onReader bool, meta []byte, name string, args []byte, one *[1][]byte) [][]byte {
	const before, after = `{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":{`
	const metaKey, nameKey, argsKey, end = `"_meta":`, `"name":`, `,"arguments":`, "}}\n"
	var num [20]byte
	wireNum := strconv.AppendInt(num[:0], wire.Raw().(int64), 10)
	size := len(before) + len(wireNum) + len(after) + len(nameKey) + len(name) + 2 + len(argsKey)
	if meta != nil {
		size += len(metaKey) + len(meta) + 1
	}
	n := size + len(args) + len(end)
	join := n <= rawJoinMax || onReader // one buffer, one write (a light call's is small)
	if join {
		size = n
	}
	head := append(append(append(make([]byte, 0, size), before...), wireNum...), after...)
	if meta != nil {
		head = append(append(append(head, metaKey...), meta...), ',')
	}
	head = jsontext.AppendQuote(append(head, nameKey...), []byte(name))
	head = append(head, argsKey...)
	if join {
		one[0] = append(append(head, args...), end...)
		return one[:]
	}
	return [][]byte{head, args, []byte(end)}
}

// cancelNote returns the line of the notifications/cancelled request that
// cancels the call whose id on the wire is wire, for the reason why, as
// the SDK client writes it.
func cancelNote(wire jsonrpc.ID, why string) []byte {
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":`)
	note = jsontext.AppendQuote(note, []byte(why))
	note = append(note, `,"requestId":`...)
	note = strconv.AppendInt(note, wire.Raw().(int64), 10)
	return append(note, "}}\n"...)
}

// An sdkMeta is what noteDiscover keeps.
type sdkMeta struct {
	meta mcp.Meta
	json []byte // meta, as json.Marshal encodes it
}

// noteDiscover keeps the _meta of the SDK client's first server/discover
// request, req when it is one, which the raw call route's requests carry
// too: the protocol version, client info and capabilities the SDK client
// sends on every request at protocol 2026-07-28. It keeps it decoded and
// encoded as callHead encodes a _meta, so that a request carrying it alone
// is not encoded again.
func (c *ownLine) noteDiscover(req *jsonrpc.Request) {
	if req.Method != "server/discover" || c.sdkMeta.Load() != nil {
		return
	}
	raw, ok := paramsMeta(req.Params)
	if !ok {
		return
	}
	// Each value kept as its JSON: the SDK encodes the client's
	// capabilities from a struct, in its fields' order, which a value
	// decoded into a map would lose.
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return
	}
	m := make(mcp.Meta, len(members))
	for k, v := range members {
		m[k] = v
	}
	enc, err := json.Marshal(m)
	if err != nil {
		return
	}
	c.sdkMeta.Store(&sdkMeta{meta: m, json: enc})
}

// decodeResult returns the CallToolResult of a response, or the error the
// SDK client returns for it: the response's error, or why the result does
// not decode. A result textResult reads is read into tr (see textResult).
func decodeResult(resp *jsonrpc.Response, tr *textRead) (*mcp.CallToolResult, error) {
	if resp.Error != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", resp.Error)
	}
	if res, ok := textResult(resp.Result, tr); ok {
		return res, nil
	}
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(resp.Result, res); err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	return res, nil
}

// textResult reads a result of text blocks alone from its bytes, as the
// SDK would decode it: an object of a content array whose blocks are each
// exactly a type "text" and a text, and maybe a boolean isError, a
// resultType "complete" (which a server at protocol 2026-07-28 adds to
// every result) and a _meta of the protocol's own keys alone (the
// serverInfo such a server adds), which the result leaves out: the proxy
// forwards no protocol key of a result's _meta (see forwardMeta). It
// reports false for any other result, which the SDK's types decode.
//
// The result, with its first block, is read into tr, a zero textRead (or
// one reset: see rawAnswer), or into a new one when tr is nil.
func textResult(r []byte, tr *textRead) (*mcp.CallToolResult, bool) {
	if jsontext.Valid(bytes.TrimSpace(r)) != nil {
		return nil, false
	}
	return readTextResult(r, tr)
}

// readTextResult is textResult for a result r known to be valid as
// jsontext.Valid reads JSON.
func readTextResult(r []byte, tr *textRead) (*mcp.CallToolResult, bool) {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || r[0] != '{' {
		return nil, false
	}
	if tr == nil {
		tr = new(textRead)
	}
	res := &tr.res
	var content []byte
	ok, seenError, seenType, seenMeta := true, false, false, false
	jsontext.EachChild(r, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "content") && content == nil && v[0] == '[':
			content = v
		case jsontext.KeyEquals(k, "isError") && !seenError && (v[0] == 't' || v[0] == 'f'):
			res.IsError, seenError = v[0] == 't', true
		case jsontext.KeyEquals(k, "resultType") && !seenType && v[0] == '"' && jsontext.KeyEquals(v, resultComplete):
			seenType = true
		case jsontext.KeyEquals(k, "_meta") && !seenMeta && v[0] == '{':
			seenMeta = true
			jsontext.EachChild(v, func(mk, _ []byte) bool {
				ok = bytes.HasPrefix(mk, []byte(`"`+protocolMetaPrefix)) && bytes.IndexByte(mk, '\\') < 0
				return ok
			})
		default:
			ok = false
		}
		return ok
	})
	if !ok || content == nil {
		return nil, false
	}
	res.Content = tr.blocks[:0]
	jsontext.EachChild(content, func(_, block []byte) bool {
		var typ, text []byte
		ok = block[0] == '{'
		if ok {
			jsontext.EachChild(block, func(k, v []byte) bool {
				switch {
				case jsontext.KeyEquals(k, "type") && typ == nil:
					typ = v
				case jsontext.KeyEquals(k, "text") && text == nil:
					text = v
				default:
					ok = false
				}
				return ok
			})
		}
		ok = ok && typ != nil && typ[0] == '"' && jsontext.KeyEquals(typ, "text") && text != nil && text[0] == '"'
		if ok {
			tc := &tr.first
			if len(res.Content) > 0 {
				tc = new(mcp.TextContent)
			}
			tc.Text = unquote(text)
			res.Content = append(res.Content, tc)
		}
		return ok
	})
	return res, ok
}

// A textRead is what textResult allocates, at once, for a result of up
// to two blocks: the result, its content array and its first block.
type textRead struct {
	res    mcp.CallToolResult
	blocks [2]mcp.Content
	first  mcp.TextContent
}

// unquote returns the decoding of raw, a valid JSON string, in one
// allocation: a string without an escape is its bytes; another is decoded
// into a buffer of its size that becomes the string.
func unquote(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
	}
	b := jsontext.AppendUnquoted(make([]byte, 0, len(body)), raw)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

// sdkDecodes reports whether the SDK client decodes the tools/call result
// r, which mcpresult.Parse read as res: it does when res is plain; else
// the members Parse does not read (a text block's others, the result's
// others) are decoded as the SDK decodes them into its own types, a block
// at a time and without its text, which Parse read as one string.
func sdkDecodes(r []byte, res *mcpresult.Result) bool {
	if res.Plain() {
		return true
	}
	others := []byte{'{'}
	appendOther := func(k, v []byte) {
		if len(others) > 1 {
			others = append(others, ',')
		}
		others = append(append(append(others, k...), ':'), v...)
	}
	// The members Parse kept, when its blocks are plain: the result is not
	// walked again (its text skipped once more, quote by quote).
	if plainBlocks, kept := res.Others(appendOther); kept && plainBlocks {
		return json.Unmarshal(append(others, '}'), new(mcp.CallToolResult)) == nil
	}
	others = others[:1]
	r = r[jsontext.SkipSpace(r, 0):]
	ok := true
	jsontext.EachChild(r, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "content") && v[0] == '[':
			jsontext.EachChild(v, func(_, blk []byte) bool {
				if blk[0] == '{' && jsontext.CountChildren(blk) > 2 {
					b := appendMembersBut([]byte(`{"content":[`), blk, "text")
					ok = json.Unmarshal(append(b, "]}"...), new(mcp.CallToolResult)) == nil
				}
				return ok
			})
		case jsontext.KeyEquals(k, "content"), jsontext.KeyEquals(k, "structuredContent"),
			jsontext.KeyEquals(k, "isError"), jsontext.KeyEquals(k, "_meta"):
			// Read by Parse (structured content is decoded as any).
		default:
			appendOther(k, v)
		}
		return ok
	})
	return ok && json.Unmarshal(append(others, '}'), new(mcp.CallToolResult)) == nil
}

// appendMembersBut appends the object obj without its members named key.
func appendMembersBut(b, obj []byte, key string) []byte {
	b = append(b, '{')
	n := 0
	jsontext.EachChild(obj, func(k, v []byte) bool {
		if jsontext.KeyEquals(k, key) {
			return true
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(append(append(b, k...), ':'), v...)
		return true
	})
	return append(b, '}')
}
