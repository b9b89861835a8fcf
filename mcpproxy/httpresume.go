package mcpproxy

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Continuing a session from its store. With Options.SessionStore (a
// durable store per HTTP session, under the session's ID), a request that
// names a session this process does not have (it restarted since, or
// another process sharing the durable store began the session) continues
// that session when its store holds values: the session is made again
// under its ID, already initialized, with the store where the session left
// it, and the request is served in it; so a handle the model saw ("$r3")
// still names its value. The SDK's handler knows only the sessions it
// made, so a continued session's requests go to its transport from here
// (checked for DNS rebinding as the SDK checks them).
//
// Only the values are kept: the continued session is that of a client
// that declared no capabilities, speaking the protocol version of the
// request's Mcp-Protocol-Version header (2025-03-26 without one, as the
// specification has it); its log level, its subscriptions and its
// standalone stream (GET) are not carried over (the client opens the
// stream again). A session whose store holds no value is not continued: it
// is answered 404, as any unknown session, and the client initializes a
// new one, losing nothing. A session ended by its idle timeout is
// continued too if its client names it again (its values are in the
// store), and so is one ended by its DELETE in another process; but not
// one its client ended with DELETE in this process (the last maxEndedIDs
// of them are remembered), which stays 404 as the specification asks.
// Continuing a session takes a place under MaxSessions (503 past it).
//
// Whoever names a session's ID continues it, as for any session: the ID
// is the session's secret (HTTPOptions.Token keeps out those without the
// token; the user an SDK bearer-token verifier bound the session to is not
// kept). Only IDs of the form the SDK makes (26 characters of base32) are
// looked up, one at a time: a request naming an unknown one costs a read
// of the store. One process should serve a session at a time (route a
// session's requests to one process): two that append to one session's
// table at once make it unreadable (values.Open says so).

// resumeVersion is the protocol version of a continued session whose
// request has no Mcp-Protocol-Version header: the one the specification
// says a server assumes then.
const resumeVersion = "2025-03-26"

// resume continues the session sid from its store, if it has one that
// holds values, and returns it; nil if there is none to continue. If ok
// is false the request was refused (w is written).
func (h *httpSessions) resume(w http.ResponseWriter, r *http.Request, sid string) (s *session, ok bool) {
	if !sdkSessionID(sid) || r.Method == http.MethodDelete || h.deleted.has(sid) {
		return nil, true // a DELETE of a session not here ends nothing here
	}
	h.resuming.Lock()
	defer h.resuming.Unlock()
	if s := h.st.byID(sid); s != nil {
		return s, true // continued while this request waited
	}
	vals, err := h.st.sessionStore(sid, h.st.sessionOptions()...)
	if err != nil || vals == nil {
		fmt.Fprintf(h.log, "agentvalues: session %s cannot be continued: opening its store: %v\n", logID(sid), err)
		return nil, true
	}
	if vals.Len() == 0 {
		return nil, true
	}
	release, why := h.admit()
	if why != "" {
		writeHTTPError(w, http.StatusServiceUnavailable, nil, codeBusy, why, time.Minute)
		return nil, false
	}
	defer release() // the session counts itself once made
	version := r.Header.Get("Mcp-Protocol-Version")
	if version == "" {
		version = resumeVersion
	}
	t := &mcp.StreamableServerTransport{SessionID: sid}
	ss, err := h.server.Connect(context.Background(), t, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{
		InitializeParams: &mcp.InitializeParams{
			ProtocolVersion: version,
			Capabilities:    &mcp.ClientCapabilities{},
			ClientInfo:      &mcp.Implementation{Name: "continued", Version: "0"},
		},
		InitializedParams:         &mcp.InitializedParams{},
		NegotiatedProtocolVersion: version,
	}})
	if err != nil {
		fmt.Fprintf(h.log, "agentvalues: session %s cannot be continued: %v\n", logID(sid), err)
		return nil, true
	}
	h.continued.Store(sid, t) // before the session is known by its ID
	go func() {
		ss.Wait()
		h.continued.CompareAndDelete(sid, t)
	}()
	s = h.st.session(ss)
	s.once.Do(func() { s.vals.Store(vals) })
	s.http.started(h, s, r)
	fmt.Fprintf(h.log, "agentvalues: continued HTTP session %s from its store (%d values)\n", logID(sid), vals.Len())
	return s, true
}

// sdkSessionID reports whether id is of the form of the SDK's session IDs
// (crypto/rand.Text: 26 characters of base32).
func sdkSessionID(id string) bool {
	if len(id) != 26 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < 'A' || c > 'Z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// maxEndedIDs bounds the IDs of sessions ended by their DELETE that a
// handler remembers so as never to continue them (about 60 bytes each):
// past it the oldest is forgotten, and a client that names that session
// again after maxEndedIDs more DELETEs continues it from its store.
const maxEndedIDs = 4096

// endedIDs are the IDs of the sessions their clients ended, the last
// maxEndedIDs of them. The zero value is empty.
type endedIDs struct {
	mu    sync.Mutex
	set   map[string]struct{}
	order []string // oldest first
}

func (e *endedIDs) add(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set == nil {
		e.set = make(map[string]struct{})
	}
	if _, ok := e.set[id]; ok {
		return
	}
	if len(e.order) == maxEndedIDs {
		delete(e.set, e.order[0])
		e.order = e.order[1:]
	}
	e.set[id] = struct{}{}
	e.order = append(e.order, id)
}

func (e *endedIDs) has(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.set[id]
	return ok
}

// logID is how a log line names the session id: its first characters,
// enough to tell sessions apart, not the whole id, which is the session's
// secret (whoever has it can continue the session).
func logID(id string) string {
	const shown = 6
	if len(id) <= shown {
		return id
	}
	return id[:shown] + "…"
}
