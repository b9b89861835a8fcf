package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serving over Streamable HTTP. [Proxy.HTTPHandler] and
// [Gateway.HTTPHandler] return one handler in two layers, each refusal
// answered with an HTTP status and a JSON-RPC error body that says which
// bound and how to raise it:
//
// The bounds layer (this file), what a server that a network can reach
// needs, checked before anything else sees the request:
//
//   - with a Token, a request must carry it as a bearer token (401 with
//     WWW-Authenticate; see httpauth.go);
//   - an Origin header, which only browsers send, must name the listener
//     or an allowed origin (403; see httporigin.go);
//   - at most MaxRequests requests other than GET are handled at once
//     (503, Retry-After); a DELETE is one;
//   - a POST without a session id must be an initialize (400 otherwise:
//     every other message belongs to a session);
//   - at most MaxSessions sessions are open; a request that would open
//     one more is refused (503, Retry-After). They are counted as the
//     server has them, so a session the session layer ends gives its place
//     back once its DELETE is answered or its idle timer has fired;
//   - a request body is read by the handler itself, within MaxMessage
//     (413), at no less than MinBodyRate after ReadTimeout (408), and
//     while the bodies held at once stay within MaxBodyBytes (503,
//     Retry-After); the large arguments of a tools/call are held apart
//     from what the SDK decodes (see httpbody.go).
//
// The session layer (httpsession.go), under it: the SDK's handler (a
// server session, and with Options.PerSession a store, per HTTP session),
// around which ending a session, by its DELETE or after SessionTimeout
// idle, cancels its calls, downstream too, and a write to a client that
// does not read is broken off. A request the bounds layer refuses never
// reaches it: a DELETE refused (for its Origin, say) ends nothing.
//
// [ServeHTTP] serves a handler on a listener with the bounds of the
// connections: at most MaxConns open (one past it is answered 503 and
// closed; see httpconn.go), request headers within ReadTimeout, an idle
// keep-alive connection closed after IdleTimeout.

// Defaults of [HTTPOptions].
const (
	// DefaultMaxBodyBytes bounds the bytes of request bodies held at once:
	// two bodies of DefaultMaxMessage. A body costs about its size while
	// its request is handled (see httpbody.go), so this, not the number
	// of requests, is what bounds their memory.
	DefaultMaxBodyBytes = 2 * DefaultMaxMessage
	// DefaultMaxRequests bounds the requests other than GET (the open event
	// streams) handled at once: far more tool calls than an agent runs in
	// parallel, few enough that a flood of small requests cannot take the
	// process's goroutines and memory.
	DefaultMaxRequests = 256
	// DefaultMaxSessions bounds the open sessions: each costs about 20 KB
	// and its store, and is kept until it ends or SessionTimeout.
	DefaultMaxSessions = 1000
	// DefaultSessionTimeout is how long a session may go without a request
	// before it is ended, its calls cancelled and its store dropped: a
	// client that went away without ending its session would otherwise
	// hold its values for good.
	DefaultSessionTimeout = time.Hour
	// DefaultReadTimeout bounds the reading of a request's headers, and of
	// its body before MinBodyRate applies.
	DefaultReadTimeout = 30 * time.Second
	// DefaultMinBodyRate is the slowest a request body may arrive, in bytes
	// per second, once ReadTimeout has passed: a client on a slow link
	// sends DefaultMaxMessage in about an hour; one that trickles a body
	// is cut off.
	DefaultMinBodyRate = 64 << 10
	// DefaultIdleTimeout is how long a keep-alive connection may wait for
	// its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConns bounds the open connections: room for an event
	// stream and a request of every session at the session bound, far
	// below the file descriptors a process may open.
	DefaultMaxConns = 2 * DefaultMaxSessions
)

// HTTPOptions configures [Proxy.HTTPHandler], [Gateway.HTTPHandler] and
// [ServeHTTP]. A nil
// *HTTPOptions, and zero in a field, mean the documented default; a
// negative number means no bound.
type HTTPOptions struct {
	// Token, when not empty, is the bearer token every request must carry
	// ("Authorization: Bearer <Token>"); a request without it is answered
	// 401 with "WWW-Authenticate: Bearer" and a JSON-RPC error saying what
	// is missing, before anything else reads it (see httpauth.go). The
	// token is compared in constant time. Use printable ASCII without
	// spaces ([CheckToken] says whether a token is such). Empty means no
	// authentication: serve so only where every client that can connect
	// may call (a loopback address), or behind a proxy that authenticates.
	Token string
	// MaxMessage bounds a request body in bytes; a longer one is refused
	// with 413 before it is read. Zero means DefaultMaxMessage.
	MaxMessage int
	// MaxBodyBytes bounds the bytes of the request bodies held at once, each
	// from the start of its reading until its request is answered (a
	// tools/call holds its arguments for the whole call). A request whose
	// body would take the total past it is refused with 503 and
	// Retry-After; a body larger than MaxBodyBytes is taken only when no
	// other body is held. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxRequests bounds the requests other than GET handled at once; one
	// past it is refused with 503 and Retry-After. Zero means
	// DefaultMaxRequests.
	MaxRequests int
	// MaxSessions bounds the server's open sessions (those of every
	// transport it serves); a request that would open one more is refused
	// with 503 and Retry-After. Zero means DefaultMaxSessions.
	MaxSessions int
	// SessionTimeout ends a session that has had no request for this long
	// (an open standalone stream, GET, is not one): its calls are
	// cancelled, downstream too, and its store dropped. Zero means
	// DefaultSessionTimeout; negative means never.
	SessionTimeout time.Duration
	// AllowedOrigins are the browser origins ("https://app.example.com",
	// scheme, host and port if not the scheme's default) admitted besides
	// the listener's own (see httporigin.go). "*" admits every origin.
	AllowedOrigins []string
	// ReadTimeout bounds the reading of a request's headers, and of its
	// body until MinBodyRate applies: a body of n bytes must have arrived
	// ReadTimeout + n/MinBodyRate after the handler began reading it. A
	// late body is answered with 408. Zero means DefaultReadTimeout.
	ReadTimeout time.Duration
	// MinBodyRate is the slowest a request body may arrive, in bytes per
	// second, after ReadTimeout. Zero means DefaultMinBodyRate.
	MinBodyRate int
	// IdleTimeout closes a keep-alive connection that waits this long for
	// its next request ([ServeHTTP] only). Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConns bounds the open connections ([ServeHTTP] only); one past it
	// is answered 503 and closed. Zero means DefaultMaxConns.
	MaxConns int
	// Log receives a line when a bound refuses a request or a connection
	// (at most one a minute per bound, with the number refused). Nil means
	// os.Stderr.
	Log io.Writer
}

// httpConfig is HTTPOptions with the defaults filled in; -1 means no
// bound.
type httpConfig struct {
	auth           tokenAuth
	maxMessage     int64
	maxBodyBytes   int64
	maxRequests    int
	maxSessions    int
	sessionTimeout time.Duration
	origins        []string
	readTimeout    time.Duration
	minBodyRate    int64
	idleTimeout    time.Duration
	maxConns       int
	log            io.Writer
}

func newHTTPConfig(o *HTTPOptions) httpConfig {
	if o == nil {
		o = &HTTPOptions{}
	}
	c := httpConfig{
		auth:           newTokenAuth(o.Token),
		maxMessage:     int64(orDefault(o.MaxMessage, DefaultMaxMessage)),
		maxBodyBytes:   orDefault(o.MaxBodyBytes, DefaultMaxBodyBytes),
		maxRequests:    orDefault(o.MaxRequests, DefaultMaxRequests),
		maxSessions:    orDefault(o.MaxSessions, DefaultMaxSessions),
		sessionTimeout: orDefault(o.SessionTimeout, DefaultSessionTimeout),
		origins:        o.AllowedOrigins,
		readTimeout:    orDefault(o.ReadTimeout, DefaultReadTimeout),
		minBodyRate:    int64(orDefault(o.MinBodyRate, DefaultMinBodyRate)),
		idleTimeout:    orDefault(o.IdleTimeout, DefaultIdleTimeout),
		maxConns:       orDefault(o.MaxConns, DefaultMaxConns),
		log:            o.Log,
	}
	if c.log == nil {
		c.log = os.Stderr
	}
	return c
}

// orDefault returns v, def for zero, and -1 for any negative v.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

// HTTPHandler returns the handler that serves p over Streamable HTTP, a
// server session (and with Options.PerSession a store) per HTTP session,
// with the bounds of opts (see [HTTPOptions]) and ending a session
// cancelling its calls; see the package documentation (Streamable HTTP).
// Large tools/call arguments reach p's server as a stand-in that a
// receiving middleware of p's own puts back: middleware added to
// [Proxy.Server] sees the stand-in, for arguments of 64 KiB or more, of a
// call made over HTTP; and as over a [LineTransport], it does not see the
// calls the raw call route answers (the session layer's fast path,
// httpfast.go). The handler serves every path it is given; mount it
// at the endpoint ("/mcp"). Each call makes a handler of its own, with
// bounds of its own. With Options.SessionStore, a session the client
// names that this process does not have is continued from its store when
// the store holds values (see httpresume.go for what is and is not
// carried over); otherwise an unknown session is answered 404. It is safe
// for concurrent use.
func (p *Proxy) HTTPHandler(opts *HTTPOptions) http.Handler {
	return newHTTPHandler(p.server, p.stores, p, opts, p.seams.idleTimer)
}

// HTTPHandler returns the handler that serves g over Streamable HTTP, as
// [Proxy.HTTPHandler] does for a proxy.
func (g *Gateway) HTTPHandler(opts *HTTPOptions) http.Handler {
	var timer func(time.Duration, func()) sessionTimer
	if g.opts.seams != nil {
		timer = g.opts.seams.idleTimer
	}
	return newHTTPHandler(g.server, g.stores, g, opts, timer)
}

// httpBounds is the bounds layer (see the top of this file).
type httpBounds struct {
	cfg    httpConfig
	server *mcp.Server  // whose sessions MaxSessions counts
	next   http.Handler // the session layer

	mu       sync.Mutex
	requests int   // requests other than GET being handled
	pending  int   // requests that may open a session, being handled
	held     int64 // bytes of the request bodies held
	log      *refusals
}

// newHTTPHandler makes the handler of server, whose sessions st keeps
// (newServer): the bounds layer over the session layer over the SDK's
// handler, with rc (when not nil) answering the calls the session layer
// takes on its fast path (httpfast.go). timer, when not nil, arms the idle
// timers in place of time.AfterFunc.
func newHTTPHandler(server *mcp.Server, st *stores, rc rawCaller, opts *HTTPOptions, timer func(time.Duration, func()) sessionTimer) http.Handler {
	cfg := newHTTPConfig(opts)
	h := &httpBounds{
		cfg:    cfg,
		server: server,
		log:    newRefusals(cfg.log),
	}
	sessions := newHTTPSessions(server, st, cfg.sessionTimeout, timer, h.admitSession, cfg.log)
	sessions.fast = rc
	h.next = sessions
	return h
}

// admitSession takes a place under MaxSessions for a session the session
// layer continues from its store (which comes with a session id, so the
// request took none): it returns the func that gives the place back once
// the session is made (it then counts itself), or why there is none.
func (h *httpBounds) admitSession() (release func(), why string) {
	if !h.take("sessions", func() bool { return h.cfg.maxSessions < 0 || h.sessions()+h.pending < h.cfg.maxSessions }, func() { h.pending++ },
		func() string {
			return fmt.Sprintf("%d sessions are open, the most this server keeps (MaxSessions); %s", h.cfg.maxSessions, h.idleSessions())
		}) {
		return nil, h.sessionsFull()
	}
	return func() { h.release(func() { h.pending-- }) }, ""
}

func (h *httpBounds) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if why, challenge := h.cfg.auth.refusal(req); why != "" {
		h.log.refused("token", "a request without the bearer token (Token): "+why)
		refuseUnauthorized(w, why, challenge)
		return
	}
	if why := h.badOrigin(req); why != "" {
		refuseUnread(w)
		writeHTTPError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, why, 0)
		return
	}
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		h.next.ServeHTTP(w, req)
		return
	}
	if !h.take("requests", func() bool { return h.cfg.maxRequests < 0 || h.requests < h.cfg.maxRequests }, func() { h.requests++ },
		func() string {
			return fmt.Sprintf("%d requests are being handled, the most this server takes at once (MaxRequests)", h.cfg.maxRequests)
		}) {
		refuseUnread(w)
		writeHTTPError(w, http.StatusServiceUnavailable, nil, codeBusy,
			fmt.Sprintf("the server is busy: %d requests are being handled, the most it takes at once; try again in a moment", h.cfg.maxRequests), time.Second)
		return
	}
	defer h.release(func() { h.requests-- })
	if req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") == "" {
		if !h.take("sessions", func() bool { return h.cfg.maxSessions < 0 || h.sessions()+h.pending < h.cfg.maxSessions }, func() { h.pending++ },
			func() string {
				return fmt.Sprintf("%d sessions are open, the most this server keeps (MaxSessions); %s", h.cfg.maxSessions, h.idleSessions())
			}) {
			refuseUnread(w)
			writeHTTPError(w, http.StatusServiceUnavailable, nil, codeBusy, h.sessionsFull(), time.Minute)
			return
		}
		defer h.release(func() { h.pending-- })
	}
	read := false
	if req.Method == http.MethodPost && sdkReads(req) {
		read = true
		body, b, ok := h.readBody(w, req)
		if !ok {
			return
		}
		defer b.release()
		if req.Header.Get("Mcp-Session-Id") == "" && !opensSession(req, body) {
			writeHTTPError(w, http.StatusBadRequest, b.id, jsonrpc.CodeInvalidRequest,
				"Bad Request: the request has no Mcp-Session-Id header: every message but initialize belongs to a session: send it with the Mcp-Session-Id that the initialize response gave (or initialize first)", 0)
			return
		}
		if req, ok = withBody(req, body, b); !ok {
			return
		}
	}
	if !read && req.Body != nil && h.cfg.maxMessage >= 0 {
		// Should the SDK read a body after all, not past the bound.
		req.Body = http.MaxBytesReader(w, req.Body, h.cfg.maxMessage)
	}
	h.next.ServeHTTP(w, req)
}

// sdkReads reports whether the SDK's handler reads the body of the POST
// req: it refuses one whose Content-Type or Accept is wrong before that
// (the tests below are its own), so its body is not read here either.
func sdkReads(req *http.Request) bool {
	if ct := req.Header.Get("Content-Type"); ct != "application/json" { // as clients send it, without parameters: no parsing
		if ct, _, err := mime.ParseMediaType(ct); err != nil || ct != "application/json" {
			return false
		}
	}
	jsonOK, streamOK := false, false
	for _, v := range req.Header.Values("Accept") {
		for token := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(token, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// opensSession reports whether the POST req without a session id, whose
// body is body, may be served: a single initialize request, which opens a
// session; a message of protocol 2026-07-28 or later, which has no
// sessions (server/discover, or a call whose Mcp-Protocol-Version header
// or _meta names it), which the SDK answers as the protocol asks (with
// the versions it supports, so that the client falls back to initialize);
// or a body that is not JSON, which the SDK refuses with 400 saying what
// is wrong with it. Any other message without a session is answered 400,
// as the Streamable HTTP specification (2025-06-18, Session Management)
// asks of a server that requires a session: the SDK alone would open a
// session for it and answer 200 with an error.
func opensSession(req *http.Request, body []byte) bool {
	if jsontext.Valid(body) != nil || req.Header.Get("Mcp-Protocol-Version") >= statelessProtocol {
		return true
	}
	method, ok := jsontext.Member(body, "method")
	if _, hasID := jsontext.Member(body, "id"); !ok || !hasID || method[0] != '"' {
		return false
	}
	if params, ok := jsontext.Member(body, "params"); ok {
		if meta, ok := jsontext.Member(params, "_meta"); ok {
			if _, ok := jsontext.Member(meta, "io.modelcontextprotocol/protocolVersion"); ok {
				return true
			}
		}
	}
	return jsontext.KeyEquals(method, "initialize") || jsontext.KeyEquals(method, "server/discover")
}

// statelessProtocol is the first protocol version without sessions
// (SEP-2575), as the SDK compares versions: as strings.
const statelessProtocol = "2026-07-28"

// sessions counts the server's open sessions; h.mu is held.
func (h *httpBounds) sessions() int {
	n := 0
	for range h.server.Sessions() {
		n++
	}
	return n
}

// sessionsFull is the message refusing a new session.
func (h *httpBounds) sessionsFull() string {
	return fmt.Sprintf("the server has %d sessions open, the most it keeps: a new one can start once one ends (a client ends its session with DELETE; %s)", h.cfg.maxSessions, h.idleSessions())
}

// idleSessions says what becomes of an idle session.
func (h *httpBounds) idleSessions() string {
	if h.cfg.sessionTimeout > 0 {
		return "an idle one ends after " + h.cfg.sessionTimeout.String()
	}
	return "an idle one is never ended"
}

// take reports whether the bound named what admits one more (ok, under
// h.mu) and if so counts it in (add). A refusal is logged with why (made
// only then: admitting is on every request's path).
func (h *httpBounds) take(what string, ok func() bool, add func(), why func() string) bool {
	h.mu.Lock()
	admit := ok()
	if admit {
		add()
	}
	h.mu.Unlock()
	if !admit {
		h.log.refused(what, why())
	}
	return admit
}

// release undoes what take counted in, under h.mu.
func (h *httpBounds) release(sub func()) {
	h.mu.Lock()
	sub()
	h.mu.Unlock()
}

// codeBusy is the JSON-RPC error code of a request refused because a bound
// of the server is reached (requests, sessions, body bytes, connections):
// the same request may succeed later. It is in the range JSON-RPC
// reserves for implementation-defined server errors.
const codeBusy = -32051

// refuseUnread prepares the answer to a request refused before its body
// is read: the connection closes after the answer, at once rather than
// once the server has read what is left of the body (which a slow client
// could make last for ever).
func refuseUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// writeHTTPError answers a request the HTTP layer refuses with status and a
// JSON-RPC error response: for the request id, or with a null id when it
// is not known (as JSON-RPC asks). A positive retry sets Retry-After.
func writeHTTPError(w http.ResponseWriter, status int, id *jsonrpc.ID, code int64, msg string, retry time.Duration) {
	body := struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      any           `json:"id"`
		Error   jsonrpc.Error `json:"error"`
	}{JSONRPC: "2.0", Error: jsonrpc.Error{Code: code, Message: "mcpproxy: " + msg}}
	if id != nil {
		body.ID = id.Raw()
	}
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false) // a message may say "Bearer <token>"
	enc.Encode(body)
	w.Header().Set("Content-Type", "application/json")
	if retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())))
	}
	w.WriteHeader(status)
	w.Write(data.Bytes())
}

// ServeHTTP serves h (typically a mux with [Proxy.HTTPHandler] at "/mcp") on
// ln until ctx is done, with the connection bounds of opts (MaxConns,
// ReadTimeout for the headers, IdleTimeout). Then it stops accepting,
// waits up to 5 s for the requests in flight (an event stream never ends
// on its own), closes what remains and returns nil. It returns the error
// that ends serving otherwise. ServeHTTP closes ln.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler, opts *HTTPOptions) error {
	cfg := newHTTPConfig(opts)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.readTimeout, // -1: none, as for any negative
		IdleTimeout:       cfg.idleTimeout,
		// No ReadTimeout or WriteTimeout: they would end the event streams,
		// which last as long as their session. The handler bounds a body's
		// reading itself (see httpbody.go).
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(capConns(ln, cfg)) }()
	select {
	case err := <-served:
		return fmt.Errorf("mcpproxy: serving HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mcpproxy: serving HTTP: %w", err)
	}
	return nil
}

// shutdownWait bounds how long ServeHTTP waits, once told to stop, for the
// requests in flight.
const shutdownWait = 5 * time.Second

// refusals logs the refusals of each bound: a line at the first, then at
// most one a minute, with the number refused since the last line.
type refusals struct {
	w     io.Writer
	mu    sync.Mutex
	last  map[string]time.Time // by bound: when its last line was written
	since map[string]int       // by bound: refusals not yet in a line
}

// refuseLogEvery is the least time between two log lines of one bound.
const refuseLogEvery = time.Minute

func newRefusals(w io.Writer) *refusals {
	return &refusals{w: w, last: map[string]time.Time{}, since: map[string]int{}}
}

// refused counts a refusal by the bound named what, for the reason why.
func (r *refusals) refused(what, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.since[what]++
	if now := time.Now(); now.Sub(r.last[what]) >= refuseLogEvery {
		fmt.Fprintf(r.w, "agentvalues: refused %d over HTTP since the last such line: %s\n", r.since[what], why)
		r.last[what], r.since[what] = now, 0
	}
}
