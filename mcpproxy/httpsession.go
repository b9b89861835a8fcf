package mcpproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The session layer of the HTTP handler (see httpserve.go for the whole):
// the SDK's Streamable HTTP handler, the one place it is made, with the
// session semantics the SDK's own lacks:
//
//   - Ending a session, by a DELETE or by its idle timeout, cancels its
//     calls first: each downstream call is cancelled (its server is sent
//     notifications/cancelled), each handler returns, what is being written
//     to the session's responses is cut off, and then the session is
//     closed, its queued notifications and store dropped, and the DELETE
//     answered (204). The SDK's own DELETE and timeout wait for the calls:
//     for ever, with a server that never answers.
//   - The idle timeout is HTTPOptions.SessionTimeout, kept here (the SDK's
//     is off): a session with no request in flight but its standalone
//     stream (GET) for that long is ended as above.
//   - One write of a response (an event, or a JSON body) waits at most
//     writeStall plus the time its bytes take at writeRate for the client
//     to read: past it the response is broken off (a standalone stream
//     whose client stopped reading, say; the client may open it again), so
//     that nothing waits for one client for ever.

// writeStall is how long one write of a response may wait for a client
// that reads nothing, beyond the time its bytes take at writeRate. Past it
// the response is broken off.
const writeStall = 30 * time.Second

// writeRate is the slowest rate, in bytes per second, at which a client
// must read a large write (a large result's event) for the write not to
// be broken off; see writeStall.
const writeRate = 64 << 10

// errSessionDeleted and errSessionIdle are the causes of a session's end.
var (
	errSessionDeleted = errors.New("mcpproxy: the client ended the session")
	errSessionIdle    = errors.New("mcpproxy: the session was idle past its timeout")
)

// httpSessions is the session layer (see the top of this file).
type httpSessions struct {
	sdk     http.Handler
	server  *mcp.Server
	st      *stores
	timeout time.Duration                            // the idle timeout; <= 0: none
	timer   func(time.Duration, func()) sessionTimer // makes a session's idle timer
	admit   func() (release func(), why string)      // a place under MaxSessions (httpserve.go)
	log     io.Writer
	fast    rawCaller // answers the calls of the fast path, if not nil (httpfast.go)

	resuming  sync.Mutex // one session continued at a time (httpresume.go)
	continued sync.Map   // session ID -> *mcp.StreamableServerTransport of each continued session
	deleted   endedIDs   // sessions their clients ended, never continued (httpresume.go)
}

// A sessionTimer is a session's idle timer: made once, by time.AfterFunc
// (or the tests' stand-in), when the session first goes idle, stopped
// when a request begins and reset when the last one ends, so that a
// request costs no timer of its own.
type sessionTimer interface {
	Reset(time.Duration) bool
	Stop() bool
}

// newHTTPSessions makes the session layer over server, whose sessions st
// keeps (newServer), with the idle timeout (<= 0: none); timer, when not
// nil, makes the idle timers in place of time.AfterFunc.
func newHTTPSessions(server *mcp.Server, st *stores, timeout time.Duration, timer func(time.Duration, func()) sessionTimer, admit func() (func(), string), log io.Writer) *httpSessions {
	h := &httpSessions{server: server, st: st, timeout: timeout, timer: timer, admit: admit, log: log}
	if h.timer == nil {
		h.timer = func(d time.Duration, f func()) sessionTimer { return time.AfterFunc(d, f) }
	}
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      0,  // kept here
		MaxRequestBodyBytes: -1, // the bounds layer reads and bounds a body itself: the SDK gets it whole
	})
	return h
}

func (h *httpSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &streamWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
	defer sw.release()
	sid := r.Header.Get("Mcp-Session-Id")
	s := h.st.byID(sid)
	if s == nil && sid != "" && h.st.sessionStore != nil {
		var ok bool
		if s, ok = h.resume(sw, r, sid); !ok {
			return // refused
		}
	}
	if s == nil {
		h.sdk.ServeHTTP(sw, r)
		if r.Method == http.MethodPost {
			if s := h.st.byID(w.Header().Get("Mcp-Session-Id")); s != nil { // it was made now
				s.http.started(h, s, r)
			}
		}
		return
	}
	if r.Method == http.MethodDelete && h.mayDelete(r, s) {
		if h.st.sessionStore != nil {
			h.deleted.add(sid)
		}
		h.end(s, errSessionDeleted)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sw.sess = s
	counts := r.Method != http.MethodGet // a standalone stream open keeps no session alive
	s.http.begin(sw, counts)
	defer s.http.finish(h, s, sw, counts)
	if r.Method == http.MethodPost && h.serveFast(sw, r, s) {
		return
	}
	if t, ok := h.continued.Load(sid); ok { // continued: the SDK's handler does not know it
		if rebound(r) {
			http.Error(sw, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		t.(*mcp.StreamableServerTransport).ServeHTTP(sw, r)
		return
	}
	h.sdk.ServeHTTP(sw, r)
}

// end ends the session s for cause: its calls are cancelled, what is being
// written to it cut off, then it is closed (which waits for its handlers,
// which return now).
func (h *httpSessions) end(s *session, cause error) {
	s.end(cause)
	s.http.cutOff()
	s.ss.Close()
}

// mayDelete reports whether the SDK's handler would act on the DELETE r of
// the session s: the checks it makes before it closes a session (the
// bounds layer in front has checked the Origin).
func (h *httpSessions) mayDelete(r *http.Request, s *session) bool {
	if rebound(r) {
		return false // DNS rebinding: the SDK refuses it
	}
	if user := s.http.user(); user != "" {
		if ti := auth.TokenInfoFromContext(r.Context()); ti == nil || ti.UserID != user {
			return false
		}
	}
	return true
}

// rebound reports whether r reached a loopback address under a Host that
// is not loopback, as a DNS-rebound page's request does: the SDK's handler
// refuses it (403).
func rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if tcp, ok := local.(*net.TCPAddr); ok { // as a listener's are: its address unformatted
		return tcp.IP.IsLoopback() && !isLoopback(r.Host)
	}
	return isLoopback(local.String()) && !isLoopback(r.Host)
}

// isLoopback reports whether the host of addr (a host, or host:port) is
// localhost or a loopback address, as the SDK's Host check reads it.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// An httpSession is what the HTTP handler keeps of a session: its requests
// in flight and its idle timer.
type httpSession struct {
	mu      sync.Mutex
	active  int                        // requests in flight but GETs
	writers map[*streamWriter]struct{} // the responses being written
	idle    sessionTimer               // the idle timer, once first armed
	armed   bool                       // the idle timer is set: no request began since it was
	stale   int                        // firings under way when the timer was stopped: each is ignored
	userID  string                     // of the token the session began with, if any
	over    bool                       // stopped: the session ended
	streams int                        // its standalone streams (GET) open

	// The calls in flight by request id (httpfast.go): those of the fast
	// path, to cancel, and those the SDK answers on a request of their own,
	// whose response a cancellation drops.
	fast map[jsonrpc.ID]*rawStop
	sdk  map[jsonrpc.ID]*streamWriter
}

// started notes the session s that the request r has just made (its
// initialize), and arms its idle timer.
func (hs *httpSession) started(h *httpSessions, s *session, r *http.Request) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		hs.userID = ti.UserID
	}
	hs.armLocked(h, s)
}

func (hs *httpSession) user() string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.userID
}

// begin notes a request of the session, writing to w; counts says whether
// it keeps the session from going idle.
func (hs *httpSession) begin(w *streamWriter, counts bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.writers == nil {
		hs.writers = make(map[*streamWriter]struct{})
	}
	hs.writers[w] = struct{}{}
	if !counts {
		hs.streams++
	}
	if counts {
		hs.active++
		hs.disarmLocked()
	}
}

// finish notes the end of a request that begin noted, and arms the idle
// timer when it was the last.
func (hs *httpSession) finish(h *httpSessions, s *session, w *streamWriter, counts bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.writers, w)
	hs.untrackLocked(w)
	if !counts {
		hs.streams--
	}
	if counts {
		hs.active--
		hs.armLocked(h, s)
	}
}

// armLocked arms the idle timer of s if no request of it is active.
func (hs *httpSession) armLocked(h *httpSessions, s *session) {
	if hs.over || hs.active > 0 || h.timeout <= 0 {
		return
	}
	hs.disarmLocked()
	hs.armed = true
	if hs.idle == nil {
		hs.idle = h.timer(h.timeout, func() { hs.fire(h, s) })
		return
	}
	hs.idle.Reset(h.timeout)
}

// disarmLocked stops the idle timer if it is set. A timer that fired
// already has its callback under way, or done: it is counted stale, to be
// ignored when it runs (a callback that ran ended the session, and the
// count no longer matters).
func (hs *httpSession) disarmLocked() {
	if !hs.armed {
		return
	}
	hs.armed = false
	if !hs.idle.Stop() {
		hs.stale++
	}
}

// fire is the idle timer's callback: it ends the session s, unless the
// firing is stale (a request began after it fired, or is active).
func (hs *httpSession) fire(h *httpSessions, s *session) {
	hs.mu.Lock()
	if hs.stale > 0 {
		hs.stale--
		hs.mu.Unlock()
		return
	}
	idle := !hs.over && hs.active == 0 && hs.armed
	hs.armed = false
	hs.mu.Unlock()
	if idle {
		h.end(s, errSessionIdle)
		fmt.Fprintf(h.log, "agentvalues: an HTTP session ended after %v without a request (SessionTimeout); its place is free\n", h.timeout)
	}
}

// cutOff makes every write in flight to the session's responses fail now
// (later ones fail at once: the session has ended; see streamWriter).
func (hs *httpSession) cutOff() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for w := range hs.writers {
		w.cutOff()
	}
}

// stop stops the idle timer for good: the session ended.
func (hs *httpSession) stop() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.disarmLocked()
	hs.over = true
}

// A streamWriter is the response to one request of the handler: each
// write waits for the client at most writeStall plus its bytes at
// writeRate, and none once the session has ended.
type streamWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	sess  *session // the request's session, if it named a live one
	timed bool     // a write deadline was set
	// id is that of the one request of the POST, when the SDK answers it
	// (httpfast.go); dropped is set once the client cancelled it: its
	// response is not written.
	id      *jsonrpc.ID
	dropped atomic.Bool
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if w.dropped.Load() && isResponseEvent(p, *w.id) {
		return len(p), nil // as if written: the SDK goes on, and the stream ends without it
	}
	w.deadline(len(p))
	return w.ResponseWriter.Write(p)
}

// FlushError flushes the response (http.ResponseController calls it).
func (w *streamWriter) FlushError() error {
	w.deadline(0)
	return w.rc.Flush()
}

func (w *streamWriter) Flush() { _ = w.FlushError() }

func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// deadline sets the deadline of a write of n bytes.
func (w *streamWriter) deadline(n int) {
	if w.sess != nil && w.sess.ctx.Err() != nil {
		w.cutOff()
		return
	}
	w.timed = true
	_ = w.rc.SetWriteDeadline(time.Now().Add(writeStall + time.Duration(n)*time.Second/writeRate))
}

// cutOff makes the write in flight, if any, and every later one fail.
func (w *streamWriter) cutOff() { _ = w.rc.SetWriteDeadline(time.Unix(1, 0)) }

// release clears the deadline, if one was set, once the handler is done,
// so that the server can end the response.
func (w *streamWriter) release() {
	if w.timed && (w.sess == nil || w.sess.ctx.Err() == nil) {
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
}
