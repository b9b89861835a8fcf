// Package values keeps every tool result of an agent run live under a short
// handle, puts a bounded, typed preview of it in the transcript, and lets
// the model pass the value back by reference.
//
// A tool result that is larger than the model's context is usually cut down
// before it enters the transcript, and the cut part is gone. With this
// package the loop stores the whole result in a [SessionValues], shows the
// model a preview such as
//
//	r1 = array(len=100, [:3]=[{id:1,name:"a", …}, …], [-2:]=[…])
//
// and, when the model later calls a tool with the argument "$r1.57.name",
// hands the tool the real value before the tool's schema is checked.
//
//	vals := values.New()
//	obs := vals.Observe(toolOutput) // store, then preview + hint for the transcript
//	transcript = append(transcript, obs.Text)
//	// ... the model answers with a call whose arguments say "$r1.rows.0.id"
//	args, refs, err := vals.Prepare(schema, call.Arguments)
//
// # Values
//
// A value is immutable once stored and is kept as its raw bytes: the JSON as
// received, the UTF-8 text, or the binary bytes. It is validated once, at
// Put, in the same pass that computes the small index previews need, so a
// preview costs time proportional to the preview, never to the value. No
// decoded tree of a value is kept. A JSON array of 4 MiB or more is
// validated by two goroutines, one for each half; both have ended when Put
// returns.
//
// # Previews
//
// [RenderPreview] describes a value in one line (a text head or tail may
// carry escaped newlines) that is never longer than the store's preview
// bound, whatever the value; see the function for the grammar.
// [ReferenceHint] is the line that tells the model how to reach the rest.
//
// # References
//
// A tool argument that is exactly a string of the form
//
//	ref     = "$" handle *("." segment)
//	handle  = "r" digit1-9 *digit          ; r0, r01 are not handles
//	segment = 1*(char / "\." / "\\")       ; "\." is a literal dot inside a key
//
// names a stored value or a part of one: a segment is an object key or an
// array index (0, 1, …; -1 is the last item). [SessionValues.Resolve]
// replaces each such string with the JSON of what it names; a string that
// merely contains one is left alone, "$$r1" passes the literal "$r1", and a
// reference that names nothing is left as written and reported.
// [SessionValues.Prepare] resolves, then validates against the tool's
// [Schema], and explains every violation by JSON pointer and reference.
// [SessionValues.Read] and the read_value tool ([ReadValueTool]) page any
// value's bytes.
//
// # Limits
//
// Every limit is an [Option] or constant with a documented default: the
// preview bound ([WithMaxPreview], 2 KiB), the size up to which
// [SessionValues.Observe] shows a result whole ([WithInlineLimit], the
// preview bound), the size of resolved arguments ([WithMaxResolved],
// 64 MiB), the page size of reads ([DefaultReadLimit], 32 KiB, at most
// [MaxReadLimit]), what schema validation accepts ([MaxArgsDepth],
// [MaxNumberExponent], [MaxNumberDigits]), the work of one validation
// ([ValidationSteps], [ValidationTime]) and, with durability, the size
// above which values live only in the durable store ([WithMemoryLimit],
// 4 MiB).
//
// # Durability
//
// Optionally ([WithDurable]) every value is also persisted to a [Durable]
// store, values above a memory limit ([WithMemoryLimit], 4 MiB) are then
// kept only there, and [Open] reopens the session in a new process with its
// handles, previews, references and reads intact. A store failure never
// fails a Put ([WithStoreErrors], [SessionValues.Durable]).
package values

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
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
	ctype string // binary: sniffed content type
	elems []node // preview index of arrays and objects
	max   int    // preview bound in effect when stored
	size  int    // byte size of raw, for a value whose raw is in the durable store
	disk  *disk  // non-nil for a value kept only in the durable store (raw is nil)
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

// ContentType returns the content type sniffed from a binary value's first
// bytes (as net/http.DetectContentType does), and "" for other kinds.
func (v Value) ContentType() string { return v.get().ctype }

// Options.

type config struct {
	maxPreview  int
	inlineLimit int
	maxResolved int // see WithMaxResolved; 0 selects the default

	// See durable.go.
	durable      Durable
	session      string
	memLimit     int
	onStoreError func(handle string, err error)
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
// safe for concurrent use.
type SessionValues struct {
	cfg  config
	dur  *durability // nil unless WithDurable
	mu   sync.RWMutex
	vals []Value // by handle number - 1; lostValue for a handle lost before Open
	lost int     // number of lostValue entries
}

// New returns an empty store configured by opts.
//
// With [WithDurable] it starts a new session and first reads the session's
// records once: when the session already has records, or they cannot be
// read, the store keeps its values in memory only, writes nothing to the
// [Durable], and tells the [WithStoreErrors] callback once, with the
// handle "" and an error wrapping [ErrSessionExists] or the store's error.
// Use [Open] to continue a session.
func New(opts ...Option) *SessionValues {
	s := newStore(opts)
	s.startSession()
	return s
}

// newStore returns an empty store configured by opts, without New's check
// of a durable session.
func newStore(opts []Option) *SessionValues {
	var c config
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.maxPreview <= 0:
		c.maxPreview = DefaultMaxPreview
	case c.maxPreview < MinMaxPreview:
		c.maxPreview = MinMaxPreview
	case c.maxPreview > maxMaxPreview:
		c.maxPreview = maxMaxPreview
	}
	if c.inlineLimit == 0 {
		c.inlineLimit = c.maxPreview
	}
	return &SessionValues{cfg: c, dur: newDurability(&c)}
}

// Len returns the number of values stored.
func (s *SessionValues) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals) - s.lost
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
	if i > len(s.vals) || s.vals[i-1].v == lostValue {
		return Value{}, false
	}
	return s.vals[i-1], true
}

// Handles returns the handles of every stored value, in order.
func (s *SessionValues) Handles() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	hs := make([]string, 0, len(s.vals)-s.lost)
	for i, v := range s.vals {
		if v.v != lostValue {
			hs = append(hs, handleName(i+1))
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

func handleName(i int) string { return "r" + strconv.Itoa(i) }

// add stores v and returns its handle; with WithDurable, once persisted.
func (s *SessionValues) add(v *value) string {
	v.max = s.cfg.maxPreview
	s.mu.Lock()
	s.vals = append(s.vals, Value{v})
	n := len(s.vals)
	if s.dur != nil {
		s.dur.stored = append(s.dur.stored, false)
	}
	s.mu.Unlock()
	h := handleName(n)
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
// With [WithDurable], Put returns once the value is persisted, or its
// persistence has failed: a store failure never fails a Put.
func (s *SessionValues) Put(v any) (string, error) {
	var x *value
	switch v := v.(type) {
	case string:
		// Strings are immutable and the store never writes to its bytes.
		x = newTextOrBinary(unsafe.Slice(unsafe.StringData(v), len(v)))
	case []byte:
		x = newBinary(v)
	case json.RawMessage:
		var err error
		if x, err = newJSON(v); err != nil {
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
		if x, err = newJSON(buf.Bytes()); err != nil {
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
// costs 100 MB once: the caller must not modify out after the call. With
// [WithDurable] it persists the value as [SessionValues.Put] does.
func (s *SessionValues) PutOutput(out []byte) string {
	return s.add(classify(out))
}

// classify builds the value PutOutput stores for b, which it owns.
func classify(b []byte) *value {
	if i := jsontext.SkipSpace(b, 0); i < len(b) && (b[i] == '{' || b[i] == '[') {
		if x, err := newJSON(b); err == nil {
			return x
		}
	}
	return newTextOrBinary(b)
}

func newTextOrBinary(b []byte) *value {
	if !utf8.Valid(b) {
		return newBinary(b)
	}
	lines := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		lines++
	}
	return &value{kind: KindText, raw: b, n: len(b), lines: lines}
}

func newBinary(b []byte) *value {
	return &value{
		kind:  KindBinary,
		raw:   b,
		n:     len(b),
		sum:   sha256.Sum256(b),
		ctype: http.DetectContentType(b),
	}
}

// newJSON validates and indexes b, which it owns, as one JSON value.
func newJSON(b []byte) (*value, error) {
	top, sh, err := jsontext.Scan(b, scanHead, scanTail)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	raw := b[top.Start:top.End]
	switch raw[0] {
	case '"':
		return newTextOrBinary(jsontext.AppendUnquoted(nil, raw)), nil
	case 't', 'f':
		return &value{kind: KindBool, raw: raw}, nil
	case 'n':
		return &value{kind: KindNull, raw: raw}, nil
	case '[', '{':
		x := &value{kind: KindArray, raw: raw, n: sh.Count}
		if raw[0] == '{' {
			x.kind = KindObject
		}
		x.elems = indexChildren(b, x.kind, &sh)
		// Rebase spans onto raw.
		for i := range x.elems {
			x.elems[i].rebase(top.Start)
		}
		return x, nil
	}
	return &value{kind: KindNumber, raw: raw}, nil
}

// Observation is what an agent loop puts in the transcript for one tool
// result stored by [SessionValues.Observe].
type Observation struct {
	Handle    string // the handle the result is stored under
	Text      string // the text for the transcript
	Previewed bool   // whether Text is a preview rather than the whole result
}

// Observe stores a tool's raw output with [SessionValues.PutOutput] and
// returns what the agent loop puts in the transcript in its place.
//
// A result whose stored size is at most the inline limit ([WithInlineLimit];
// by default the preview bound) is shown whole (text as it is, JSON as
// stored) followed by a line naming its handle. A larger result, and every
// binary result, is shown as [RenderPreview] followed by [ReferenceHint].
// Either way the text is at most the inline limit or the preview bound,
// plus one hint line.
func (s *SessionValues) Observe(out []byte) Observation {
	x := classify(out)
	h := s.add(x)
	v := Value{x} // with its bytes, even if the store has dropped them
	if x.kind == KindBinary || len(x.raw) > s.cfg.inlineLimit {
		return Observation{Handle: h, Text: RenderPreview(h, v) + ReferenceHint(h), Previewed: true}
	}
	text := make([]byte, 0, len(x.raw)+96)
	text = append(text, x.raw...)
	if len(text) > 0 && text[len(text)-1] != '\n' {
		text = append(text, '\n')
	}
	text = append(text, "[stored as "+h+": pass \"$"+h+"\" or \"$"+h+".<field>\" as a tool argument to reuse it]"...)
	return Observation{Handle: h, Text: string(text)}
}
