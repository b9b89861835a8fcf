package values

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the Meta of a handle record: what a value's preview and
// accessors need without reading its body.

// recordMeta is the Meta of a Record, encoded as JSON.
type recordMeta struct {
	V       int    `json:"v"`               // format version, metaVersion
	N       int    `json:"n,omitempty"`     // Value.Len
	Lines   int    `json:"lines,omitempty"` // Value.Lines
	CType   string `json:"ctype,omitempty"` // binary: Value.ContentType
	SHA256  string `json:"sha256,omitempty"`
	Preview string `json:"preview"` // RenderPreview of the value for Record.Handle
}

const metaVersion = 1

func encodeMeta(x *value, preview string) []byte {
	m := recordMeta{V: metaVersion, N: x.n, Lines: x.lines, CType: x.contentType(), Preview: preview}
	if x.kind == KindBinary {
		sum := x.digest()
		m.SHA256 = hex.EncodeToString(sum[:])
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
func metaInt(v []byte) (int, bool) { return jsontext.ParseUint(v, math.MaxInt) }

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
	x := value{kind: k, n: m.N, lines: m.Lines, max: s.cfg.preview()}
	if m.CType != "" || m.SHA256 != "" {
		x.bin = &binInfo{ctype: m.CType}
	}
	if m.SHA256 != "" {
		if n, err := hex.Decode(x.bin.sum[:], []byte(m.SHA256)); err != nil || n != len(x.bin.sum) {
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
