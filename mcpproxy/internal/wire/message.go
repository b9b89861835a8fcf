package wire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// take returns the message of a line (see message), and frees the line
// when it is to be freed, copying first what the message holds of it.
func (c *Conn) take(ln *line) jsonrpc.Message {
	msg := c.message(*ln)
	if ln.free != nil {
		msg = detach(msg, ln.data)
		ln.free()
		ln.data, ln.free = nil, nil // no pointer into the unmapped range is left for the collector to find
	}
	return msg
}

// bom is the UTF-8 byte order mark, which some writers put before a line.
var bom = []byte("\xef\xbb\xbf")

// message turns one line into the message to deliver, or nil when there is
// none: the line was blank, or was malformed and has been answered or
// logged.
func (c *Conn) message(ln line) jsonrpc.Message {
	if ln.over {
		return c.tooLarge(ln)
	}
	data := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(ln.data), bom))
	if len(data) == 0 {
		return nil
	}
	mapped := ln.free != nil // a line in a mapping of its own
	env, ok := plainEnvelope(data, c.hooks.Outline)
	if !ok && !c.server && !utf8.Valid(data) {
		// A string holding bytes that are not UTF-8, which the scan
		// refuses and the SDK takes: read as the SDK reads them, each such
		// byte as U+FFFD, whichever path takes the message (see doc.go).
		data = jsontext.AppendValidUTF8(make([]byte, 0, len(data)+len(data)/8+8), data)
		mapped = false
		env, ok = plainEnvelope(data, c.hooks.Outline)
	}
	if ok {
		if mapped {
			env.line.Release, env.line.Move = releasePages, movePages
		}
		if msg := c.fromEnvelope(env); msg != nil {
			return c.offer(msg, true)
		}
	}
	if c.server && !json.Valid(data) {
		// The SDK decodes the first value of a line and drops the rest.
		c.reply(nil, jsonrpc.CodeParseError, "Parse error: "+jsonProblem(data))
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err == nil {
		if resp, ok := msg.(*jsonrpc.Response); ok && !c.server {
			// The SDK makes an integer of any number id (8.5 is 8): the id
			// as written must be one idOf takes, or it names no call.
			raw, id, exact := responseID(data)
			if !exact || !c.settle(resp, ResultLine{}) {
				// Its id is no call's (any more: a call cancelled is
				// forgotten), and names none of the SDK's.
				c.stray(raw, id, exact)
				return nil
			}
		}
		return c.offer(msg, false)
	}
	if c.server {
		c.answer(data, err)
		return nil
	}
	return c.salvage(data, err)
}

// offer shows a request from the client to the Take hook, if any, and
// returns the message to deliver: nil when the hook took it. valid is
// what the hook is told of the request's params (see Hooks.Take).
func (c *Conn) offer(msg jsonrpc.Message, valid bool) jsonrpc.Message {
	if req, ok := msg.(*jsonrpc.Request); ok && c.hooks.Take != nil && c.hooks.Take(req, valid) {
		if c.server && valid {
			c.taken = req // made by fromEnvelope, and its own: reused
		}
		return nil
	}
	return msg
}

// rawEnvelopeMin is the size from which the client side takes a response
// apart from the read loop.
const rawEnvelopeMin = 64 << 10

// An envelope is the members of a plain JSON-RPC message, read from its
// bytes: slices of the line, nil when absent.
type envelope struct {
	id, method, params, result []byte

	line ResultLine // of a response's result
}

// A ResultLine is what the Fix hook is told of the line a result came in.
type ResultLine struct {
	// Valid reports that the line's own scan read the result as
	// jsontext.Valid reads JSON, and found it valid (a plain envelope): a
	// Fix hook need not validate it so again. It is false for a result
	// the SDK's decoding read, which is valid JSON as encoding/json reads
	// it but may not be as jsontext does (one nested deeper than MaxDepth,
	// say).
	Valid bool
	// Outline is the outline of the result the Outline hook asks for: its
	// spans in the result, its depths from the result's members (1); nil
	// when the line's scan made none (a line under outlineMin bytes, or a
	// result of more parts than the outline keeps).
	Outline []jsontext.Part
	// Release, for a line in a mapping of its own, gives the pages that
	// lie wholly within a slice of the line back to the system: Fix calls
	// it on the parts of the result it has read for the last time (a page
	// released reads as zeros), so that the line's memory shrinks as the
	// value made from it grows. Nil otherwise.
	Release func([]byte)
	// Move, for a line in a mapping of its own, moves the pages of src, a
	// part of the line starting on a page and a whole number of pages
	// long, to dst, as long and starting on a page, which nothing has
	// written to, and reports whether it could (else nothing moved). Fix
	// decodes a large text in place in the line and moves the pages of
	// the decoding into the value (and those of large structured content
	// into its copy), so that the value's memory is not faulted in a
	// second time. src reads as zeros after. Nil otherwise.
	Move func(dst, src []byte) bool
	// Inner, when not nil, is the Shape of the container of the result
	// that the Outline names with WithInner, as jsontext.Scan with the
	// limits given there records it, made by the line's scan: its
	// offsets are InnerBase more than offsets in the container, whose
	// span in the result is InnerVal. Nil when the line's scan made none
	// (no outline, or no such container).
	Inner     *jsontext.Shape
	InnerVal  jsontext.Span
	InnerBase int
}

// plainEnvelope reads data as a plain JSON-RPC 2.0 message: a valid object
// whose members are "jsonrpc":"2.0" and any of id, method, params and
// result, with no member twice, no null and no escape in the method. The
// SDK's decoding costs a full scan and copy of the message and a 32 KiB
// buffer per call; anything but a plain message (errors, extra members,
// keys in another case, which the SDK matches) reports false and is left
// to the SDK, as is a message nested deeper than MaxDepth, so that it
// fails as the SDK fails it.
//
// A line of outlineMin bytes or more has its result outlined as ol says.
func plainEnvelope(data []byte, ol Outline) (envelope, bool) {
	return scanEnvelope(data, ol, len(data) >= outlineMin)
}

// scanEnvelope is plainEnvelope, outlining the result as ol says when
// outlined is set.
func scanEnvelope(data []byte, ol Outline, outlined bool) (envelope, bool) {
	var env envelope
	if data[0] != '{' {
		return env, false
	}
	// One pass validates the line, measures its depth and finds its
	// members, which are never more than envelopeMembers; for a large
	// line, it also outlines a result, so that fix finds the large values
	// in it without reading past them again. A small line's pass is
	// Members', which costs a fifth of Scan's and allocates nothing.
	var (
		sh     jsontext.Shape
		head   [envelopeMembers + 1]jsontext.Child
		err    error
		member []jsontext.Child
	)
	if outlined && ol.envelope != nil {
		lim := jsontext.Limits{Head: len(head), Outline: ol.max, Descend: ol.envelope, Inner: ol.inner, InnerLimits: ol.innerLim}
		_, sh, err = jsontext.Scan(data, lim)
		member = sh.Head
	} else {
		sh.Count, sh.Depth, err = jsontext.Members(data, head[:])
		member = head[:min(sh.Count, len(head))]
	}
	if err != nil || sh.Count > envelopeMembers || sh.Depth > MaxDepth {
		return env, false
	}
	var version []byte
	for _, c := range member {
		k, v := c.Key.Of(data), c.Val.Of(data)
		var at *[]byte
		switch {
		case jsontext.KeyEquals(k, "jsonrpc"):
			at = &version
		case jsontext.KeyEquals(k, "id"):
			at = &env.id
		case jsontext.KeyEquals(k, "method"):
			at = &env.method
		case jsontext.KeyEquals(k, "params"):
			at = &env.params
		case jsontext.KeyEquals(k, "result"):
			at = &env.result
		}
		if at == nil || *at != nil || v[0] == 'n' {
			return env, false
		}
		*at = v
	}
	if env.result != nil && sh.Outline != nil {
		at := offsetIn(data, env.result)
		env.line.Outline = resultOutline(sh.Outline, at)
		if sh.Inner != nil && sh.InnerVal.Start > at && sh.InnerVal.End <= at+len(env.result) {
			env.line.Inner, env.line.InnerBase = sh.Inner, sh.InnerVal.Start
			env.line.InnerVal = jsontext.Span{Start: sh.InnerVal.Start - at, End: sh.InnerVal.End - at}
		}
	}
	ok := version != nil && version[0] == '"' && jsontext.KeyEquals(version, "2.0") &&
		(env.method == nil || env.method[0] == '"' && bytes.IndexByte(env.method, '\\') < 0) &&
		(env.method == nil) != (env.result == nil) && (env.params == nil || env.method != nil)
	env.line.Valid = ok // the pass above read the whole line as jsontext.Valid does
	return env, ok
}

// envelopeMembers is the most members a plain envelope has: jsonrpc, id,
// method, params and result, each once.
const envelopeMembers = 5

// outlineMin is the size from which a line's scan outlines its result:
// below it, reading a result again costs less than the outline.
const outlineMin = 64 << 10

// An Outline says what a client-side connection outlines of the result of
// a response line of outlineMin bytes or more as it scans the line, for
// the Fix hook (see ResultLine): at most max parts, of the containers that
// descend names (its depths are from the result's members, 1). The zero
// value outlines nothing.
type Outline struct {
	max      int
	descend  jsontext.Descend
	envelope jsontext.Descend // descend from the envelope's members
	inner    jsontext.Descend // WithInner's, from the envelope's members
	innerLim *jsontext.Limits
}

// NewOutline returns the outline of at most max parts that descend names.
func NewOutline(max int, descend jsontext.Descend) Outline {
	return Outline{max: max, descend: descend, envelope: func(depth int, key []byte) bool {
		if depth == 1 {
			return key != nil && jsontext.KeyEquals(key, "result")
		}
		return descend(depth-1, key)
	}}
}

// WithInner returns ol that also has the line's scan record the Shape of
// the first container of the result's outline, at depth 1 (a member of
// the result) or deeper, that ol does not descend into and inner names
// (asked as descend is), as jsontext.Scan with lim records it: the
// ResultLine's Inner (see jsontext.Limits.Inner). A Fix hook that would
// scan that container to index it so reads it once, not twice.
func (ol Outline) WithInner(inner jsontext.Descend, lim *jsontext.Limits) Outline {
	ol.inner = func(depth int, key []byte) bool { return depth > 1 && inner(depth-1, key) }
	ol.innerLim = lim
	return ol
}

// ResultOf returns the result of the plain response line, and its outline
// as Fix is told it for a line of outlineMin bytes or more, whatever the
// line's size (nil when the result has more parts than ol keeps); ok is
// false when line is not a plain response.
func (ol Outline) ResultOf(line []byte) (result []byte, parts []jsontext.Part, ok bool) {
	env, ok := scanEnvelope(line, ol, true)
	if !ok || env.result == nil {
		return nil, nil, false
	}
	return env.result, env.line.Outline, true
}

// resultOutline returns the parts of the outline of an envelope that are
// in its result, which starts at offset at: their spans made relative to
// the result, their depths to its members. It reuses ol's memory.
func resultOutline(ol []jsontext.Part, at int) []jsontext.Part {
	out := ol[:0]
	for _, p := range ol {
		if p.Depth < 2 {
			continue
		}
		p.Depth--
		p.Val.Start, p.Val.End = p.Val.Start-at, p.Val.End-at
		if p.Key != (jsontext.Span{}) {
			p.Key.Start, p.Key.End = p.Key.Start-at, p.Key.End-at
		}
		out = append(out, p)
	}
	return out
}

// fromEnvelope makes the message the SDK would decode from a plain
// envelope: a request or notification, or, on the client side, a response
// to a pending call, which it settles. It returns nil for anything else,
// which the SDK is left to decode.
func (c *Conn) fromEnvelope(env envelope) jsonrpc.Message {
	var id jsonrpc.ID
	if env.id != nil {
		var ok bool
		if id, ok = idOf(env.id); !ok {
			return nil
		}
	}
	if env.method != nil {
		var req *jsonrpc.Request
		if c.server { // read by the read loop alone: see Conn.taken
			req, c.taken = c.taken, nil
		}
		if req == nil {
			req = new(jsonrpc.Request)
		}
		*req = jsonrpc.Request{ID: id, Method: methodName(env.method[1 : len(env.method)-1])}
		if env.params != nil {
			req.Params = json.RawMessage(env.params)
		}
		return req
	}
	if c.server || !id.IsValid() {
		return nil
	}
	// A response to no pending call (one cancelled is forgotten) goes
	// nowhere, not to the SDK under its number on the wire, which may be
	// one of the SDK's own ids.
	call, pending := c.calls.Done(id)
	if !pending {
		return nil
	}
	// The result is a slice of the line: the SDK would scan it again and
	// copy it.
	resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(env.result)}
	c.settled(resp, call, env.line)
	return resp
}

// settle ends the call a response answers: it gives the response the
// call's own id in place of the one on the wire, and applies fix (to which
// it passes what it knows of the result's line). It reports false when
// the response answers no pending call.
func (c *Conn) settle(resp *jsonrpc.Response, line ResultLine) bool {
	call, ok := c.calls.Done(resp.ID)
	if !ok {
		return false
	}
	c.settled(resp, call, line)
	return true
}

// settled is settle once the pending call the response answers is known
// and forgotten.
func (c *Conn) settled(resp *jsonrpc.Response, call Pending, line ResultLine) {
	resp.ID = call.ID
	if c.hooks.Fix == nil || resp.Error != nil {
		return
	}
	res, werr := c.hooks.Fix(call.Method, call.Tag, resp.Result, line)
	if werr != nil {
		resp.Result, resp.Error = nil, werr
		return
	}
	resp.Result = res
}

// frequentMethods are the methods of the messages a session sends on
// every call, whose name methodName returns without a copy.
var frequentMethods = [...]string{
	"tools/call",
	"notifications/progress",
	"notifications/cancelled",
	"notifications/message",
	"ping",
}

// methodName returns name, the raw method of a message (its unquoted
// text), as a string: one of frequentMethods when it is one, so that the
// reader does not copy the name of every call.
func methodName(name []byte) string {
	for _, m := range frequentMethods {
		if string(name) == m {
			return m
		}
	}
	return string(name)
}
