package values

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the opt-in durable layer: persisting every stored value
// through a [Durable], keeping large values only there, and reopening a
// session by id ([Open]). The package store provides Durable
// implementations (store.ForValues); this package never imports it.

// Durable is where a [SessionValues] persists its values: a body store and
// an append-only table of handle records per session. Implementations must
// be safe for concurrent use. store.ForValues adapts the stores of the
// package github.com/agentvalues/values/store.
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
	// without records.
	Records(session string) ([]Record, error)
}

// Record is one entry of a session's handle table, as a [SessionValues]
// writes it: the handle, the key of its body, and what its preview and
// accessors need without reading the body. Meta is JSON whose format is
// private to this package; it holds the value's length, lines, content
// type and digest, and its preview as rendered for Handle.
type Record struct {
	Handle string // "r3"
	Key    string // the body's key, as returned by Durable.PutBody
	Kind   string // Kind.String() of the value
	Size   int64  // the body's size in bytes
	Meta   []byte
}

// ErrUnavailable is wrapped by the error returned when the bytes of a value
// kept only in the durable store cannot be read back; the error wraps the
// store's error too. [Value.Load] returns it, [SessionValues.Read] fails
// with it, and a reference to such a value is left unresolved with it
// ([Reference.Err]).
var ErrUnavailable = errors.New("value unavailable")

// ErrSessionExists is wrapped by the error [New] tells the [WithStoreErrors]
// callback when the session given [WithDurable] already has records: such a
// session is continued with [Open], never by New.
var ErrSessionExists = errors.New("session exists")

// DefaultMemoryLimit is the default of [WithMemoryLimit] for a durable
// store: values up to 4 MiB stay in memory, where previews, references and
// reads cost nothing extra; larger ones are read back from the store when
// their bytes are needed.
const DefaultMemoryLimit = 4 << 20

// WithDurable makes the store persist every value through d under the
// session id session: each Put, PutOutput and Observe stores the value's
// bytes with [Durable.PutBody] and then appends its handle record with
// [Durable.AppendRecord], before returning. Records are appended in handle
// order: a Put waits for the records of earlier handles, though bodies are
// written concurrently.
//
// A store failure never fails a Put. The value stays in memory for the
// life of the SessionValues (never dropped by [WithMemoryLimit]), the
// failure goes to the [WithStoreErrors] callback, and
// [SessionValues.Durable] reports false for the handle. For a body that
// failed, a record without a key is still appended, so that a reopened
// session knows the handle was handed out and never hands its number out
// again; a handle whose record append failed is not in the table at all.
// Either way the handle is unknown to a session reopened with [Open].
//
// [New] with WithDurable starts a new session, and first reads its records
// once with [Durable.Records] to check that it has none. When it has some,
// or they cannot be read, New disables durability for the store it
// returns: its values stay in memory only, nothing is written to d, and
// the WithStoreErrors callback is told once, with the handle "" and an
// error wrapping [ErrSessionExists] or the error of Records. This keeps a
// second New on a session from handing out its recorded handles again and
// so breaking it for Open. Use [Open] to continue a session. At most one
// SessionValues may write a session at a time. A nil d leaves the store in
// memory only.
func WithDurable(d Durable, session string) Option {
	return func(c *config) { c.durable, c.session = d, session }
}

// WithMemoryLimit sets the size in bytes above which a durably stored
// value is kept only in the durable store: once its body and record are
// stored its bytes are dropped from memory and read back from the store
// when they are needed (its preview, kind and sizes stay in memory).
// 0 selects [DefaultMemoryLimit]; a negative n keeps every value in memory.
// It has no effect without [WithDurable].
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
// [SessionValues.Durable] still reports.
//
// It is also told, once, by [New] when durability is disabled because the
// session already has records or they cannot be read (see [WithDurable]):
// with the handle "" and an error wrapping [ErrSessionExists] or the error
// of [Durable.Records]. That call is on the goroutine of New, before New
// returns; the store it returns never calls the callback again.
func WithStoreErrors(f func(handle string, err error)) Option {
	return func(c *config) { c.onStoreError = f }
}

// durability is the state of a store configured WithDurable.
type durability struct {
	d       Durable
	session string
	limit   int // values larger than this are dropped once durable; < 0: never
	onErr   func(handle string, err error)

	stored []bool // whether each handle is durable; guarded by SessionValues.mu

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

func newDurability(c *config) *durability {
	if c.durable == nil {
		return nil
	}
	d := &durability{d: c.durable, session: c.session, limit: c.memLimit, onErr: c.onStoreError, next: 1}
	if d.limit == 0 {
		d.limit = DefaultMemoryLimit
	}
	d.turn.L = &d.mu
	return d
}

// startSession is New's check that the session of a durable store has no
// records yet: when it has some, or they cannot be read, it disables
// durability and tells the callback, once, why.
func (s *SessionValues) startSession() {
	d := s.dur
	if d == nil {
		return
	}
	recs, err := d.d.Records(d.session)
	switch {
	case err != nil:
		err = fmt.Errorf("values: cannot check that session %q is new, so its values are kept in memory only: %w", d.session, err)
	case len(recs) > 0:
		err = fmt.Errorf("values: %w: session %q already has %d records; reopen it with Open (this store keeps its values in memory only)", ErrSessionExists, d.session, len(recs))
	default:
		return
	}
	s.dur = nil // before s is shared: New has not returned it yet
	if d.onErr != nil {
		d.onErr("", err)
	}
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
	d.stored[n-1] = true
	if kept != nil {
		s.vals[n-1] = Value{kept}
	}
	s.mu.Unlock()
}

// Durable reports whether the value under handle is durably stored: its
// body stored and its record appended, by this SessionValues or, for a
// store returned by [Open], before it was opened. It is false for a store
// without [WithDurable], for an unknown handle, for a value whose
// persistence failed and while a Put is still persisting its value.
func (s *SessionValues) Durable(handle string) bool {
	i, ok := parseHandle(handle)
	if !ok || s.dur == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return i <= len(s.dur.stored) && s.dur.stored[i-1]
}

// Open reopens the session with id session that a store configured
// [WithDurable](d, session) persisted, with every handle it recorded, and
// returns a store that goes on persisting to d. opts configure it as for
// [New]; a WithDurable among them is overridden by d and session. A
// session without records opens empty, which makes Open also the way to
// start a session that may have to be reopened.
//
// Open reads the records only, never a body: each value's preview, kind,
// length, lines, size, digest and content type come from its record, and
// its bytes are read back on first use (by [Value.JSON], a reference, a
// read). A value within the memory limit ([WithMemoryLimit]) is then kept
// in memory; a larger one is held only until another larger one is read
// back. [RenderPreview] returns the preview recorded when the value was
// stored, unless it is asked for another handle or is longer than the
// store's preview bound: only then does it read the body to render a new
// one.
//
// Handles go on after the highest recorded one, so no recorded handle is
// ever handed out again. A record appended twice (the same handle, key,
// kind and size) counts once. A handle whose body could not be stored is
// recorded without a body, and one whose record could not be appended is
// not recorded: either way it is unknown after Open ([SessionValues.Get]
// reports false, a reference to it is unresolved with [ErrUnknownHandle],
// and [SessionValues.Len] and [SessionValues.Handles] leave it out). Only
// when the store failed to append even that record for the last handles
// before the process ended can their numbers be handed out again.
//
// Open fails with the error of [Durable.Records], and with an error for a
// record it did not write: a handle not of the form r1, r2, …, two
// different records for one handle, an unknown kind, malformed Meta, or a
// handle number more than [MaxUnrecorded] past the number of records.
func Open(d Durable, session string, opts ...Option) (*SessionValues, error) {
	s := newStore(append(opts[:len(opts):len(opts)], WithDurable(d, session)))
	if d == nil {
		return s, nil
	}
	recs, err := d.Records(session)
	if err != nil {
		return nil, fmt.Errorf("values: opening session %q: %w", session, err)
	}
	top := 0
	for i := range recs {
		n, ok := parseHandle(recs[i].Handle)
		if !ok {
			return nil, fmt.Errorf("values: opening session %q: record %d: %q is not a handle r1, r2, …", session, i, jsontext.ClipString(recs[i].Handle))
		}
		if n > len(recs)+MaxUnrecorded {
			return nil, fmt.Errorf("values: opening session %q: record %d: handle %s is more than %d past the %d records; a record was damaged or not written by this package", session, i, recs[i].Handle, MaxUnrecorded, len(recs))
		}
		top = max(top, n)
	}
	vals := make([]Value, top)
	first := make([]int, top) // index+1 in recs of the first record of each handle
	for i := range recs {
		r := &recs[i]
		n, _ := parseHandle(r.Handle)
		if j := first[n-1]; j != 0 {
			if p := &recs[j-1]; p.Key != r.Key || p.Kind != r.Kind || p.Size != r.Size {
				return nil, fmt.Errorf("values: opening session %q: handle %s is recorded twice, differently (records %d and %d); was the session written by two stores at once?", session, r.Handle, j-1, i)
			}
			continue // the same record appended again
		}
		first[n-1] = i + 1
		if r.Key == "" { // a handle recorded without a body
			vals[n-1] = Value{lostValue}
			continue
		}
		x, err := s.fromRecord(r)
		if err != nil {
			return nil, fmt.Errorf("values: opening session %q: record %d (%s): %w", session, i, r.Handle, err)
		}
		vals[n-1] = Value{x}
	}
	stored := make([]bool, top)
	for i := range vals {
		switch vals[i].v {
		case nil:
			vals[i] = Value{lostValue}
			s.lost++
		case lostValue:
			s.lost++
		default:
			stored[i] = true
		}
	}
	s.vals, s.dur.stored, s.dur.next = vals, stored, top+1
	return s, nil
}

// MaxUnrecorded is how many handles of a session may lack a record for
// [Open] to accept it: a handle number more than MaxUnrecorded past the
// number of records is taken for a damaged or foreign record, and Open
// fails. A handle lacks a record only when the store failed to append it
// (see [WithDurable]), so a real session stays far below this. Open
// allocates about 17 bytes for every handle number up to the highest, so
// the bound keeps what one bad record can make it allocate to about 17 MiB
// beyond what the records take already.
const MaxUnrecorded = 1 << 20

// lostValue stands, in a reopened store, for a handle that was handed out
// but never recorded. It is never modified.
var lostValue = &value{}

// recordMeta is the Meta of a Record, encoded as JSON.
type recordMeta struct {
	V       int    `json:"v"`               // format version, metaVersion
	N       int    `json:"n,omitempty"`     // Value.Len
	Lines   int    `json:"lines,omitempty"` // Value.Lines
	CType   string `json:"ctype,omitempty"` // binary: Value.ContentType
	SHA256  string `json:"sha256,omitempty"`
	Max     int    `json:"max"`     // preview bound Preview was rendered with
	Preview string `json:"preview"` // RenderPreview of the value for Record.Handle
}

const metaVersion = 1

func encodeMeta(x *value, preview string) []byte {
	m := recordMeta{V: metaVersion, N: x.n, Lines: x.lines, CType: x.ctype, Max: x.max, Preview: preview}
	if x.kind == KindBinary {
		m.SHA256 = hex.EncodeToString(x.sum[:])
	}
	b, _ := json.Marshal(&m) // cannot fail: only strings and ints
	return b
}

// decodeMeta decodes what encodeMeta wrote: a flat JSON object of strings
// and numbers, validated as it is read, without reflection (Open decodes
// one Meta per handle). Unknown fields are ignored.
func decodeMeta(b []byte) (recordMeta, error) {
	var m recordMeta
	if err := jsontext.Valid(b); err != nil {
		return m, fmt.Errorf("malformed meta: %w", err)
	}
	b = b[jsontext.SkipSpace(b, 0):]
	if b[0] != '{' {
		return m, errors.New("malformed meta: not an object")
	}
	var err error
	jsontext.EachChild(b, func(k, v []byte) bool {
		if !m.set(k, v) {
			err = fmt.Errorf("malformed meta: field %s has the wrong type", jsontext.AppendClipped(nil, k, 40))
		}
		return err == nil
	})
	return m, err
}

// set sets the field named by the quoted key k to the validated JSON
// string or number v, and reports false when v has the wrong type.
func (m *recordMeta) set(k, v []byte) (ok bool) {
	switch {
	case jsontext.KeyEquals(k, "v"):
		m.V, ok = metaInt(v)
	case jsontext.KeyEquals(k, "n"):
		m.N, ok = metaInt(v)
	case jsontext.KeyEquals(k, "lines"):
		m.Lines, ok = metaInt(v)
	case jsontext.KeyEquals(k, "max"):
		m.Max, ok = metaInt(v)
	case jsontext.KeyEquals(k, "ctype"):
		m.CType, ok = metaString(v)
	case jsontext.KeyEquals(k, "sha256"):
		m.SHA256, ok = metaString(v)
	case jsontext.KeyEquals(k, "preview"):
		m.Preview, ok = metaString(v)
	default:
		ok = true
	}
	return ok
}

// metaInt parses a valid JSON number that is a non-negative int.
func metaInt(v []byte) (int, bool) { return jsontext.ParseUint(v, maxInt) }

// metaString decodes a validated JSON string.
func metaString(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	u := jsontext.AppendUnquoted(make([]byte, 0, len(v)-2), v) // never longer than the escaped form
	return unsafe.String(unsafe.SliceData(u), len(u)), true    // u is never modified
}

// fromRecord builds the disk-only value a record describes.
func (s *SessionValues) fromRecord(r *Record) (*value, error) {
	m, err := decodeMeta(r.Meta)
	if err != nil {
		return nil, err
	}
	if m.V != metaVersion {
		return nil, fmt.Errorf("meta format %d, want %d", m.V, metaVersion)
	}
	k, ok := kindNamed(r.Kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", jsontext.ClipString(r.Kind))
	}
	if r.Size < 0 || int64(int(r.Size)) != r.Size {
		return nil, fmt.Errorf("size %d out of range", r.Size)
	}
	x := value{kind: k, n: m.N, lines: m.Lines, ctype: m.CType, max: s.cfg.maxPreview}
	if m.SHA256 != "" {
		if n, err := hex.Decode(x.sum[:], []byte(m.SHA256)); err != nil || n != len(x.sum) {
			return nil, fmt.Errorf("malformed sha256 %q", jsontext.ClipString(m.SHA256))
		}
	}
	if !utf8.ValidString(m.Preview) { // not written by encodeMeta: render it again when asked
		m.Preview = ""
	}
	d := &disk{src: s.dur, key: r.Key, handle: r.Handle, preview: m.Preview}
	d.keep = s.dur.limit < 0 || r.Size <= int64(s.dur.limit)
	return onDisk(&x, int(r.Size), d), nil
}

func kindNamed(name string) (Kind, bool) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// disk is what a value kept only in the durable store needs to read its
// bytes back and to show its preview without them.
type disk struct {
	src     *durability
	key     string
	handle  string // the handle preview was rendered for
	preview string
	keep    bool                  // keep the bytes in memory once read back
	cache   atomic.Pointer[value] // the value with its bytes, once read back, when keep
}

// heldValue returns the value held for d, or nil when d's is not held.
func (src *durability) heldValue(d *disk) *value {
	src.held.Lock()
	defer src.held.Unlock()
	if src.held.d != d {
		return nil
	}
	return src.held.v
}

// hold makes m, read back for d, the held value, replacing the one held.
func (src *durability) hold(d *disk, m *value) {
	src.held.Lock()
	src.held.d, src.held.v = d, m
	src.held.Unlock()
}

// onDisk returns a copy of x, of byte size size, whose bytes are read back
// through d. The copy and d are one allocation.
func onDisk(x *value, size int, d *disk) *value {
	p := &struct {
		v value
		d disk
	}{v: *x}
	p.v.raw, p.v.size, p.v.disk = nil, size, &p.d
	p.d.src, p.d.key, p.d.handle, p.d.preview, p.d.keep = d.src, d.key, d.handle, d.preview, d.keep
	return &p.v
}

// loaded returns x itself when its bytes are in memory, and otherwise a
// copy of x holding its bytes read back from the store; shared reports
// whether the copy's bytes are kept by the store (so must not be handed
// out to be modified). A value within the memory limit is kept once read
// back; a larger one becomes the held value (see WithMemoryLimit).
func (x *value) loaded() (m *value, shared bool, err error) { return x.load(true) }

// load is loaded; hold false leaves a value over the memory limit read
// back unheld, and so unshared, for Load to hand out without a copy. Bytes
// read back are checked again as Put checks them (JSON valid and of the
// recorded kind, text valid UTF-8), so that a record that does not match
// its body is an error rather than a value the rest of the package would
// misread. The error wraps ErrUnavailable and has no "values: " prefix,
// for the caller to add with its context.
func (x *value) load(hold bool) (m *value, shared bool, err error) {
	d := x.disk
	if d == nil {
		return x, true, nil
	}
	if d.keep {
		if c := d.cache.Load(); c != nil {
			return c, true, nil
		}
	} else if c := d.src.heldValue(d); c != nil {
		return c, true, nil
	}
	b, err := d.src.d.Body(d.src.session, d.key) // outside any lock: it may be slow
	if err != nil {
		return nil, false, fmt.Errorf("%w: reading %s back: %w", ErrUnavailable, d.handle, err)
	}
	if m, err = x.rebuild(b); err != nil {
		return nil, false, fmt.Errorf("%w: %s read back: %w", ErrUnavailable, d.handle, err)
	}
	switch {
	case d.keep:
		if !d.cache.CompareAndSwap(nil, m) {
			return d.cache.Load(), true, nil
		}
		return m, true, nil
	case hold:
		d.src.hold(d, m)
		return m, true, nil
	}
	return m, false, nil
}

// rebuild returns the in-memory value of x's kind whose bytes are b, or an
// error when b is not such a value.
func (x *value) rebuild(b []byte) (*value, error) {
	if len(b) != x.size {
		return nil, fmt.Errorf("got %d bytes, want %d", len(b), x.size)
	}
	switch x.kind {
	case KindText:
		if !utf8.Valid(b) {
			return nil, errors.New("text is not valid UTF-8")
		}
		fallthrough
	case KindBinary:
		c := *x
		c.raw, c.disk = b, nil
		return &c, nil
	}
	y, err := newJSON(b)
	if err != nil {
		return nil, fmt.Errorf("invalid %s: %w", x.kind, err)
	}
	if y.kind != x.kind || len(y.raw) != len(b) {
		return nil, fmt.Errorf("recorded as %s, read back as %s of %d bytes", x.kind, y.kind, len(y.raw))
	}
	y.max = x.max
	return y, nil
}

// materialize returns whole, the value r names, with its bytes in memory:
// read back for a value kept only in the durable store. The error, for a
// handle lost before a reopen or a value that cannot be read back, says
// which reference failed.
func (s *SessionValues) materialize(r refPath, whole Value) (Value, error) {
	x := whole.v
	if x == nil || x.disk == nil && x != lostValue {
		return whole, nil
	}
	if x == lostValue {
		return Value{}, fmt.Errorf("values: %q is %w: it was handed out before the session was reopened but never stored durably", r.String(), ErrUnknownHandle)
	}
	m, _, err := x.loaded()
	if err != nil {
		return Value{}, fmt.Errorf("values: %q: %w", r.String(), err)
	}
	return Value{m}, nil
}

// cachedPreview returns the recorded preview of a disk-only value, when it
// was rendered for handle and fits limit.
func (x *value) cachedPreview(handle string, limit int) (string, bool) {
	d := x.disk
	if d == nil || d.preview == "" || d.handle != handle || len(d.preview) > limit {
		return "", false
	}
	return d.preview, true
}

// Load returns a new copy of the value's bytes, as [Value.Bytes] does, and
// for a value kept only in the durable store ([WithMemoryLimit], [Open])
// reads them back, failing with an error wrapping [ErrUnavailable] and the
// store's error when it cannot. It copies a value the store holds in
// memory rather than read it again, but the bytes it reads back for a value
// over the memory limit are the caller's and are not held by the store.
func (v Value) Load() ([]byte, error) {
	m, shared, err := v.get().load(false)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if shared {
		return bytes.Clone(m.raw), nil
	}
	return m.raw, nil
}

// unavailablePreview is the preview of a disk-only value whose bytes cannot
// be read back: "r3 = array(len=100, bytes=5.0 MiB, unavailable)".
func unavailablePreview(handle string, x *value, limit int) string {
	b := appendHandle(make([]byte, 0, 96), handle)
	b = append(b, " = "...)
	b = append(b, x.kind.String()...)
	b = append(b, '(')
	if x.kind == KindArray || x.kind == KindObject || x.kind == KindText || x.kind == KindBinary {
		b = append(b, "len="...)
		b = strconv.AppendInt(b, int64(x.n), 10)
		b = append(b, ", "...)
	}
	b = append(b, "bytes="...)
	b = strconv.AppendInt(b, int64(x.size), 10)
	b = append(b, ", unavailable)"...)
	return string(jsontext.AppendClipped(nil, b, limit))
}
