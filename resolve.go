package values

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors of looking up a reference. They are wrapped with the reference and
// details a model can act on.
var (
	// ErrBadRef reports a string that is not a reference in the grammar
	// "$" handle *("." segment).
	ErrBadRef = errors.New("malformed reference")
	// ErrUnknownHandle reports a handle that names no stored value.
	ErrUnknownHandle = errors.New("not a stored value")
	// ErrNoPath reports a path that does not exist in the referenced value.
	ErrNoPath = errors.New("no such path")
)

// refPath is a parsed reference: a handle and the path segments after it.
type refPath struct {
	handle string
	index  int // the handle's number
	segs   []string
}

// String returns the reference in its typed form, "$r3.rows.0".
func (r refPath) String() string {
	var b strings.Builder
	b.WriteString("$")
	b.WriteString(r.handle)
	for _, s := range r.segs {
		b.WriteByte('.')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(s))
	}
	return b.String()
}

// parseRef parses s, which must not include the leading '$', as
//
//	handle *("." segment)
//	handle  = "r" digit1-9 *digit
//	segment = 1*(char / "\." / "\\")
//
// where char is any character but '.' and '\'. It reports false for any
// other string.
func parseRef(s string) (refPath, bool) {
	end := strings.IndexByte(s, '.')
	if end < 0 {
		end = len(s)
	}
	n, ok := parseHandle(s[:end])
	if !ok {
		return refPath{}, false
	}
	r := refPath{handle: s[:end], index: n}
	if end == len(s) {
		return r, true
	}
	var seg []byte
	for i := end + 1; ; i++ {
		if i == len(s) || s[i] == '.' {
			if len(seg) == 0 {
				return refPath{}, false // empty segment
			}
			r.segs = append(r.segs, string(seg))
			seg = seg[:0]
			if i == len(s) {
				return r, true
			}
			continue
		}
		if s[i] == '\\' {
			if i+1 == len(s) || (s[i+1] != '.' && s[i+1] != '\\') {
				return refPath{}, false
			}
			i++
		}
		seg = append(seg, s[i])
	}
}

// lookup finds what r names. whole is the stored value; part is nil when r
// has no path, and otherwise the JSON of the part of whole the path names
// (a subslice of the stored bytes, which must not be modified). Its errors
// wrap [ErrUnknownHandle] or [ErrNoPath].
func (s *SessionValues) lookup(r refPath) (whole Value, part []byte, err error) {
	s.mu.RLock()
	n := len(s.vals)
	if r.index <= n {
		whole = s.vals[r.index-1]
	}
	s.mu.RUnlock()
	if r.index > n {
		if n == 0 {
			return Value{}, nil, fmt.Errorf("values: %q: %w; no values are stored yet", "$"+r.handle, ErrUnknownHandle)
		}
		return Value{}, nil, fmt.Errorf("values: %q: %w; stored: %s", "$"+r.handle, ErrUnknownHandle, storedRange(n))
	}
	if len(r.segs) == 0 {
		return whole, nil, nil
	}
	x := whole.get()
	if x.kind != KindArray && x.kind != KindObject {
		return whole, nil, fmt.Errorf("values: %q: %w: %s is %s, which has no fields or items", r.String(), ErrNoPath, "$"+r.handle, x.kind)
	}
	cur := x.raw
	for i, seg := range r.segs {
		at := refPath{handle: r.handle, segs: r.segs[:i]}
		switch cur[0] {
		case '{':
			var found []byte
			eachChild(cur, func(k, v []byte) bool {
				if keyEquals(k, seg) {
					found = v // the last duplicate wins, as in encoding/json
				}
				return true
			})
			if found == nil {
				return whole, nil, fmt.Errorf("values: %q: %w: the object at %s has no key %q", r.String(), ErrNoPath, at.String(), seg)
			}
			cur = found
		case '[':
			count := -1
			if i == 0 {
				count = x.n
			}
			idx, ok := parseIndex(seg)
			if ok && idx < 0 {
				if count < 0 {
					count = countChildren(cur)
				}
				idx += count
			}
			if !ok || idx < 0 {
				if !ok {
					return whole, nil, fmt.Errorf("values: %q: %w: %s is an array; %q is not an index (0, 1, … or -1 for the last)", r.String(), ErrNoPath, at.String(), seg)
				}
				return whole, nil, fmt.Errorf("values: %q: %w: index %s out of range for the array at %s (len %d)", r.String(), ErrNoPath, seg, at.String(), count)
			}
			var found []byte
			k := 0
			eachChild(cur, func(_, v []byte) bool {
				if k == idx {
					found = v
					return false
				}
				k++
				return true
			})
			if found == nil {
				return whole, nil, fmt.Errorf("values: %q: %w: index %s out of range for the array at %s (len %d)", r.String(), ErrNoPath, seg, at.String(), k)
			}
			cur = found
		default:
			return whole, nil, fmt.Errorf("values: %q: %w: %s is %s, which has no fields or items", r.String(), ErrNoPath, at.String(), kindOf(cur[0]))
		}
	}
	return whole, cur, nil
}

// parseIndex parses an array index: a decimal without leading zeros, or a
// negative one counting from the end (-1 is the last item).
func parseIndex(s string) (int, bool) {
	neg := strings.HasPrefix(s, "-")
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 18 || (d[0] == '0' && (len(d) > 1 || neg)) {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	if err != nil || strings.ContainsAny(d, "+-") {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// storedRange describes the handles of a store holding n > 0 values.
func storedRange(n int) string {
	if n == 1 {
		return "r1"
	}
	return "r1…" + handleName(n)
}
