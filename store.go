package values

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the store: its options, its table of values by handle,
// and the handles themselves.

// config is what the options of a store set, each option in its
// concept's file; the zero config selects every default.
type config struct {
	maxPreview   int // see WithMaxPreview; 0 selects the default
	inlineLimit  int // see WithInlineLimit; 0 selects the default
	maxResolved  int // see WithMaxResolved; 0 selects the default
	queryTime    time.Duration
	queryInput   int // see WithQueryLimits; 0 selects the default of each
	queryOutput  int
	queryMemory  int        // see WithQueryMemory; 0 selects the default
	queryGate    *QueryGate // see WithQueryGate; nil selects the process's
	memLimit     int        // see WithMemoryLimit; 0 selects the default
	onStoreError func(handle string, err error)
	firstHandle  int // see WithFirstHandle; New only
}

// preview returns the preview bound in effect.
func (c *config) preview() int {
	switch {
	case c.maxPreview <= 0:
		return DefaultMaxPreview
	case c.maxPreview < MinMaxPreview:
		return MinMaxPreview
	}
	return min(c.maxPreview, maxMaxPreview)
}

// inline returns the size up to which Observe shows a result whole.
func (c *config) inline() int {
	if c.inlineLimit == 0 {
		return c.preview()
	}
	return c.inlineLimit
}

// Option configures a [SessionValues]. The zero value of each option's
// argument selects the default.
type Option func(*config)

// DefaultMaxPreview is the default preview bound in bytes: small next to a
// context window, large enough for a head and tail a model can read.
const DefaultMaxPreview = 2048

// MinMaxPreview is the smallest preview bound a store accepts; a smaller
// one is raised to it, since a preview must at least state the kind and
// the true size.
const MinMaxPreview = 96

// maxMaxPreview is the largest preview bound a store uses: a larger one
// is lowered to it, so that sums of the bound and the parts of a preview
// never overflow. No preview comes near it.
const maxMaxPreview = 1 << 30

// WithMaxPreview sets the bound in bytes of every preview the store's
// values render. 0 or a negative n selects [DefaultMaxPreview]; an n below
// [MinMaxPreview] is raised to it, one above 1 GiB lowered to 1 GiB.
func WithMaxPreview(n int) Option { return func(c *config) { c.maxPreview = n } }

// WithInlineLimit sets the size in bytes up to which [SessionValues.Observe]
// shows a result whole instead of as a preview. 0 selects the default, the
// preview bound; a negative n makes every result a preview.
func WithInlineLimit(n int) Option { return func(c *config) { c.inlineLimit = n } }

// SessionValues is the per-run store of values, addressed by the handles
// r1, r2, … in the order they were stored. Handles are never reused. It is
// safe for concurrent use. The zero SessionValues is an empty store that
// behaves as one returned by New() without options.
type SessionValues struct {
	cfg   config
	dur   *durability // nil unless opened with Open on a Durable
	mu    sync.RWMutex
	table slots // by handle number - base - 1
	lost  int   // slots holding lostValue
	base  int   // the handle numbers before the first: see WithFirstHandle
}

// slot is one handle of the table: its value, lostValue for a handle
// lost before the session was reopened, and whether the value is durably
// stored (see SessionValues.Persisted).
type slot struct {
	v      *value
	stored bool
}

// slots is the table of a store: blocks of slotBlock slots, the last one
// growing as an append would. Adding a value never copies the slots
// before it: a run of a million values, held in one slice, would copy
// its table about 25 times over, the store's lock held for each copy.
type slots struct {
	blocks [][]slot // all but the last hold slotBlock slots
	n      int
}

const slotBlock = 1 << 10

// len returns the number of slots.
func (t *slots) len() int { return t.n }

// at returns slot i, 0 ≤ i < t.len().
func (t *slots) at(i int) *slot { return &t.blocks[i/slotBlock][i%slotBlock] }

// slotsOf returns the slots of table, which it keeps.
func slotsOf(table []slot) slots {
	t := slots{n: len(table)}
	for len(table) > 0 {
		k := min(len(table), slotBlock)
		t.blocks = append(t.blocks, table[:k:k])
		table = table[k:]
	}
	return t
}

// add appends sl.
func (t *slots) add(sl slot) {
	if k := len(t.blocks) - 1; k >= 0 && len(t.blocks[k]) < slotBlock {
		t.blocks[k] = append(t.blocks[k], sl)
	} else {
		t.blocks = append(t.blocks, append(make([]slot, 0, min(t.n+1, slotBlock)), sl))
	}
	t.n++
}

// New returns an empty store, in memory only, configured by opts. Use
// [Open] for a store whose values outlive the process.
func New(opts ...Option) *SessionValues {
	s := &SessionValues{}
	for _, o := range opts {
		o(&s.cfg)
	}
	s.base = max(s.cfg.firstHandle-1, 0)
	return s
}

// WithFirstHandle makes New hand out rn first, then rn+1 and so on, for
// n ≥ 1 (the default, 1, gives r1). A handle below rn names nothing. An MCP
// gateway with a store per client session starts each new session past
// every handle handed out before it, so that a handle in the transcript of
// a session that was lost names nothing in the session that replaces it,
// instead of another value. [Open] takes it for a new session (one
// without records); a session with records goes on after its highest
// handle, whatever its first.
func WithFirstHandle(n int) Option { return func(c *config) { c.firstHandle = n } }

// Next returns the handle the next value stored will get.
func (s *SessionValues) Next() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return handleName(s.base + s.table.len() + 1)
}

// Len returns the number of values stored.
func (s *SessionValues) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.table.len() - s.lost
}

// Get returns the value stored under handle ("r1", "r2", …). It reports
// false for a handle that was never handed out or is not of that form, and
// for one lost before the session was reopened (see [Open]).
func (s *SessionValues) Get(handle string) (Value, bool) {
	i, ok := parseHandle(handle)
	if !ok {
		return Value{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i -= s.base
	if i < 1 || i > s.table.len() || s.table.at(i-1).v == lostValue {
		return Value{}, false
	}
	return Value{s.table.at(i - 1).v}, true
}

// Handles returns the handles of every stored value, in order.
func (s *SessionValues) Handles() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	hs := make([]string, 0, s.table.len()-s.lost)
	for i := range s.table.len() {
		if s.table.at(i).v != lostValue {
			hs = append(hs, handleName(s.base+i+1))
		}
	}
	return hs
}

// parseHandle parses "r" followed by a decimal number without leading
// zeros; a number too large for an int is refused.
func parseHandle(h string) (int, bool) {
	if len(h) < 2 || h[0] != 'r' || h[1] == '0' {
		return 0, false
	}
	return jsontext.ParseUint(h[1:], math.MaxInt)
}

// handleName returns the handle of the i-th value: "r" and i.
func handleName(i int) string {
	var b [24]byte
	return string(strconv.AppendInt(append(b[:0], 'r'), int64(i), 10))
}

// add stores v and returns its handle; with durability, once persisted.
func (s *SessionValues) add(v *value) string {
	v.max = s.cfg.preview()
	s.mu.Lock()
	s.table.add(slot{v: v})
	n := s.table.len()
	s.mu.Unlock()
	h := handleName(s.base + n)
	if s.dur != nil {
		s.persist(n, h, v)
	}
	return h
}

// storedRange describes the handles of a store holding n > 0 values.
func storedRange(base, n int) string {
	if n == 1 {
		return handleName(base + 1)
	}
	return handleName(base+1) + "…" + handleName(base+n)
}
