package values

import (
	"context"
	"slices"
	"sync"
)

// This file holds the gate that bounds the memory of the queries that run
// at once ([QueryGate]).

// DefaultQueryGate is the memory the queries of a process may reserve at
// once ([QueryGate]): a few queries over large values, or a dozen over
// small ones.
const DefaultQueryGate = 1 << 30

// A QueryGate bounds the memory the queries that share it may hold at once.
// Each query reserves, before it decodes its input, what it may hold:
// its decoded input (about [queryDecodeFactor] times the input's size,
// the size of a text), its memory budget ([WithQueryMemory]) and its output
// bound ([WithQueryLimits]); a query that does not fit waits, in the order
// queries came, until the ones running release enough, for at most its
// time bound, and then fails with [ErrQueryBusy]. A query reserving more
// than the whole gate runs alone.
//
// Memory is the process's, not a store's: a gateway keeps one store per
// client session, so a bound per store would not bound the process. So
// every store without [WithQueryGate] shares one gate of [DefaultQueryGate]
// bytes, the package's one piece of mutable state; a program that sets its
// own gates (per tenant, or one per process of another size) passes them
// with WithQueryGate.
//
// The zero QueryGate is a gate of DefaultQueryGate bytes. A QueryGate is
// safe for concurrent use; it must not be copied after first use.
type QueryGate struct {
	mu      sync.Mutex
	size    int // 0: DefaultQueryGate; negative: no bound
	used    int
	waiters []*gateWaiter // in the order they came
}

type gateWaiter struct {
	n     int
	ready chan struct{} // closed when the reservation is granted
}

// NewQueryGate returns a gate that lets the queries that share it reserve
// at most bytes at once. 0 selects [DefaultQueryGate]; a negative bytes
// bounds nothing.
func NewQueryGate(bytes int) *QueryGate {
	return &QueryGate{size: bytes}
}

// processQueryGate is the gate of every store without WithQueryGate (see
// QueryGate for why it is process-wide).
var processQueryGate = NewQueryGate(DefaultQueryGate)

// WithQueryGate makes the store's queries reserve their memory at g instead
// of the gate the process's stores share ([QueryGate]). A nil g selects
// that shared gate.
func WithQueryGate(g *QueryGate) Option {
	return func(c *config) { c.queryGate = g }
}

// limit returns the gate's bound, or a negative number when it has none.
func (g *QueryGate) limit() int {
	if g.size == 0 {
		return DefaultQueryGate
	}
	return g.size
}

// acquire reserves n bytes (at most the gate's bound), waiting until they
// fit and every earlier waiter is served, or until ctx is done (then it
// reserves nothing and returns ctx's error). It returns what it reserved,
// for release.
func (g *QueryGate) acquire(ctx context.Context, n int) (int, error) {
	g.mu.Lock()
	limit := g.limit()
	if limit < 0 {
		g.mu.Unlock()
		return 0, nil
	}
	n = min(n, limit)
	if len(g.waiters) == 0 && g.used+n <= limit {
		g.used += n
		g.mu.Unlock()
		return n, nil
	}
	w := &gateWaiter{n: n, ready: make(chan struct{})}
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready: // granted as ctx ended: give it back
		g.used -= n
	default:
		g.waiters = slices.DeleteFunc(g.waiters, func(x *gateWaiter) bool { return x == w })
	}
	g.grant()
	return 0, ctx.Err()
}

// release gives back n bytes that acquire reserved.
func (g *QueryGate) release(n int) {
	if n == 0 {
		return
	}
	g.mu.Lock()
	g.used -= n
	g.grant()
	g.mu.Unlock()
}

// grant serves the waiters, first come first served, while the first one
// fits. g.mu is held.
func (g *QueryGate) grant() {
	for len(g.waiters) > 0 && g.used+g.waiters[0].n <= g.limit() {
		w := g.waiters[0]
		g.used += w.n
		close(w.ready)
		g.waiters = g.waiters[1:]
	}
}

// state returns the bytes reserved and the number of queries waiting.
func (g *QueryGate) state() (used, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used, len(g.waiters)
}
