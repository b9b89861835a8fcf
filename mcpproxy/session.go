package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The proxy keeps, for each upstream session (a client connected to its
// server), a session: the session's store (stores.of), the log level it
// set, the queue of the notifications to it, and a context that ends when
// the session does, under which its requests are handled, so that ending
// a session (see httpsession.go) cancels its calls, downstream too.
//
// Notifications. A notification to a session that is not written in the
// course of one of its requests (a downstream server's log messages, the
// list_changed notifications the SDK sends, a call's progress once its
// result is written) goes through the session's lane: a queue of at most
// maxLaneNotes notifications and maxLaneBytes bytes (one is always taken,
// whatever its size), written in order by a goroutine of its own while the
// queue holds any. Nothing that relays a notification waits for a
// session: a session whose client does not read what is written to it
// (over Streamable HTTP: its standalone stream) fills its own queue, and
// what comes next for it is dropped and counted; once its queue has
// drained, the session is sent a log message (level warning, logger
// "agentvalues") saying how many were dropped. A call's progress goes
// through a lane of the call's own, written on the call's own stream (over
// Streamable HTTP, the response to its POST) before its result.

// maxLaneNotes bounds the notifications queued for one session (or one
// call) that its client has not read yet; past it they are dropped and
// counted (see lane).
const maxLaneNotes = 256

// maxLaneBytes bounds the bytes of the notifications queued for one
// session (or one call); past it they are dropped and counted. A queue
// always takes one notification when it holds none, whatever its size.
const maxLaneBytes = 1 << 20

// sdkNoteSize is what a notification the SDK sends itself (list_changed,
// resources/updated) counts for in a lane's bytes: they are small.
const sdkNoteSize = 256

// errSessionEnded is the cause of a session's context once it has ended.
var errSessionEnded = errors.New("mcpproxy: the session ended")

// A session is what the proxy keeps of one upstream session.
type session struct {
	ss      *mcp.ServerSession
	ctx     context.Context // done once the session ends or is being ended
	cancel  context.CancelCauseFunc
	out     *lane                                // its notifications not tied to a request
	lvl     atomic.Int32                         // index in mcpLevels of the log level it set, -1 before
	once    sync.Once                            // makes vals
	started time.Time                            // when it was first seen
	vals    atomic.Pointer[values.SessionValues] // its own store, with Options.PerSession

	http httpSession // over Streamable HTTP: see httpsession.go
}

func newSession(ss *mcp.ServerSession) *session {
	s := &session{ss: ss, started: time.Now()}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.lvl.Store(-1)
	s.out = &lane{ss: ss, ctx: context.WithValue(s.ctx, ownWriteKey{}, true)}
	return s
}

// end ends the session's context with cause, and cancels its calls on
// the HTTP fast path (httpfast.go), which are not its children.
func (s *session) end(cause error) {
	s.cancel(cause)
	s.http.stopFast(context.Cause(s.ctx))
}

// wants reports whether the session set a log level at or below level; an
// unknown level is left to the SDK to judge.
func (s *session) wants(level mcp.LoggingLevel) bool {
	set := s.lvl.Load()
	if set < 0 {
		return false
	}
	i := slices.Index(mcpLevels, level)
	return i < 0 || i >= int(set)
}

// callLane returns a lane for the notifications of a call handled under
// ctx (the handler's context, which ties what is written under it to the
// call's own stream).
func (s *session) callLane(ctx context.Context) *lane {
	return &lane{ss: s.ss, ctx: context.WithValue(ctx, ownWriteKey{}, true)}
}

// A sessionTable is the sessions of one upstream server.
type sessionTable struct {
	all     sync.Map // *mcp.ServerSession -> *session
	mu      sync.Mutex
	byID    map[string]*session        // the sessions that have an ID (Streamable HTTP)
	logging atomic.Pointer[[]*session] // those that set a log level; replaced, never changed
}

// session returns what the proxy keeps of ss, made at its first use and
// dropped when ss ends.
func (st *stores) session(ss *mcp.ServerSession) *session {
	t := &st.live
	if v, ok := t.all.Load(ss); ok {
		return v.(*session)
	}
	s := newSession(ss)
	if v, loaded := t.all.LoadOrStore(ss, s); loaded {
		s.end(nil)
		return v.(*session)
	}
	if id := ss.ID(); id != "" {
		t.mu.Lock()
		if t.byID == nil {
			t.byID = make(map[string]*session)
		}
		t.byID[id] = s
		t.mu.Unlock()
	}
	go func() {
		ss.Wait()
		st.ended(s)
	}()
	return s
}

// byID returns the live session whose ID is id, or nil.
func (st *stores) byID(id string) *session {
	if id == "" {
		return nil
	}
	st.live.mu.Lock()
	defer st.live.mu.Unlock()
	return st.live.byID[id]
}

// ended forgets the session s, which has ended: its calls are cancelled
// (they have returned: the SDK waits for them), its queued notifications
// dropped, its store freed once no call holds it.
func (st *stores) ended(s *session) {
	s.end(errSessionEnded)
	s.out.discard()
	s.http.stop()
	s.once.Do(func() {}) // a store being made is made
	if v := s.vals.Load(); v != nil {
		st.raise(v)
		st.forget(v)
	}
	t := &st.live
	t.mu.Lock()
	if id := s.ss.ID(); id != "" && t.byID[id] == s {
		delete(t.byID, id)
	}
	if l := t.logging.Load(); l != nil && slices.Contains(*l, s) {
		next := slices.DeleteFunc(slices.Clone(*l), func(x *session) bool { return x == s })
		t.logging.Store(&next)
	}
	t.mu.Unlock()
	t.all.Delete(s.ss)
}

// setLevel records the log level the session s set.
func (st *stores) setLevel(s *session, level mcp.LoggingLevel) {
	i := slices.Index(mcpLevels, level)
	if i < 0 {
		return // the SDK refuses it
	}
	if s.lvl.Swap(int32(i)) >= 0 {
		return // listed already
	}
	t := &st.live
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.ctx.Err() != nil {
		return // ended: not listed again
	}
	var next []*session
	if l := t.logging.Load(); l != nil {
		next = slices.Clone(*l)
	}
	next = append(next, s)
	t.logging.Store(&next)
}

// listening returns the sessions that set a log level.
func (st *stores) listening() []*session {
	if l := st.live.logging.Load(); l != nil {
		return *l
	}
	return nil
}

// A sessionKey marks the context of a request a session's client made
// (the value is its *session): what is sent under it belongs to the
// request and is written at once, on the request's own stream.
type sessionKey struct{}

// An ownWriteKey marks the context under which a lane writes: the
// notification passes the sending middleware (queueNotifications) as is.
type ownWriteKey struct{}

// inSession is the outermost receiving middleware of the upstream server
// but restoreArguments (httpbody.go), which reads no session: each
// request is handled under a context that ends when its session ends (so
// ending a session cancels its calls), marked with the session.
func (st *stores) inSession(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || ss == nil {
			return next(ctx, method, req)
		}
		s := st.session(ss)
		ctx, cancel := context.WithCancelCause(context.WithValue(ctx, sessionKey{}, s))
		defer cancel(nil)
		stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
		defer stop()
		return next(ctx, method, req)
	}
}

// queueNotifications is the sending middleware of the upstream server: a
// notification that does not belong to a request of its session (the
// SDK's list_changed, sent to every session in turn) goes through the
// session's lane, so that one session that does not read cannot hold up
// the others. Requests, and notifications sent under a request's context
// or by a lane, pass as they are.
func (st *stores) queueNotifications(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || ss == nil || !strings.HasPrefix(method, "notifications/") || ctx.Value(ownWriteKey{}) != nil || ctx.Value(sessionKey{}) != nil {
			return next(ctx, method, req)
		}
		st.session(ss).out.push(note{size: sdkNoteSize, send: func(ctx context.Context) {
			next(ctx, method, req) // a session that is gone misses it
		}})
		return nil, nil
	}
}

// A note is one notification queued in a lane.
type note struct {
	size int                   // its bytes, about
	send func(context.Context) // writes it
}

// A lane is the queue of notifications to one session, or to one call's
// stream, written in order by a goroutine that runs while it holds any.
// See the top of this file for its bounds.
type lane struct {
	ss  *mcp.ServerSession
	ctx context.Context // what the notes are written under, marked with ownWriteKey

	mu      sync.Mutex
	q       []note
	bytes   int
	dropped int           // since the session was last told
	running bool          // a goroutine is writing the queue
	idle    chan struct{} // closed when that goroutine stops
	shut    bool          // takes no more notes (flushed, or discarded)
	gone    bool          // discarded: the goroutine stops after the note it writes
}

// push queues n, or drops and counts it when the lane is full. It reports
// false, without queuing n, when the lane takes no more notes.
func (l *lane) push(n note) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.shut:
		return false
	case len(l.q) >= maxLaneNotes, len(l.q) > 0 && l.bytes+n.size > maxLaneBytes:
		l.dropped++
		return true
	}
	l.q = append(l.q, n)
	l.bytes += n.size
	if !l.running {
		l.running, l.idle = true, make(chan struct{})
		go l.drain()
	}
	return true
}

// drain writes the queue until it is empty, then tells the session how
// many notes were dropped, if any.
func (l *lane) drain() {
	for {
		l.mu.Lock()
		if l.gone || len(l.q) == 0 && l.dropped == 0 {
			l.running = false
			close(l.idle)
			l.mu.Unlock()
			return
		}
		if len(l.q) == 0 {
			n := l.dropped
			l.dropped = 0
			l.mu.Unlock()
			l.tellDropped(n)
			continue
		}
		n := l.q[0]
		l.q[0] = note{}
		l.q = l.q[1:]
		l.bytes -= n.size
		l.mu.Unlock()
		n.send(l.ctx)
	}
}

// tellDropped sends the session a log message saying n notifications to
// it were dropped. It reaches a client that set a log level of warning or
// below, as any log message does.
func (l *lane) tellDropped(n int) {
	_ = l.ss.Log(l.ctx, &mcp.LoggingMessageParams{
		Level:  "warning",
		Logger: "agentvalues",
		Data: fmt.Sprintf("agentvalues: %d notifications to this session were dropped: its client did not read them as fast as they came "+
			"(the proxy holds at most %d, or %d bytes, unread per session)", n, maxLaneNotes, maxLaneBytes),
	})
}

// flush stops the lane taking notes and waits until what it holds has been
// written, or ctx is done.
func (l *lane) flush(ctx context.Context) {
	l.mu.Lock()
	l.shut = true
	idle := l.idle
	running := l.running
	l.mu.Unlock()
	if !running {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// discard stops the lane taking notes and drops what it holds.
func (l *lane) discard() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shut, l.gone = true, true
	clear(l.q)
	l.q, l.bytes = nil, 0
}
