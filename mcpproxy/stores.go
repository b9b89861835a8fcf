package mcpproxy

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stores gives each upstream session its store: one shared by all, or one
// of its own per session, made at its first use and dropped when the
// session ends; and keeps what the proxy knows of each session
// (session.go). A gateway's proxies share one stores.
type stores struct {
	shared      *values.SessionValues // nil with a store per session
	memoryOnly  bool                  // shared is in memory alone: storing in it does no I/O
	sessionOpts []values.Option       // with a store per session: for values.New
	// sessionStore, with a store per session, opens that of a session with
	// an ID (Options.SessionStore); log tells of its failures.
	sessionStore func(id string, opts ...values.Option) (*values.SessionValues, error)
	log          io.Writer
	live         sessionTable // the upstream sessions (session.go)

	// handed is the highest handle number a session's store has handed
	// out: raised as each request of a session ends (before its response
	// is written: see handedOut) and when the session ends. A new
	// session's store starts past it, whatever the number of sessions.
	handed atomic.Int64

	notes sync.Map // *values.SessionValues -> *noteLog: what was noted of its values (notes.go)
	total counters // the Stats overall

	owners   uriOwners // which proxy offers each resource URI
	logLevel logLevel  // asked of the downstream servers
}

func newStores(opts *Options) *stores {
	switch {
	case opts.PerSession:
		log := opts.Log
		if log == nil {
			log = os.Stderr
		}
		return &stores{sessionOpts: opts.SessionOptions, sessionStore: opts.SessionStore, log: log}
	case opts.Values != nil:
		return &stores{shared: opts.Values, memoryOnly: !opts.Values.Durable()}
	}
	return &stores{shared: values.New(), memoryOnly: true}
}

// of returns the store of the session ss, made at its first use: its
// handles start past every handle a session's store has handed out so far
// (see handed), found in constant time.
func (s *stores) of(ss *mcp.ServerSession) *values.SessionValues {
	if s.shared != nil {
		return s.shared
	}
	if ss == nil { // not a session's call; cannot happen through the SDK
		return s.newStore()
	}
	sess := s.session(ss)
	sess.once.Do(func() { sess.vals.Store(s.storeOf(ss.ID())) })
	return sess.vals.Load()
}

// storeOf makes the store of the session whose ID is id ("": none): by
// sessionStore when there is one, else (or if it fails) newStore.
func (s *stores) storeOf(id string) *values.SessionValues {
	if s.sessionStore == nil || id == "" {
		return s.newStore()
	}
	v, err := s.sessionStore(id, s.sessionOptions()...)
	if err != nil || v == nil {
		fmt.Fprintf(s.log, "agentvalues: the values of session %s are kept in memory only: opening its store: %v\n", logID(id), err)
		return s.newStore()
	}
	return v
}

// newStore makes a session's store, starting past handed.
func (s *stores) newStore() *values.SessionValues {
	return values.New(s.sessionOptions()...)
}

// sessionOptions are the options of a new session's store: sessionOpts,
// and its first handle past handed.
func (s *stores) sessionOptions() []values.Option {
	first := int(s.handed.Load()) + 1
	return append(slices.Clip(s.sessionOpts), values.WithFirstHandle(first))
}

// handedOut notes the handles the store of ss has handed out, once a
// request of ss has been handled and before its response is written: a
// session made after the response starts past them.
func (s *stores) handedOut(ss *mcp.ServerSession) {
	if s.shared != nil {
		return
	}
	if v, ok := s.live.all.Load(ss); ok {
		if vals := v.(*session).vals.Load(); vals != nil {
			s.raise(vals)
		}
	}
}

// raise raises handed to the last handle v handed out.
func (s *stores) raise(v *values.SessionValues) {
	n := int64(nextNumber(v) - 1)
	for {
		cur := s.handed.Load()
		if n <= cur || s.handed.CompareAndSwap(cur, n) {
			return
		}
	}
}

// noteHanded is a receiving middleware that calls handedOut after every
// request a session makes.
func (s *stores) noteHanded(next mcp.MethodHandler) mcp.MethodHandler {
	if s.shared != nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			s.handedOut(ss)
		}
		return res, err
	}
}

// nextNumber is the number of the handle v hands out next.
func nextNumber(v *values.SessionValues) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(v.Next(), "r"))
	return n
}
