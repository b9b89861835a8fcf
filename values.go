package values

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/gabriel-vasile/mimetype"
)

// Kind is the type of a stored value.
type Kind uint8

// The kinds of value. A JSON string is stored as text.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindText
	KindArray
	KindObject
	KindBinary
)

var kindNames = [...]string{"null", "bool", "number", "text", "array", "object", "binary"}

// String returns the kind's lowercase name, such as "array".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ErrInvalidJSON is wrapped by the error [SessionValues.Put] returns for a
// [json.RawMessage] that is not exactly one valid JSON value.
var ErrInvalidJSON = jsontext.ErrSyntax

// Value is one stored value. It is immutable and safe for concurrent use;
// copying a Value is cheap and shares the stored bytes. A value kept only in
// the durable store ([WithMemoryLimit], [Open]) reads its bytes back when a
// method needs them; its kind, sizes, digest and content type are in
// memory. The zero Value is the JSON null.
type Value struct{ v *value }

type value struct {
	kind  Kind
	raw   []byte // JSON for null, bool, number, array, object; UTF-8 for text; bytes for binary
	n     int    // see Value.Len
	lines int    // text: line count
	sum   [sha256.Size]byte
	ctype string     // binary: sniffed content type
	c     *container // the index of an array or object, or of the JSON a text holds; see index
	table *table     // the table a text holds; see index
	lazy  *lazyIndex // for a value indexed on first use, its index; see index
	max   int        // preview bound in effect when stored
	size  int        // byte size of raw, for a value whose raw is in the durable store
	disk  *disk      // non-nil for a value kept only in the durable store (raw is nil)
}

var nullValue = &value{kind: KindNull, raw: []byte("null")}

func (v Value) get() *value {
	if v.v == nil {
		return nullValue
	}
	return v.v
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.get().kind }

// Len returns the number of items of an array, the number of keys of an
// object (duplicates counted), or the byte length of text and binary
// values. It is 0 for null, bool and number values.
func (v Value) Len() int { return v.get().n }

// Lines returns the number of lines of a text value: the number of newline
// characters, plus one when the text is not empty and does not end in a
// newline. It is 0 for other kinds.
func (v Value) Lines() int { return v.get().lines }

// Size returns the byte size of the value as stored: its JSON, its text or
// its binary bytes.
func (v Value) Size() int {
	x := v.get()
	if x.disk != nil {
		return x.size
	}
	return len(x.raw)
}

// JSON returns a new copy of the value's JSON encoding: the stored JSON of
// arrays, objects and scalars, a JSON string for text, and a JSON string
// holding the standard base64 encoding of binary values. For a value kept
// only in the durable store ([WithMemoryLimit], [Open]) it reads the bytes
// back, and returns nil when they cannot be read; [Value.Load] says why.
func (v Value) JSON() []byte {
	x, _, err := v.get().loaded()
	if err != nil {
		return nil
	}
	return Value{x}.AppendJSON(nil)
}

// AppendJSON appends the value's JSON encoding, as returned by [Value.JSON],
// to dst and returns the extended slice. For a value kept only in the
// durable store it reads the bytes back, and returns dst unchanged when
// they cannot be read.
func (v Value) AppendJSON(dst []byte) []byte {
	x, _, err := v.get().loaded()
	if err != nil {
		return dst
	}
	switch x.kind {
	case KindText:
		return jsontext.AppendQuote(dst, x.raw)
	case KindBinary:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x.raw)
		return append(dst, '"')
	}
	return append(dst, x.raw...)
}

// Bytes returns a new copy of the value's own bytes: the text of a text
// value, the bytes of a binary value, and the JSON of every other kind.
// For a value kept only in the durable store it reads them back, and
// returns nil when they cannot be read; [Value.Load] says why.
func (v Value) Bytes() []byte {
	b, _ := v.Load()
	return b
}

// Digest returns the SHA-256 of a binary value's bytes, and the zero array
// for other kinds.
func (v Value) Digest() [sha256.Size]byte { return v.get().sum }

// ContentType returns the content type of a binary value, detected from
// its first 3 KiB by github.com/gabriel-vasile/mimetype (which knows some
// 180 formats: "image/png", "application/zip", "application/pdf", …, and
// "application/octet-stream" when none matches), and "" for other kinds.
func (v Value) ContentType() string { return v.get().ctype }

// Options.

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
	table []slot // by handle number - base - 1
	lost  int    // slots holding lostValue
	base  int    // the handle numbers before the first: see WithFirstHandle
}

// slot is one handle of the table: its value, lostValue for a handle
// lost before the session was reopened, and whether the value is durably
// stored (see SessionValues.Persisted).
type slot struct {
	v      *value
	stored bool
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
// instead of another value. [Open] ignores it: a durable session's numbers
// come from its records.
func WithFirstHandle(n int) Option { return func(c *config) { c.firstHandle = n } }

// Next returns the handle the next value stored will get.
func (s *SessionValues) Next() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return handleName(s.base + len(s.table) + 1)
}

// Len returns the number of values stored.
func (s *SessionValues) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.table) - s.lost
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
	if i < 1 || i > len(s.table) || s.table[i-1].v == lostValue {
		return Value{}, false
	}
	return Value{s.table[i-1].v}, true
}

// Handles returns the handles of every stored value, in order.
func (s *SessionValues) Handles() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	hs := make([]string, 0, len(s.table)-s.lost)
	for i, sl := range s.table {
		if sl.v != lostValue {
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
	return jsontext.ParseUint(h[1:], maxInt)
}

func handleName(i int) string {
	var b [24]byte
	return string(strconv.AppendInt(append(b[:0], 'r'), int64(i), 10))
}

// add stores v and returns its handle; with durability, once persisted.
func (s *SessionValues) add(v *value) string {
	v.max = s.cfg.preview()
	s.mu.Lock()
	s.table = append(s.table, slot{v: v})
	n := len(s.table)
	s.mu.Unlock()
	h := handleName(s.base + n)
	if s.dur != nil {
		s.persist(n, h, v)
	}
	return h
}

// Put stores v and returns its handle.
//
// A string becomes a text value, and a []byte a binary value. A string
// that is not valid UTF-8 is stored as binary rather than altered. A
// [json.RawMessage] is validated and stored as received (a JSON string in
// it becomes text); an invalid one is an error wrapping [ErrInvalidJSON].
// Like [SessionValues.PutOutput], Put keeps a []byte or json.RawMessage
// itself rather than a copy: the caller must not modify it afterwards. A
// [Value] is stored again under a new handle; one kept only in the durable
// store is read back first, and is an error wrapping [ErrUnavailable] when
// it cannot be. Anything else is stored as its encoding/json encoding,
// without HTML escaping; a value encoding/json cannot encode is an error.
// No handle is used up by a failed Put.
//
// In a store opened with [Open], Put returns once the value is persisted,
// or its persistence has failed: a store failure never fails a Put.
func (s *SessionValues) Put(v any) (string, error) {
	var x *value
	switch v := v.(type) {
	case string:
		// Strings are immutable and the store never writes to its bytes.
		x = newTextOrBinary(unsafe.Slice(unsafe.StringData(v), len(v)), s.cfg.inline())
	case []byte:
		x = newBinary(v)
	case json.RawMessage:
		var err error
		if x, err = newJSON(v, s.cfg.inline()); err != nil {
			return "", err
		}
	case Value:
		m, _, err := v.get().loaded()
		if err != nil {
			return "", fmt.Errorf("values: %w", err)
		}
		c := *m
		x = &c
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", fmt.Errorf("values: cannot encode %T as JSON: %w", v, err)
		}
		var err error
		if x, err = newJSON(buf.Bytes(), s.cfg.inline()); err != nil {
			return "", err // unreachable for encoding/json output; kept for safety
		}
	}
	return s.add(x), nil
}

// PutOutput stores a tool's raw output exactly as received and returns its
// handle. It never fails and loses nothing: a JSON object or array
// (surrounding whitespace allowed, and dropped) becomes a JSON value, any
// other valid UTF-8 becomes text (so a command printing 42 stays the text
// "42"), and anything else becomes a binary value.
//
// The store keeps out itself rather than a copy, so that a 100 MB result
// costs 100 MB once: the caller must not modify out after the call. In a
// store made by [Open] it persists the value as [SessionValues.Put] does.
func (s *SessionValues) PutOutput(out []byte) string {
	return s.add(classify(out, s.cfg.inline()))
}

// classify builds the value PutOutput stores for b, which it owns. A value
// of more than eager bytes is indexed at once, a smaller one on first use
// (see value.index).
func classify(b []byte, eager int) *value {
	tried := jsonUntried
	if i := jsontext.SkipSpace(b, 0); i < len(b) && (b[i] == '{' || b[i] == '[') {
		x, err := newJSON(b, eager)
		if err == nil {
			return x
		}
		tried = jsonBroken
		if jsontext.AfterValue(err) {
			tried = jsonMore
		}
	}
	return newText(b, eager, tried)
}

// jsonTried is what the caller of newText learned of the text by scanning
// it as one JSON value, so that indexText does not scan it so again (a
// 100 MB JSON array cut short by the tool that printed it fails once).
type jsonTried uint8

const (
	jsonUntried jsonTried = iota // not scanned
	jsonBroken                   // not one value, nor one followed by more: no JSON, no stream
	jsonMore                     // one whole value and more after it: maybe a stream
)

func newTextOrBinary(b []byte, eager int) *value { return newText(b, eager, jsonUntried) }

// newText is newTextOrBinary of text the caller may have scanned as JSON
// already (tried).
func newText(b []byte, eager int, tried jsonTried) *value {
	if !utf8.Valid(b) {
		return newBinary(b)
	}
	lines := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		lines++
	}
	if len(b) <= eager {
		return newLazy(value{kind: KindText, raw: b, n: len(b), lines: lines})
	}
	x := &value{kind: KindText, raw: b, n: len(b), lines: lines}
	x.c, x.table = indexText(b, lines, tried)
	return x
}

func newBinary(b []byte) *value {
	return &value{
		kind:  KindBinary,
		raw:   b,
		n:     len(b),
		sum:   sha256.Sum256(b),
		ctype: mimetype.Detect(b).String(),
	}
}

// newJSON validates b, which it owns, as one JSON value, and indexes it at
// once when it has more than eager bytes.
func newJSON(b []byte, eager int) (*value, error) {
	lim := scanLimits
	if len(b) <= eager {
		lim = jsontext.Limits{} // validate and count only
	}
	top, sh, err := jsontext.Scan(b, lim)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	raw := b[top.Start:top.End]
	switch raw[0] {
	case '"':
		return newTextOrBinary(jsontext.AppendUnquoted(nil, raw), eager), nil
	case 't', 'f':
		return &value{kind: KindBool, raw: raw}, nil
	case 'n':
		return &value{kind: KindNull, raw: raw}, nil
	case '[', '{':
		if len(b) <= eager {
			return newLazy(value{kind: kindOf(raw[0]), raw: raw, n: sh.Count}), nil
		}
		c := newContainer(raw, &sh, top.Start, 0)
		return &value{kind: c.kind, raw: raw, n: sh.Count, c: c}, nil
	}
	return &value{kind: KindNumber, raw: raw}, nil
}

// Observation is what an agent loop puts in the transcript for one tool
// result: see [SessionValues.Observe] and [SessionValues.Transcript].
type Observation struct {
	Handle    string // the handle the result is stored under
	Text      string // the text for the transcript
	Previewed bool   // whether Text is a preview rather than the whole result
}

// Observe stores a tool's raw output with [SessionValues.PutOutput] and
// returns what the agent loop puts in the transcript in its place, as
// [SessionValues.Transcript] gives it.
func (s *SessionValues) Observe(out []byte) Observation {
	x := classify(out, s.cfg.inline())
	h := s.add(x)
	return s.transcript(h, x) // with its bytes, even if the store has dropped them
}

// Transcript returns what an agent loop puts in the transcript for the
// value under handle, and false for an unknown handle.
//
// A value whose stored size is at most the inline limit ([WithInlineLimit];
// by default the preview bound) is shown whole (text as it is, JSON as
// stored) followed by a line naming its handle. A larger value, and every
// binary value, is shown as [RenderPreview] followed by [ReferenceHint].
// Either way the text is at most the inline limit or the preview bound,
// plus one hint line. A value kept only in the durable store is read back
// to be shown whole; when that fails it is previewed.
func (s *SessionValues) Transcript(handle string) (Observation, bool) {
	v, ok := s.Get(handle)
	if !ok {
		return Observation{}, false
	}
	x := v.get()
	if x.disk != nil && x.size <= s.cfg.inline() && x.kind != KindBinary {
		if m, _, err := x.loaded(); err == nil {
			x = m
		}
	}
	return s.transcript(handle, x), true
}

// transcript is Transcript for the value x under handle h.
func (s *SessionValues) transcript(h string, x *value) Observation {
	if x.kind == KindBinary || x.disk != nil || len(x.raw) > s.cfg.inline() {
		b := make([]byte, 0, min(x.max, DefaultMaxPreview)+64+hintLen+5*len(h))
		b = appendReferenceHint(appendPreview(b, h, Value{x}), h)
		return Observation{Handle: h, Text: string(b), Previewed: true}
	}
	text := make([]byte, 0, len(x.raw)+96)
	text = append(text, x.raw...)
	if len(text) > 0 && text[len(text)-1] != '\n' {
		text = append(text, '\n')
	}
	for _, part := range [...]string{"[stored as ", h, ": pass \"$", h, "\" or \"$", h, ".<field>\" as a tool argument to reuse it]"} {
		text = append(text, part...)
	}
	return Observation{Handle: h, Text: unsafe.String(unsafe.SliceData(text), len(text))} // text is never modified
}
