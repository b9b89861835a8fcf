package values

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file walks the items of a stored array, for a reader that pages a
// value by items rather than by bytes (a table in the value browser).

// ErrNotArray reports, from [SessionValues.Items], a reference that names
// something other than a JSON array (or a text holding one, or holding a
// stream of JSON values).
var ErrNotArray = errors.New("not an array")

// Items calls fn with the JSON of each item of the array ref names, in
// order, from item from on, until fn returns false or the array ends. i
// is the item's index; item is its JSON as stored, which fn must neither
// modify nor keep after it returns (copy what it keeps). ref is a handle
// or a reference with a path, as [SessionValues.Read] takes it. A text
// value holding a JSON array, or a stream of JSON values (JSON Lines), has
// those values as its items. A from at or past the end calls fn never; a
// negative from is an error wrapping [ErrReadArgs].
//
// Cost: a walk from the last index mark at or before item from (less than
// 512 bytes for an array Put indexed: a stored array, or the part that
// dominates its value's preview; from the array's start otherwise), then
// the items fn sees, each skipped without decoding. Nothing is copied.
//
// Errors: those of the lookup, as for Read ([ErrBadRef],
// [ErrUnknownHandle], [ErrNoPath], [ErrUnavailable], [ErrTooLarge]), and
// [ErrNotArray] for a reference to anything but an array. It is safe for
// concurrent use, as the store is.
func (s *SessionValues) Items(ref string, from int, fn func(i int, item []byte) bool) error {
	r, ok := parseRef(strings.TrimPrefix(ref, "$"))
	if !ok {
		return fmt.Errorf("values: %s: %w; want a handle such as \"r3\" or a reference such as \"$r3.rows\"", jsontext.QuoteClipped(ref), ErrBadRef)
	}
	if from < 0 {
		return fmt.Errorf("values: %w: from %d is negative", ErrReadArgs, from)
	}
	whole, part, _, err := s.lookupPath(r, nil, scanBudget(s.maxResolved()))
	if errors.Is(err, errScanBudget) {
		return fmt.Errorf("values: %w: looking up %s would scan too much of its value", ErrTooLarge, r.quoted())
	}
	if err != nil {
		return err
	}
	var (
		d      []byte
		marks  jsontext.Marks
		stream bool
	)
	ix := whole.get().index()
	switch {
	case part == nil && ix != nil && (ix.kind == KindArray || ix.stream):
		d, marks, stream = ix.raw, ix.marks, ix.stream
	case part != nil && part[0] == '[':
		d = part
		if dom := ix.dominant(part); dom != nil {
			marks = dom.marks
		}
	default:
		what := whole.Kind().String()
		if part != nil {
			what = kindOf(part[0]).String()
		}
		return fmt.Errorf("values: %s is %s: %w", r.quoted(), what, ErrNotArray)
	}
	k, off := 0, 0
	if m, ok := marks.Before(from); ok {
		k, off = m.Item, m.Off
	}
	_, at, _, _ := walkArray(d, k, off, from, len(d), true, stream, nil)
	if at < 0 || at >= len(d) {
		return nil // from is at or past the end
	}
	for i := from; at < len(d) && (stream || d[at] != ']'); i++ {
		end := jsontext.SkipValue(d, at)
		if !fn(i, d[at:end]) {
			return nil
		}
		at = jsontext.SkipSpace(d, end)
		if at < len(d) && d[at] == ',' && !stream {
			at = jsontext.SkipSpace(d, at+1)
		}
	}
	return nil
}
