package store

import (
	"fmt"
	"sort"
	"sync"
	"time"

	values "github.com/agentvalues/values"
)

// Memory is a [values.Durable] and [Cleaner] that keeps everything in
// memory, for tests and for embedding where nothing must survive the
// process. It has the grant, expiry and cleanup semantics of [Dir]; its
// bodies are copies it owns and never changes, so it does not hash them
// again on Body. Grants and handle records are kept until Close, expired
// grants included, so that Body can say [ErrExpired]; only bodies are
// removed by [Memory.Apply]. Its records are never damaged, so Records
// never returns a lost one. A Memory is safe for concurrent use.
type Memory struct {
	cfg config

	mu      sync.Mutex
	closed  bool
	gen     uint64                      // last body generation handed out
	bodies  map[string]memBody          // by key
	grants  map[string]map[string]grant // by session, then key
	refs    map[string]int64            // by key: the latest expiry of any grant on it
	handles map[string][]values.Record  // by session
}

type memBody struct {
	data []byte // never modified
	gen  uint64 // changes when the key is stored again after a deletion
}

// NewMemory returns an empty memory store configured by opts ([WithTTL],
// [WithClock]); without options it has their defaults.
func NewMemory(opts ...Option) *Memory {
	return &Memory{
		cfg:     newConfig(opts),
		bodies:  make(map[string]memBody),
		grants:  make(map[string]map[string]grant),
		refs:    make(map[string]int64),
		handles: make(map[string][]values.Record),
	}
}

// PutBody stores body, copying it, and grants session read access to it
// for the store's TTL ([WithTTL]), counted from now. It returns the body's
// key, [KeyOf](body). Storing bytes that are already stored keeps no
// second copy; it only records the grant (a PutBody by a session that
// already holds a grant on the body renews it). An empty body is a valid
// body. It fails with an error matching [ErrInvalidSession] for a
// malformed session id and [ErrClosed] after Close; on any error the key
// is "" and nothing was granted.
func (m *Memory) PutBody(session string, body []byte) (string, error) {
	if err := CheckSession(session); err != nil {
		return "", err
	}
	key := KeyOf(body)
	g := m.cfg.newGrant(m.cfg.now(), len(body))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", ErrClosed
	}
	if _, ok := m.bodies[key]; !ok {
		m.gen++
		m.bodies[key] = memBody{data: append([]byte(nil), body...), gen: m.gen}
	}
	gs := m.grants[session]
	if gs == nil {
		gs = make(map[string]grant)
		m.grants[session] = gs
	}
	if old, ok := gs[key]; ok {
		g = old.merge(g)
	}
	gs[key] = g
	m.refs[key] = max(m.refs[key], g.expires)
	return key, nil
}

// Body returns a copy of the body stored under key, which the caller may
// modify. It fails with an error matching [ErrInvalidSession] or
// [ErrInvalidKey] for a malformed argument, [ErrNotFound] when no body and
// no grant exist for key, [ErrDenied] when key exists but session never
// stored it, [ErrExpired] when session's grant has run out (whether or not
// the body is still held), [ErrIntegrity] when session holds a live grant
// on a body that is gone, and [ErrClosed] after Close.
func (m *Memory) Body(session, key string) ([]byte, error) {
	if err := CheckSession(session); err != nil {
		return nil, err
	}
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	t := m.cfg.now().UnixNano()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	g, granted := m.grants[session][key]
	_, referenced := m.refs[key]
	b, stored := m.bodies[key]
	m.mu.Unlock()
	switch {
	case !granted && (stored || referenced):
		return nil, fmt.Errorf("%w: session %q did not store %s", ErrDenied, session, key)
	case !granted:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	case !live(g.expires, t):
		return nil, fmt.Errorf("%w: grant of session %q on %s ran out at %s", ErrExpired, session, key, time.Unix(0, g.expires).UTC().Format(time.RFC3339))
	case !stored:
		return nil, fmt.Errorf("%w: body %s is missing", ErrIntegrity, key)
	}
	return append([]byte(nil), b.data...), nil
}

// AppendRecord appends rec, copying its Meta, to session's handle table.
// The table is append-only; the store does not interpret records, so a
// later record with the same Handle is simply another record. A rec that
// breaks a limit ([MaxHandleLen], [MaxKindLen], [MaxMetaSize]), has an
// empty Handle (a lost record is never appended) or a Key that is neither
// "" nor valid fails with an error matching [ErrInvalidRecord] and
// appends nothing; a malformed session id fails with [ErrInvalidSession],
// and a closed store with [ErrClosed].
func (m *Memory) AppendRecord(session string, rec values.Record) error {
	if err := CheckSession(session); err != nil {
		return err
	}
	if err := CheckRecord(rec); err != nil {
		return err
	}
	rec = cloneRecord(rec)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.handles[session] = append(m.handles[session], rec)
	return nil
}

// Records returns session's handle records in append order, nil for a
// session that never appended one. The records' Meta are copies the caller
// may modify; an empty Meta reads back as nil. It fails with an error
// matching [ErrInvalidSession] for a malformed session id and [ErrClosed]
// after Close.
func (m *Memory) Records(session string) ([]values.Record, error) {
	if err := CheckSession(session); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	hs := m.handles[session]
	if len(hs) == 0 {
		return nil, nil
	}
	out := make([]values.Record, len(hs))
	for i, r := range hs {
		out[i] = cloneRecord(r)
	}
	return out, nil
}

// Close releases the store, dropping every body, grant and handle record.
// Later calls fail with [ErrClosed]; Close itself may be called more than
// once and always returns nil.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.closed = true
		m.bodies, m.grants, m.refs, m.handles = nil, nil, nil, nil
	}
	return nil
}

// Plan implements [Cleaner.Plan]. A Memory holds no files, so its plan
// lists only bodies and its Keep is always empty.
func (m *Memory) Plan(now time.Time) (Plan, error) {
	t := now.UnixNano()
	p := Plan{Now: now}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Plan{}, ErrClosed
	}
	for key, b := range m.bodies {
		expires, referenced := m.refs[key]
		sn := snapshot{owner: m, name: bodiesName + "/" + key, key: key, size: int64(len(b.data)), gen: b.gen}
		switch {
		case referenced && live(expires, t):
			p.Retained++
		case referenced:
			p.Delete = append(p.Delete, planned(sn, ReasonExpired))
		default:
			p.Delete = append(p.Delete, planned(sn, ReasonUnreferenced))
		}
	}
	sort.Slice(p.Delete, func(i, j int) bool { return p.Delete[i].Name < p.Delete[j].Name })
	return p, nil
}

// Apply implements [Cleaner.Apply]. A body is deleted only if it is the one
// the plan saw (not deleted and stored again since) and no grant on it is
// live at the earlier of p.Now and the clock. Apply fails only on a closed
// store.
func (m *Memory) Apply(p Plan) (Report, error) {
	t := applyTime(p, m.cfg.now())
	var r Report
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Report{}, ErrClosed
	}
	for _, it := range p.Delete {
		it = it.asPlanned()
		key := it.snap.key
		b, stored := m.bodies[key]
		expires, referenced := m.refs[key]
		switch {
		case it.snap.owner != m:
			it.Reason = ReasonNotPlanned
		case !stored:
			it.Reason = ReasonGone
		case b.gen != it.snap.gen:
			it.Reason = ReasonChanged
		case referenced && live(expires, t):
			it.Reason = ReasonReferenced
		default:
			delete(m.bodies, key)
			r.Deleted = append(r.Deleted, it)
			continue
		}
		r.Skipped = append(r.Skipped, it)
	}
	return r, nil
}
