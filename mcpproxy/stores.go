package mcpproxy

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stores gives each upstream session its store: one shared by all, or one
// of its own per session, made at its first use and dropped when the
// session ends. A gateway's proxies share one stores.
type stores struct {
	shared      *values.SessionValues // nil with a store per session
	memoryOnly  bool                  // shared is in memory alone: storing in it does no I/O
	sessionOpts []values.Option       // with a store per session: for values.New
	sessions    sync.Map              // *mcp.ServerSession -> *values.SessionValues

	mu   sync.Mutex
	next int // the first handle number of the next session's store, at least

	owners   uriOwners // which proxy offers each resource URI
	logLevel logLevel  // asked of the downstream servers
}

func newStores(opts *Options) *stores {
	switch {
	case opts.PerSession:
		return &stores{sessionOpts: opts.SessionOptions, next: 1}
	case opts.Values != nil:
		return &stores{shared: opts.Values, memoryOnly: !opts.Values.Durable()}
	}
	return &stores{shared: values.New(), memoryOnly: true}
}

// of returns the store of the session ss.
func (s *stores) of(ss *mcp.ServerSession) *values.SessionValues {
	if s.shared != nil {
		return s.shared
	}
	if v, ok := s.sessions.Load(ss); ok {
		return v.(*values.SessionValues)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.sessions.Load(ss); ok {
		return v.(*values.SessionValues)
	}
	// Past every handle handed out so far, by the sessions alive and those
	// gone (s.next keeps theirs).
	first := s.next
	s.sessions.Range(func(_, v any) bool {
		first = max(first, nextNumber(v.(*values.SessionValues)))
		return true
	})
	v := values.New(append(slices.Clip(s.sessionOpts), values.WithFirstHandle(first))...)
	if ss == nil { // not a session's call; cannot happen through the SDK
		return v
	}
	s.sessions.Store(ss, v)
	go func() {
		ss.Wait()
		s.mu.Lock()
		s.next = max(s.next, nextNumber(v))
		s.sessions.Delete(ss)
		s.mu.Unlock()
	}()
	return v
}

// nextNumber is the number of the handle v hands out next.
func nextNumber(v *values.SessionValues) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(v.Next(), "r"))
	return n
}

// valuesKey is the context key under which a call carries the store its
// result goes to, from callTool to the connection that writes the call.
type valuesKey struct{}

// valuesIn returns the store a call's context carries, or nil.
func valuesIn(ctx context.Context) *values.SessionValues {
	v, _ := ctx.Value(valuesKey{}).(*values.SessionValues)
	return v
}
