package values

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds values kept only in the durable store: read back on
// use, one held in memory at a time above the memory limit.

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
	}{v: x.copied()}
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
	var b []byte // read outside any lock: it may be slow
	if sd, ok := d.src.d.(SizedDurable); ok {
		b, err = sd.BodySized(d.src.session, d.key, int64(x.size))
	} else {
		b, err = d.src.d.Body(d.src.session, d.key)
	}
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
		c := x.clone()
		c.raw, c.disk = b, nil
		if x.kind == KindText { // the JSON or table the text holds, for lookups and previews
			c.onUse, c.lazy = true, nil
		}
		return c, nil
	}
	y, err := newJSON(b, len(b)) // indexed on first use
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

// WriteTo writes the value's own bytes, those [Value.Bytes] returns, to w,
// and implements [io.WriterTo]: a value the store holds in memory is
// written as it is held, without a copy, so that serving a 100 MB value
// costs no 100 MB more; one kept only in the durable store is read back
// first, and is an error wrapping [ErrUnavailable] when it cannot be.
func (v Value) WriteTo(w io.Writer) (int64, error) {
	m, _, err := v.get().load(false)
	if err != nil {
		return 0, fmt.Errorf("values: %w", err)
	}
	n, err := w.Write(m.raw)
	return int64(n), err
}

// unavailablePreview is the preview of a disk-only value whose bytes cannot
// be read back: "r3 = array(len=100, bytes=5242880, unavailable)".
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
