package values

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/agentvalues/values/internal/hooks"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/gabriel-vasile/mimetype"
)

// This file holds how a value enters the store: Put of a Go value,
// PutOutput of a tool's raw output, and the classification of raw bytes as
// JSON, text or binary.

// ErrInvalidJSON is wrapped by the error [SessionValues.Put] returns for a
// [json.RawMessage] that is not exactly one valid JSON value, and by the
// errors of [SessionValues.Resolve] and [Schema.Validate] for such
// arguments.
var ErrInvalidJSON = jsontext.ErrSyntax

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
		x = m.clone()
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

// The module's internal packages store text they decoded from valid
// JSON (mcpresult's result texts) through hooks.PutUTF8Output, and JSON
// whose Shape the scan of a document holding it recorded (a result's
// structured content, in the scan of its line) through
// hooks.PutScannedJSON.
func init() {
	hooks.PutUTF8Output = func(s any, out []byte) string {
		v := s.(*SessionValues)
		return v.add(classifyText(out, v.cfg.inline(), true))
	}
	hooks.ScanLimits = &scanLimits
	hooks.PutScannedJSON = func(s any, b []byte, sh *jsontext.Shape, base int) string {
		v := s.(*SessionValues)
		return v.add(newScannedJSON(b, sh, base, v.cfg.inline()))
	}
}

// newScannedJSON is newJSON of b, a valid JSON array or object with no
// white space around it, whose Shape a scan with scanLimits already
// recorded as sh, its offsets base more than b's: b is not read again.
func newScannedJSON(b []byte, sh *jsontext.Shape, base, eager int) *value {
	if len(b) <= eager {
		x, err := newSmallJSON(b, eager)
		if err != nil {
			return newBinary(b) // unreachable: b is valid
		}
		return x
	}
	c := newContainer(b, sh, base, 0)
	return &value{kind: c.kind, raw: b, n: sh.Count, c: c}
}

// classify builds the value PutOutput stores for b, which it owns. A value
// of more than eager bytes is indexed at once, a smaller one on first use
// (see value.index).
func classify(b []byte, eager int) *value { return classifyText(b, eager, false) }

// classifyText is classify of b, which is valid UTF-8 when utf8Known is
// set (see hooks.PutUTF8Output).
func classifyText(b []byte, eager int, utf8Known bool) *value {
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
	if !utf8Known && !utf8.Valid(b) {
		return newBinary(b)
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

// newTextOrBinary is the value of b: text when it is valid UTF-8, else a
// binary value.
func newTextOrBinary(b []byte, eager int) *value {
	if !utf8.Valid(b) {
		return newBinary(b)
	}
	return newText(b, eager, jsonUntried)
}

// newText is the value of the valid UTF-8 text b, which the caller may
// have scanned as JSON already (tried).
func newText(b []byte, eager int, tried jsonTried) *value {
	lines := lineCount(b)
	if len(b) <= eager {
		return newLazy(KindText, b, len(b), lines, jsontext.Child{})
	}
	x := &value{kind: KindText, raw: b, n: len(b), lines: lines}
	x.c, x.format = indexText(b, lines, tried)
	return x
}

func newBinary(b []byte) *value {
	return &value{
		kind: KindBinary,
		raw:  b,
		n:    len(b),
		bin:  &binInfo{sum: sha256.Sum256(b), ctype: mimetype.Detect(b).String()},
	}
}

// newJSON validates b, which it owns, as one JSON value, and indexes it at
// once when it has more than eager bytes.
func newJSON(b []byte, eager int) (*value, error) {
	if len(b) <= eager {
		return newSmallJSON(b, eager)
	}
	top, sh, err := jsontext.Scan(b, scanLimits)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	raw := b[top.Start:top.End]
	switch raw[0] {
	case '[', '{':
		c := newContainer(raw, &sh, top.Start, 0)
		return &value{kind: c.kind, raw: raw, n: sh.Count, c: c}, nil
	}
	return newScalar(raw, eager), nil
}

// newSmallJSON is newJSON of a value shown whole: it is validated and its
// children counted, and it is indexed on first use.
func newSmallJSON(b []byte, eager int) (*value, error) {
	top, n, l, err := jsontext.Tally(b)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	raw := b[top.Start:top.End]
	switch raw[0] {
	case '[', '{':
		var largest jsontext.Child
		if raw[0] == '{' && l.Val.End > 0 {
			largest = jsontext.Child{
				Key: jsontext.Span{Start: l.Key.Start - top.Start, End: l.Key.End - top.Start},
				Val: jsontext.Span{Start: l.Val.Start - top.Start, End: l.Val.End - top.Start},
			}
		}
		return newLazy(kindOf(raw[0]), raw, n, 0, largest), nil
	}
	return newScalar(raw, eager), nil
}

// newScalar returns the value of the valid JSON scalar raw.
func newScalar(raw []byte, eager int) *value {
	switch raw[0] {
	case '"':
		return newTextOrBinary(jsontext.AppendUnquoted(nil, raw), eager)
	case 't', 'f':
		return &value{kind: KindBool, raw: raw}
	case 'n':
		return &value{kind: KindNull, raw: raw}
	}
	return &value{kind: KindNumber, raw: raw}
}
