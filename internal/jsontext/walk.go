package jsontext

import (
	"errors"
	"fmt"
	"strconv"
)

// Walker walks a JSON document, validating it as [Scan] does, and calls a
// function for every scalar, keeping track of where it is so that
// [Walker.Pointer] can name the value at hand. It never recurses.
//
// A Walker may be reused for one walk after another, not for two at once.
// Its zero value is ready for use.
type Walker struct {
	// MaxDepth, when positive, is the deepest nesting of arrays and
	// objects whose contents are visited. An array or object that would be
	// open deeper is passed to TooDeep (when not nil) with the offset where
	// it starts; its contents are validated but not visited. An error of
	// TooDeep ends the walk, and Walk returns it.
	MaxDepth int
	TooDeep  func(start int) error

	depth   int       // open containers
	deepest int       // the most containers open at once in the last walk
	small   [32]frame // the first ones
	more    []frame   // the others, deeper than len(small)
	opened  int       // arrays and objects met by the walk
	silent  int       // the depth from which scalars are not visited, or -1
}

// frame is one open container: its bracket, and the index of its current
// item, or -1 minus the offset of its current key.
type frame struct {
	open byte
	pos  int
}

// top returns the innermost open container.
func (w *Walker) top() *frame { return w.at(w.depth - 1) }

// at returns the open container at depth i (0 the outermost). The frames
// live in the Walker itself up to a depth of 32, so that a walk allocates
// nothing and the Walker can stay on its user's stack.
func (w *Walker) at(i int) *frame {
	if i < len(w.small) {
		return &w.small[i]
	}
	return &w.more[i-len(w.small)]
}

func (w *Walker) push(open byte) {
	if w.depth >= len(w.small) {
		if k := w.depth - len(w.small); k < len(w.more) {
			w.more[k] = frame{open: open}
		} else {
			w.more = append(w.more, frame{open: open})
		}
	} else {
		w.small[w.depth] = frame{open: open}
	}
	w.depth++
	w.opened++
	w.deepest = max(w.deepest, w.depth)
}

// Walk walks d, which must be exactly one JSON value (surrounding
// whitespace allowed), and calls scalar for every string (but not object
// keys), number, true, false and null, spanning d[start:end] (a string
// with its quotes). It returns an error wrapping [ErrSyntax] at the first
// byte that breaks JSON, or the first error of scalar or TooDeep.
func (w *Walker) Walk(d []byte, scalar func(start, end int) error) error {
	w.depth, w.deepest, w.silent, w.opened = 0, 0, -1, 0
	i := 0
	var err error
	for {
		// A value starts at i (after optional whitespace).
		i = SkipSpace(d, i)
		if i >= len(d) {
			return syntaxErr(d, i, "unexpected end of input")
		}
		switch c := d[i]; c {
		case '{', '[':
			if w.MaxDepth > 0 && w.depth == w.MaxDepth && w.silent < 0 {
				if w.TooDeep != nil {
					if err := w.TooDeep(i); err != nil {
						return err
					}
				}
				w.silent = w.depth
			}
			w.push(c)
			i = SkipSpace(d, i+1)
			if i < len(d) && d[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				w.pop()
				i++
				break
			}
			if c == '{' {
				if i, err = w.key(d, i); err != nil {
					return err
				}
			}
			continue
		case '"':
			start := i
			if i, err = scanString(d, i); err != nil {
				return err
			}
			if err = w.visit(scalar, start, i); err != nil {
				return err
			}
		default:
			start := i
			if i, err = scanScalar(d, i); err != nil {
				return err
			}
			if err = w.visit(scalar, start, i); err != nil {
				return err
			}
		}
		// A value ended at i; close containers until one continues.
		if i, err = w.next(d, i); err != nil || w.depth == 0 {
			return err
		}
	}
}

// visit calls scalar for the scalar d[start:end] unless it is inside a
// container past MaxDepth.
func (w *Walker) visit(scalar func(start, end int) error, start, end int) error {
	if w.silent >= 0 {
		return nil
	}
	return scalar(start, end)
}

// next moves past the end of a value at i: it closes the containers that
// end there and returns the start of the next value, or, at the end of
// the document, the end with an empty stack.
func (w *Walker) next(d []byte, i int) (int, error) {
	for {
		if w.depth == 0 {
			if j := SkipSpace(d, i); j != len(d) {
				return j, syntaxErr(d, j, "unexpected data after the value")
			}
			return i, nil
		}
		i = SkipSpace(d, i)
		if i >= len(d) {
			return i, syntaxErr(d, i, "unexpected end of input")
		}
		open := w.top().open
		if d[i] == open+2 {
			w.pop()
			i++
			continue
		}
		if d[i] != ',' {
			return i, syntaxErr(d, i, fmt.Sprintf("want ',' or %q", open+2))
		}
		i++
		if open == '{' {
			return w.key(d, i)
		}
		w.top().pos++
		return i, nil
	}
}

func (w *Walker) pop() {
	w.depth--
	if w.depth == w.silent {
		w.silent = -1
	}
}

// key scans an object key and its colon, recording where the key is.
func (w *Walker) key(d []byte, i int) (int, error) {
	j, k, err := scanKey(d, i)
	if err == nil {
		w.top().pos = -1 - k.Start
	}
	return j, err
}

// Containers returns the number of arrays and objects the last walk met,
// those past MaxDepth and inside them included.
func (w *Walker) Containers() int { return w.opened }

// Depth returns the number of arrays and objects open around the value at
// hand.
func (w *Walker) Depth() int { return w.depth }

// Deepest returns the deepest nesting of arrays and objects the last walk
// met, those past MaxDepth included: 0 for a scalar, 1 for [1, 2], 2 for
// {"a":[]}.
func (w *Walker) Deepest() int { return w.deepest }

// Pointer returns the JSON pointer (RFC 6901) of the value at hand in d,
// the document being walked: "" for the document itself, "/rows/0/id"
// for a value inside it. Keys are decoded, with "~" written "~0" and "/"
// written "~1".
func (w *Walker) Pointer(d []byte) string {
	if w.depth == 0 {
		return ""
	}
	var b []byte
	for i := range w.depth {
		pos := w.at(i).pos
		b = append(b, '/')
		if pos >= 0 {
			b = strconv.AppendInt(b, int64(pos), 10)
			continue
		}
		pos = -1 - pos
		b = AppendPointerToken(b, d[pos:SkipString(d, pos)])
	}
	return string(b)
}

// AppendPointerToken appends the valid quoted key raw as a JSON pointer
// token: decoded, with '~' written "~0" and '/' written "~1".
func AppendPointerToken(dst, raw []byte) []byte {
	var key []byte
	for i := 1; i < len(raw)-1; i++ {
		if raw[i] == '\\' {
			key = AppendUnquoted(nil, raw)
			break
		}
	}
	if key == nil {
		key = raw[1 : len(raw)-1]
	}
	for _, c := range key {
		switch c {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// Pointers returns the JSON pointers of the scalars of the valid document
// d that start at the given offsets, which must be in ascending order; an
// offset at which no scalar starts gets "". It stops and reports false
// once the pointers would take more than budget bytes in all (a pointer
// can be as long as the document, so many of them could take far more).
func Pointers(d []byte, offsets []int, budget int) ([]string, bool) {
	out := make([]string, len(offsets))
	var w Walker
	k := 0
	err := w.Walk(d, func(start, _ int) error {
		for k < len(offsets) && offsets[k] < start {
			k++
		}
		for k < len(offsets) && offsets[k] == start {
			p := w.Pointer(d)
			if budget -= len(p); budget < 0 {
				return errPointerBudget
			}
			out[k] = p
			k++
		}
		if k == len(offsets) {
			return errDone
		}
		return nil
	})
	if err != nil && err != errDone {
		return nil, false
	}
	return out, true
}

var (
	errPointerBudget = errors.New("pointers over budget")
	errDone          = errors.New("done") // ends a walk that found all it looked for
)
