package values

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file walks the items of a stored array, for a reader that pages a
// value by items rather than by bytes (a table in the value browser).

// ErrNotContainer reports, from [SessionValues.Items], a reference that
// names something other than a JSON array or object (or a text holding
// one, or holding a stream of JSON values).
var ErrNotContainer = errors.New("not an array or object")

// Items calls fn with the JSON of each item of the array ref names, or of
// each field of the object, in order, from the child numbered from on,
// until fn returns false or the container ends. i is the child's number;
// key is the quoted key of a field as stored (nil for an array item);
// item is the child's JSON as stored. fn must neither modify key and item
// nor keep them after it returns (copy what it keeps). ref is a handle or
// a reference with a path, as [SessionValues.Read] takes it. A text value
// holding a JSON array or object has its children; one holding a stream
// of JSON values (JSON Lines) has those values as its items. A from at or
// past the end calls fn never; a negative from is an error wrapping
// [ErrReadArgs].
//
// Cost: for an array Put indexed (a stored array, or the part that
// dominates its value's preview), a walk from the last index mark at or
// before item from, less than 512 bytes; for another array or an object,
// a walk from its start; then the children fn sees, each skipped without
// decoding. Nothing is copied.
//
// Errors: those of the lookup, as for Read ([ErrBadRef],
// [ErrUnknownHandle], [ErrNoPath], [ErrUnavailable], [ErrTooLarge]), and
// [ErrNotContainer] for a reference to anything else. It is safe for
// concurrent use, as the store is.
func (s *SessionValues) Items(ref string, from int, fn func(i int, key, item []byte) bool) error {
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
	case part == nil && ix != nil:
		d, marks, stream = ix.raw, ix.marks, ix.stream
	case part != nil && (part[0] == '[' || part[0] == '{'):
		d = part
		if dom := ix.dominant(part); dom != nil {
			marks = dom.marks
		}
	default:
		what := whole.Kind().String()
		if part != nil {
			what = kindOf(part[0]).String()
		}
		return fmt.Errorf("values: %s is %s: %w", r.quoted(), what, ErrNotContainer)
	}
	if !stream && d[0] == '{' {
		i := 0
		jsontext.EachChild(d, func(key, val []byte) bool {
			if i++; i <= from {
				return true
			}
			return fn(i-1, key, val)
		})
		return nil
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
		if !fn(i, nil, d[at:end]) {
			return nil
		}
		at = jsontext.SkipSpace(d, end)
		if at < len(d) && d[at] == ',' && !stream {
			at = jsontext.SkipSpace(d, at+1)
		}
	}
	return nil
}
