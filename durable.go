package values

import (
	"errors"
	"fmt"
	"sync"
)

// This file holds the opt-in durable layer: persisting every stored value
// through a [Durable], and keeping large values only there. The package
// store provides Durable implementations; this package never imports it.

// Durable is where a [SessionValues] opened with [Open] persists its
// values: a body store and an append-only table of handle records per
// session. Implementations must be safe for concurrent use. The stores of
// the package github.com/agentvalues/values/store (a directory, memory)
// implement it.
type Durable interface {
	// PutBody stores body for session and returns its key. A key is
	// returned only for a body that is durable and readable by session
	// through Body; on error the key is ignored. PutBody must not modify
	// body.
	PutBody(session string, body []byte) (key string, err error)
	// Body returns the bytes stored under key for session, verified
	// against the key (bytes that do not match are an error, never
	// returned). The caller may keep and modify the result.
	Body(session, key string) ([]byte, error)
	// AppendRecord appends r to session's handle table. The table is
	// append-only and crash-safe: after a crash, Records returns every
	// record whose AppendRecord returned nil, and each record is either
	// whole or absent.
	AppendRecord(session string, r Record) error
	// Records returns session's records in append order, nil for a session
	// without records. A record the store can no longer read back (the
	// last one of a table torn by a crash, or damaged) must not be dropped
	// silently: it is returned as a lost record (see [Record.Lost]) at its
	// place in the order.
	Records(session string) ([]Record, error)
}

// SizedDurable is a [Durable] that can be told the size a body was
// recorded with. A value kept only in the durable store is read back with
// BodySized when its store implements it, so that a body the store holds
// (or claims to hold) at another size is refused before it is read,
// rather than after: reading it back then never costs more memory than
// the value as recorded.
type SizedDurable interface {
	Durable
	// BodySized is Body of a body recorded as size bytes. A body stored
	// at another size is an error, found before more than size bytes of
	// it are read into memory.
	BodySized(session, key string, size int64) ([]byte, error)
}

// Record is one entry of a session's handle table, as a [SessionValues]
// writes it: the handle, the key of its body, and what its preview and
// accessors need without reading the body. Meta is JSON whose format is
// private to this package; it holds the value's length, lines, content
// type and digest, and its preview as rendered for Handle.
type Record struct {
	Handle string // "r3"; "" in a lost record
	Key    string // the body's key, as returned by Durable.PutBody; "" for a handle whose body was not stored
	Kind   string // Kind.String() of the value
	Size   int64  // the body's size in bytes
	Meta   []byte
}

// Lost reports whether r is a lost record: one a [Durable] could no longer
// read back, with every field zero. [Open] takes it for the handle after
// the highest one recorded before it, which is never handed out again. A
// SessionValues never appends one: every record it appends names its
// handle.
func (r Record) Lost() bool { return r.Handle == "" }

// ErrUnavailable is wrapped by the error returned when the bytes of a value
// kept only in the durable store cannot be read back; the error wraps the
// store's error too. [Value.Load] returns it, [SessionValues.Read] fails
// with it, and a reference to such a value is left unresolved with it
// ([Reference.Err]).
var ErrUnavailable = errors.New("value unavailable")

// DefaultMemoryLimit is the default of [WithMemoryLimit] for a durable
// store: values up to 4 MiB stay in memory, where previews, references and
// reads cost nothing extra; larger ones are read back from the store when
// their bytes are needed.
const DefaultMemoryLimit = 4 << 20

// WithMemoryLimit sets the size in bytes above which a durably stored
// value is kept only in the durable store: once its body and record are
// stored its bytes are dropped from memory and read back from the store
// when they are needed (its preview, kind and sizes stay in memory).
// 0 selects [DefaultMemoryLimit]; a negative n keeps every value in memory.
// It has no effect on a store that is not durable ([Open]).
//
// The store holds in memory the one such value it read back last, so that
// a Resolve with many paths into it, or paging through it with
// [SessionValues.Read], reads it back once; reading back another one
// replaces it. So at most one value above the limit is held in memory at a
// time, besides the values within it. [Value.Load] uses the held value but
// does not make its own read the held one. A [Value] obtained before the
// bytes were dropped keeps them alive until it is no longer used, and so
// does the caller's own reference to the slice it passed to
// [SessionValues.PutOutput] or [SessionValues.Observe], which the store
// keeps rather than copies.
func WithMemoryLimit(n int) Option { return func(c *config) { c.memLimit = n } }

// WithStoreErrors sets the callback told of each failure to persist a
// value: the handle and an error wrapping the [Durable]'s error. It is
// called on the goroutine of the Put, before the Put returns, and outside
// any lock of the store, so it may call the store; calls for concurrent
// Puts may be concurrent. Nil, the default, ignores failures, which
// [SessionValues.Persisted] still reports. It has no effect on a store
// that is not durable ([Open]).
func WithStoreErrors(f func(handle string, err error)) Option {
	return func(c *config) { c.onStoreError = f }
}

// durability is the state of a durable store ([Open]).
type durability struct {
	d       Durable
	session string
	limit   int // values larger than this are dropped once durable; < 0: never
	onErr   func(handle string, err error)

	mu   sync.Mutex // orders record appends
	turn sync.Cond  // signalled when next changes
	next int        // number of the handle whose record is appended next

	// held is the value over the limit read back last, with its bytes: see
	// WithMemoryLimit.
	held struct {
		sync.Mutex
		d *disk  // whose value v is; nil when none is held
		v *value // with its bytes
	}
}

func newDurability(d Durable, session string, c *config) *durability {
	dur := &durability{d: d, session: session, limit: c.memLimit, onErr: c.onStoreError, next: 1}
	if dur.limit == 0 {
		dur.limit = DefaultMemoryLimit
	}
	dur.turn.L = &dur.mu
	return dur
}

// inTurn waits until the records of the handles before number n have been
// appended (or given up), runs f if not nil, and passes the turn on, also
// when f panics.
func (d *durability) inTurn(n int, f func()) {
	d.mu.Lock()
	defer func() {
		d.next = n + 1
		d.turn.Broadcast()
		d.mu.Unlock()
	}()
	for d.next < n {
		d.turn.Wait()
	}
	if f != nil {
		f()
	}
}

// persist stores the body and record of x, just added as handle number n,
// and then, once both are durable, marks it so and drops its bytes from
// memory when it is over the limit. A failure goes to the callback.
func (s *SessionValues) persist(n int, h string, x *value) {
	d := s.dur
	done := false
	defer func() {
		if !done { // PutBody panicked: give up the turn so later Puts go on
			d.inTurn(n, nil)
		}
	}()
	key, err := d.d.PutBody(d.session, x.raw)
	if err != nil {
		err = fmt.Errorf("values: storing %s: %w", h, err)
	}
	preview := ""
	// A body that could not be stored still gets a record without a key, so
	// that a reopened session knows the handle was handed out (and lost)
	// and never hands its number out again.
	rec := Record{Handle: h, Kind: x.kind.String(), Size: int64(len(x.raw))}
	if err == nil {
		preview = RenderPreview(h, Value{x})
		rec.Key, rec.Meta = key, encodeMeta(x, preview)
	}
	done = true
	d.inTurn(n, func() {
		if aerr := d.d.AppendRecord(d.session, rec); aerr != nil && err == nil {
			err = fmt.Errorf("values: recording %s: %w", h, aerr)
		}
	})
	if err != nil {
		if d.onErr != nil {
			d.onErr(h, err)
		}
		return
	}
	var kept *value
	if d.limit >= 0 && len(x.raw) > d.limit {
		kept = onDisk(x, len(x.raw), &disk{src: d, key: key, handle: h, preview: preview})
	}
	s.mu.Lock()
	sl := s.table.at(n - 1)
	sl.stored = true
	if kept != nil {
		sl.v = kept
	}
	s.mu.Unlock()
}

// Durable reports whether s was opened with [Open]: each Put, PutOutput
// and Observe then writes the value to its [Durable] store before it
// returns. A store made by [New] (or the zero SessionValues) keeps values
// in memory alone, and storing in it does no I/O.
func (s *SessionValues) Durable() bool { return s.dur != nil }

// Persisted reports whether the value under handle is durably stored: its
// body stored and its record appended, by this SessionValues or, for a
// session reopened with [Open], before it was opened. It is false for a
// store that is not durable, for an unknown handle, for a value whose
// persistence failed and while a Put is still persisting its value.
func (s *SessionValues) Persisted(handle string) bool {
	i, ok := parseHandle(handle)
	if !ok {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i -= s.base
	return i >= 1 && i <= s.table.len() && s.table.at(i-1).stored
}

// lostValue stands, in a reopened store, for a handle that was handed out
// but never recorded. It is never modified.
var lostValue = &value{}
