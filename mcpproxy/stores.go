package mcpproxy

import (
	"context"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stores gives each upstream session its store: one shared by all, or, when
// newValues is set, one of its own per session, made at its first use and
// dropped when the session ends. A gateway's proxies share one stores.
type stores struct {
	shared    *values.SessionValues // nil when newValues is set
	newValues func() *values.SessionValues
	sessions  sync.Map // *mcp.ServerSession -> *values.SessionValues

	owners uriOwners // which proxy offers each resource URI
}

func newStores(opts *Options) *stores {
	if opts.NewValues != nil {
		return &stores{newValues: opts.NewValues}
	}
	if opts.Values != nil {
		return &stores{shared: opts.Values}
	}
	return &stores{shared: values.New()}
}

// of returns the store of the session ss.
func (s *stores) of(ss *mcp.ServerSession) *values.SessionValues {
	if s.newValues == nil {
		return s.shared
	}
	if ss == nil { // not a session's call; cannot happen through the SDK
		return s.newValues()
	}
	if v, ok := s.sessions.Load(ss); ok {
		return v.(*values.SessionValues)
	}
	v, loaded := s.sessions.LoadOrStore(ss, s.newValues())
	if !loaded {
		go func() {
			ss.Wait()
			s.sessions.Delete(ss)
		}()
	}
	return v.(*values.SessionValues)
}

// valuesKey is the context key under which a call carries the store its
// result goes to, from callTool to the connection that writes the call.
type valuesKey struct{}

// valuesIn returns the store a call's context carries, or nil.
func valuesIn(ctx context.Context) *values.SessionValues {
	v, _ := ctx.Value(valuesKey{}).(*values.SessionValues)
	return v
}
