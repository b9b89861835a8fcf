package mcpproxy

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The session layer's fast path, and cancellation over Streamable HTTP.
//
// Through the SDK's handler a small call costs the proxy several times
// what it costs over a line connection: the handler decodes the body, a
// stream is made for the request, the SDK server dispatches the call to
// the mirrored tool's handler, the SDK client encodes the downstream
// request and decodes its response, and the result is encoded and written
// as an event, with goroutine hand-offs between most of these. So the
// session layer answers the nominal call of a mirrored tool itself, on the
// raw call route (call_rawcall.go: the same preparation, downstream call,
// result rule and encoding as over a line connection), and writes the
// response as the one JSON object of the answer (Content-Type
// application/json, which the specification allows for a request answered
// with one response and nothing before it). Every bound of the layers
// above still applies: the request has passed the token, the Origin,
// MaxRequests, MaxMessage and MaxBodyBytes, and its session exists.
//
// A call takes the fast path when the raw call route would take it on a
// line connection (see the package documentation, How a call travels:
// the tool is a mirrored one, on a server reached over the proxy's own
// line connection, one store per session or one for all), and:
//
//   - its POST is one tools/call request (not a batch) of a session the
//     SDK initialized, at a protocol before 2026-07-28 (the
//     Mcp-Protocol-Version header, if any, naming the session's), with
//     params of a name and arguments (smaller than stashMin) alone: no
//     _meta, so no progress token, whose progress would need an event
//     stream; no Last-Event-ID and no other Mcp- header than the session
//     and protocol ones; not a DNS-rebound request (the SDK refuses
//     those), and the bearer token's user, if the session has one, the
//     session's;
//   - the client declared neither sampling nor elicitation (a server asks
//     for those within a call, on the call's own stream, which an answer
//     of one JSON object cannot carry), and roots only if its standalone
//     stream (GET) is open, where a roots/list the server sends during
//     the call then goes (as the SDK sends what belongs to no stream).
//
// Anything else goes to the SDK's handler as before. A request id already
// in flight on the fast path is refused with 400, as the SDK refuses one
// in flight on its own.
//
// Cancellation. The specification (2025-06-18, Cancellation) says the
// receiver of notifications/cancelled should not answer the cancelled
// request; over Streamable HTTP, the POST that carried the request is
// then answered 200 with an event stream that ends without a message
// (the specification lets a server close such a stream; the client, which
// cancelled, no longer waits for it). On the fast path the call is
// cancelled downstream with the client's reason, as on a line connection,
// and the notification goes no further: the SDK does not know the id,
// and could take it for one of its own. A request the SDK answers is
// cancelled by the SDK (downstream with the SDK's reason, "context
// canceled"), and its response, should the handler return one, is not
// written: its event is dropped from the request's stream. A cancellation
// that comes after the response was written changes nothing.

// serveFast answers the POST r of the session s, writing to w, when it is
// a call the fast path takes or a cancellation of one: see the top of this
// file. It reports false when the request is left to the SDK's handler.
func (h *httpSessions) serveFast(w *streamWriter, r *http.Request, s *session) bool {
	rb, ok := r.Context().Value(readBodyKey{}).(*bodyRead)
	if !ok {
		return false
	}
	body := rb.body
	if len(body) == 0 || len(body) >= stashMin || body[jsontext.SkipSpace(body, 0)] != '{' || jsontext.Valid(body) != nil {
		return false
	}
	var id, method, params []byte
	version := false
	nominal := true
	jsontext.EachChild(body, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "jsonrpc") && !version:
			version = string(v) == `"2.0"`
			nominal = nominal && version
		case jsontext.KeyEquals(k, "id") && id == nil:
			id = v
		case jsontext.KeyEquals(k, "method") && method == nil && v[0] == '"':
			method = v
		case jsontext.KeyEquals(k, "params") && params == nil:
			params = v
		default:
			nominal = false
		}
		return nominal
	})
	if !nominal || method == nil {
		return false
	}
	if id == nil && jsontext.KeyEquals(method, "notifications/cancelled") {
		return h.cancel(w, s, params)
	}
	if id == nil {
		return false
	}
	var reqID jsonrpc.ID
	switch {
	case rb.idKnown && rb.id != nil:
		reqID = *rb.id
	case rb.idKnown:
		return false // not an id the SDK takes
	default:
		if reqID, ok = wire.HeadID(body); !ok {
			return false
		}
	}
	fc := &rawTaken{req: rawRequest{id: reqID}}
	if !h.fastCall(r, s, &fc.req, method, params) {
		s.http.trackSDK(reqID, w) // for a cancellation to drop its response
		return false
	}
	// Cancelled directly (rawStop) by the client's cancellation
	// (cancelFast) and by the session's end (session.end).
	ctx := fc.begin()
	stop := &fc.stop
	if !s.http.startFast(reqID, stop) {
		fc.end(ctx)
		writeHTTPError(w, http.StatusBadRequest, &reqID, jsonrpc.CodeInvalidRequest, "duplicate in-flight request ID "+string(id), 0)
		return true
	}
	if s.ctx.Err() != nil {
		// The session ended before the call was noted: session.end may
		// have missed it.
		stop.stop(context.Cause(s.ctx))
	}
	type outcome struct {
		line      []byte
		cancelled bool // by the client
	}
	got := make(chan outcome, 1)
	fc.req.start(ctx, doneFunc(func(line []byte) {
		s.http.endFast(reqID)
		h.st.handedOut(s.ss) // as after a request the SDK answers
		got <- outcome{line, fc.end(ctx)}
	}))
	var out outcome
	select {
	case out = <-got: // the call's end: its result, its error, or its cancellation
	case <-r.Context().Done():
		// The client went away, which the specification says is no
		// cancellation: the call goes on, as the SDK's handler lets it,
		// its response unwritten, and the request no longer counts
		// toward MaxRequests.
		return true
	}
	switch {
	case out.cancelled:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache, no-transform")
		w.WriteHeader(http.StatusOK) // and no event: see the top of this file
	case s.ctx.Err() != nil:
		// The session ended (DELETE, idle): what is written is cut off,
		// as for the SDK's streams.
	default:
		data := out.line
		w.Header()["Content-Type"] = jsonContentType
		if len(data) < bufferedAnswer {
			// Held in net/http's buffer until the handler returns, which then
			// sets its Content-Length and writes it: no deadline of the
			// streamWriter's would apply, and none is set.
			w.ResponseWriter.Write(data)
			return true
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data) // a failed write: the client went away
	}
	return true
}

// bufferedAnswer is the size of a response body below which net/http holds
// it in the response's buffer (bufferBeforeChunkingSize, 2048 bytes) until
// the handler returns, and writes nothing to the connection before.
const bufferedAnswer = 2048

// jsonContentType is the Content-Type of a response of one JSON object,
// shared: a header set from it allocates nothing.
var jsonContentType = []string{"application/json"}

// fastCall readies req (whose id is set) for req.start to make the call of
// method with params, the request r of the session s, on the fast path,
// and reports true; false when the fast path does not take it (see the top
// of this file).
func (h *httpSessions) fastCall(r *http.Request, s *session, req *rawRequest, method, params []byte) bool {
	if h.fast == nil || !jsontext.KeyEquals(method, "tools/call") || !h.fastHeaders(r, s) {
		return false
	}
	name, args, meta, ok := callParams(params, true) // a part of the body, which serveFast validated
	if !ok || meta != nil {
		return false
	}
	req.name, req.args, req.ss, req.vals = name, args, s.ss, h.st.of(s.ss)
	return h.fast.rawCall(req)
}

// fastHeaders reports whether the request r of the session s may take the
// fast path, as far as its headers and the session tell: see the top of
// this file.
func (h *httpSessions) fastHeaders(r *http.Request, s *session) bool {
	init := s.ss.InitializeParams()
	if init == nil || init.ProtocolVersion >= statelessProtocol || rebound(r) {
		return false
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Mcp-") && k != "Mcp-Session-Id" && k != "Mcp-Protocol-Version" || k == "Last-Event-Id" {
			return false
		}
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v != init.ProtocolVersion {
		return false
	}
	if user := s.http.user(); user != "" {
		if ti := auth.TokenInfoFromContext(r.Context()); ti == nil || ti.UserID != user {
			return false
		}
	}
	caps := init.Capabilities
	if caps == nil {
		return true
	}
	if caps.Sampling != nil || caps.Elicitation != nil {
		return false
	}
	return caps.RootsV2 == nil || s.http.streaming()
}

// cancel handles the notifications/cancelled of the session s whose params
// are params: a call on the fast path is cancelled, with the client's
// reason, and the notification answered here (202); for a request the SDK
// answers, its response is marked to be dropped and the notification left
// to the SDK (false).
func (h *httpSessions) cancel(w http.ResponseWriter, s *session, params []byte) bool {
	id, ok := wire.CancelledID(params)
	if !ok {
		return false
	}
	if !s.http.cancelFast(id, clientCancelled{cancelCause(params)}) {
		return false
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}

// streaming reports whether the session's standalone stream is open.
func (hs *httpSession) streaming() bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.streams > 0
}

// startFast notes the call id on the fast path, cancelled by stop; false
// if a call of that id is in flight on it.
func (hs *httpSession) startFast(id jsonrpc.ID, stop *rawStop) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if _, dup := hs.fast[id]; dup {
		return false
	}
	if hs.fast == nil {
		hs.fast = make(map[jsonrpc.ID]*rawStop)
	}
	hs.fast[id] = stop
	return true
}

// stopFast cancels the calls on the fast path in flight with cause, as
// the session ends.
func (hs *httpSession) stopFast(cause error) {
	hs.mu.Lock()
	stops := slices.Collect(maps.Values(hs.fast))
	hs.mu.Unlock()
	for _, stop := range stops {
		stop.stop(cause)
	}
}

func (hs *httpSession) endFast(id jsonrpc.ID) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.fast, id)
}

// trackSDK notes that the request id, which the SDK answers, writes to w,
// until w's request ends (see finish).
func (hs *httpSession) trackSDK(id jsonrpc.ID, w *streamWriter) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.sdk == nil {
		hs.sdk = make(map[jsonrpc.ID]*streamWriter)
	}
	hs.sdk[id] = w
	w.id = &id
}

// cancelFast cancels the call id with cause, if it is on the fast path
// (true); else it marks the response of the request id the SDK answers,
// if any, to be dropped.
func (hs *httpSession) cancelFast(id jsonrpc.ID, cause error) bool {
	hs.mu.Lock()
	stop := hs.fast[id]
	if w := hs.sdk[id]; w != nil {
		w.dropped.Store(true)
	}
	hs.mu.Unlock()
	if stop == nil {
		return false
	}
	stop.stop(cause)
	return true
}

// untrack forgets the request of the SDK's that w wrote, if any.
func (hs *httpSession) untrackLocked(w *streamWriter) {
	if w.id != nil && hs.sdk[*w.id] == w {
		delete(hs.sdk, *w.id)
	}
}

// isResponseEvent reports whether p, one write of an event stream, is the
// event of the response to the request id (the SDK writes each event in
// one write).
func isResponseEvent(p []byte, id jsonrpc.ID) bool {
	i := bytes.Index(p, []byte("data: "))
	if i < 0 || (i > 0 && p[i-1] != '\n') {
		return false
	}
	data := bytes.TrimRight(p[i+len("data: "):], "\n")
	if jsontext.Valid(data) != nil {
		return false
	}
	got, ok := wire.HeadID(data)
	if !ok || got != id {
		return false
	}
	_, result := jsontext.Member(data, "result")
	_, failed := jsontext.Member(data, "error")
	return result || failed
}
