package values

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"

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

// Value is one stored value. It is immutable and safe for concurrent use;
// copying a Value is cheap and shares the stored bytes. A value kept only in
// the durable store ([WithMemoryLimit], [Open]) reads its bytes back when a
// method needs them; its kind, sizes, digest and content type are in
// memory. The zero Value is the JSON null.
type Value struct{ v *value }

type value struct {
	kind   Kind
	onUse  bool       // indexed on first use, in lazy: see index
	raw    []byte     // JSON for null, bool, number, array, object; UTF-8 for text; bytes for binary
	n      int        // see Value.Len
	lines  int        // text: line count
	bin    *binInfo   // binary: its digest and content type; nil for other kinds
	c      *container // the index of an array or object, or of the JSON a text holds; see index
	format textFormat // what a text holds other than JSON: a table or a document; see index
	// lazy is the index of a value indexed on first use, nil until then;
	// it is read and set atomically (see lazyIndex), so copy a value that
	// may be in use with clone.
	lazy *lazyIndex
	// top is, for an object indexed on first use, its largest field as
	// Put's validating scan found it (zero when not known): what the line
	// after the value shown whole reads first (see appendEnvelopeText).
	top  jsontext.Child
	max  int   // preview bound in effect when stored
	size int   // byte size of raw, for a value whose raw is in the durable store
	disk *disk // non-nil for a value kept only in the durable store (raw is nil)
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
func (v Value) Digest() [sha256.Size]byte { return v.get().digest() }

// ContentType returns the content type of a binary value, detected from
// its first 3 KiB by github.com/gabriel-vasile/mimetype (which knows some
// 180 formats: "image/png", "application/zip", "application/pdf", …, and
// "application/octet-stream" when none matches), and "" for other kinds.
func (v Value) ContentType() string { return v.get().contentType() }

// binInfo is what a binary value holds beside its bytes. It is kept apart
// from value, which the many small JSON and text values are made of, so
// that they do not carry it: a value is 48 bytes smaller without it.
type binInfo struct {
	sum   [sha256.Size]byte
	ctype string // sniffed content type
}

// digest returns the SHA-256 of a binary value's bytes, and the zero
// array for other kinds.
func (x *value) digest() [sha256.Size]byte {
	if x.bin == nil {
		return [sha256.Size]byte{}
	}
	return x.bin.sum
}

// contentType returns the content type of a binary value, and "" for other
// kinds.
func (x *value) contentType() string {
	if x.bin == nil {
		return ""
	}
	return x.bin.ctype
}

func kindNamed(name string) (Kind, bool) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), true
		}
	}
	return 0, false
}
