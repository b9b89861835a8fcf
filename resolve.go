package values

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Errors of resolving references. Lookup errors are wrapped with the
// reference and details a model can act on.
var (
	// ErrBadRef reports a string that is not a reference in the grammar
	// "$" handle *("." segment).
	ErrBadRef = errors.New("malformed reference")
	// ErrUnknownHandle reports a handle that names no stored value.
	ErrUnknownHandle = errors.New("not a stored value")
	// ErrNoPath reports a path that does not exist in the referenced value.
	ErrNoPath = errors.New("no such path")
	// ErrTooLarge reports tool arguments whose resolved form would exceed
	// the store's bound ([WithMaxResolved]).
	ErrTooLarge = errors.New("resolved arguments too large")
)

// DefaultMaxResolved is the default bound in bytes on resolved tool
// arguments: far more than any tool call needs, small enough that a few
// references to a large value cannot exhaust memory.
const DefaultMaxResolved = 64 << 20

// WithMaxResolved sets the bound in bytes on the arguments
// [SessionValues.Resolve] builds; past it Resolve fails with [ErrTooLarge]
// before building anything. 0 or a negative n selects [DefaultMaxResolved].
func WithMaxResolved(n int) Option { return func(c *config) { c.maxResolved = n } }

func (s *SessionValues) maxResolved() int {
	if s.cfg.maxResolved > 0 {
		return s.cfg.maxResolved
	}
	return DefaultMaxResolved
}

// Reference is one reference found in tool arguments by
// [SessionValues.ResolveDetail]: a whole JSON string value (never an object
// key) that is a reference in the grammar of the package documentation.
type Reference struct {
	// Ref is the string as written, JSON escapes decoded: "$r3.rows.0".
	Ref string
	// Pointer locates the string in the arguments as a JSON pointer
	// (RFC 6901), such as "/rows/0"; "" is the arguments themselves. The
	// resolved value sits at the same pointer in the resolved arguments.
	Pointer string
	// Err is nil when the reference was resolved. Otherwise the string was
	// left as written, and Err, which wraps [ErrUnknownHandle] or
	// [ErrNoPath] (or [ErrUnavailable] for a value that cannot be read back
	// from the durable store), says why in words a model can act on.
	Err error
}

// Resolution is the outcome of [SessionValues.ResolveDetail].
type Resolution struct {
	// Args is the resolved arguments. It is the argument slice itself when
	// nothing was replaced.
	Args []byte
	// Refs lists every reference, resolved or not, in document order.
	Refs []Reference
}

// Resolved returns the references that were resolved, as written, in
// document order: the list [SessionValues.Resolve] returns.
func (r *Resolution) Resolved() []string {
	var out []string
	for _, ref := range r.Refs {
		if ref.Err == nil {
			out = append(out, ref.Ref)
		}
	}
	return out
}

// Unresolved returns the references that were left as written because
// their handle or path names no value, in document order.
func (r *Resolution) Unresolved() []Reference {
	var out []Reference
	for _, ref := range r.Refs {
		if ref.Err != nil {
			out = append(out, ref)
		}
	}
	return out
}

// Resolve replaces every reference in the tool arguments args (one JSON
// value, usually an object) with the JSON of the value it names, and
// returns the result and the references it resolved, as written (JSON
// escapes decoded, "$r3.rows.0"), in document order, repeats included, for
// logging.
//
// A reference is a whole JSON string value, never an object key, in the
// grammar of the package documentation, at any depth. A whole value is
// spliced as [Value.AppendJSON] encodes it (text as a JSON string, binary as
// a base64 string), a part as its stored JSON bytes; nothing is decoded
// or re-encoded, and substituted values are never scanned for references
// again. A string that merely contains a reference ("echo $r1 > f") is
// left alone. A reference whose handle or path names no value is left as
// written, for the tool's validation to report; [SessionValues.ResolveDetail]
// says which and why, and [SessionValues.Prepare] turns it into an error.
// A string of two or more '$' followed by a reference loses one '$'
// ("$$r1" becomes the string "$r1"); "$$hello" stays as it is.
//
// args must be exactly one valid JSON value (surrounding whitespace is
// kept); otherwise the error wraps [ErrInvalidJSON]. Any nesting depth is
// accepted. Resolve never modifies args, and returns args itself when it
// holds nothing to replace. When the result would be larger than the
// store's bound ([WithMaxResolved], default 64 MiB), Resolve fails with
// [ErrTooLarge] as soon as that is certain, before building anything; so
// does a call whose distinct paths would scan more than 16 times that bound
// of stored JSON (say 17 paths into one 64 MiB value).
//
// Cost: one pass over args; for a reference with a path, a scan of the
// stored JSON along the path, skipping what it does not name, without
// decoding (each distinct reference is looked up once per call); one copy
// of each substituted value (plus a length pass over text values); and one
// allocation for the result. Resolving 1 KiB of arguments holding three
// distinct references to small values makes 7 allocations: the result, the
// list of references, the three reference strings and two to plan the
// splice; a reference with a path costs no more.
func (s *SessionValues) Resolve(args []byte) ([]byte, []string, error) {
	r := resolver{s: s, args: args}
	if err := r.run(); err != nil {
		return nil, nil, err
	}
	return r.out, r.resolved, nil
}

// ResolveDetail is [SessionValues.Resolve] with every reference reported,
// resolved or not, with its location in the arguments; the errors are
// those of Resolve. It is safe to call concurrently with Put.
func (s *SessionValues) ResolveDetail(args []byte) (Resolution, error) {
	r := resolver{s: s, args: args, detail: true}
	if err := r.run(); err != nil {
		return Resolution{}, err
	}
	return Resolution{Args: r.out, Refs: r.refs}, nil
}

// resolver is the state of one call of Resolve: a validating pass over
// the arguments that plans the splice, then one copy.
type resolver struct {
	s      *SessionValues
	args   []byte
	detail bool // report every reference with its pointer

	bound int // the store's bound on the result
	total int // size of the result with the edits planned so far
	meta  int // bytes of pointers reported, held to the bound too
	scan  int // bytes of stored JSON that path lookups may scan so far
	edits []edit
	hits  []hit          // one per distinct reference string
	memo  map[string]int // reference → index in hits, once there are many

	// frames holds, in detail mode, one entry per open container: the
	// index of the current item of an array, or -1 minus the offset of the
	// current key of an object.
	frames []int

	out      []byte
	resolved []string
	refs     []Reference
}

// edit replaces args[start:end] with the value of hits[hit], or with
// nothing when hit is dropDollar (the escape "$$r1").
type edit struct {
	start, end int
	hit        int
}

const dropDollar = -1

// hit is the outcome of looking up one reference string.
type hit struct {
	ref   string // as written, with its '$'
	whole Value
	part  []byte // nil for a whole value
	size  int    // bytes of the JSON spliced in
	err   error
}

// memoAfter is the number of distinct references looked up by a linear
// search before a map takes over: small calls stay allocation-light and
// calls with many references stay linear.
const memoAfter = 16

// scanFactor bounds the work of path lookups in one call: looking up a
// path scans the stored JSON it goes through, and the values scanned may
// total at most scanFactor times the bound on the result (1 GiB by
// default), so that many distinct paths into one large value fail fast
// with ErrTooLarge rather than take seconds.
const scanFactor = 16

// initialRefs is the capacity the lists of a call start with, so that a
// call with a few references allocates each list once.
const initialRefs = 8

func (r *resolver) run() error {
	r.bound = r.s.maxResolved()
	r.total = len(r.args)
	if err := r.walk(); err != nil {
		return err
	}
	if len(r.edits) == 0 {
		r.out = r.args
		return nil
	}
	if r.total > r.bound {
		return r.tooLarge()
	}
	out := make([]byte, 0, r.total)
	last := 0
	for _, e := range r.edits {
		out = append(out, r.args[last:e.start]...)
		last = e.end
		if e.hit == dropDollar {
			continue
		}
		h := &r.hits[e.hit]
		if h.part != nil {
			out = append(out, h.part...)
		} else {
			out = h.whole.AppendJSON(out)
		}
	}
	r.out = append(out, r.args[last:]...)
	return nil
}

func (r *resolver) tooLarge() error {
	return fmt.Errorf("values: %w: the arguments would grow past the bound of %s (%d bytes) after %d substitutions",
		ErrTooLarge, size(r.bound), r.bound, len(r.edits))
}

// walk validates the arguments in one pass, without recursion, and plans
// an edit for every string value that is a reference or an escaped one.
func (r *resolver) walk() error {
	d := r.args
	i := 0
	var err error
	var stackBuf [64]byte
	stack := stackBuf[:0] // open containers, '[' or '{'
	for {
		// A value starts at i (after optional whitespace).
		i = skipSpace(d, i)
		if i >= len(d) {
			return syntaxErr(d, i, "unexpected end of input")
		}
		switch c := d[i]; c {
		case '{', '[':
			stack = append(stack, c)
			if r.detail {
				r.frames = append(r.frames, 0)
			}
			i = skipSpace(d, i+1)
			if i < len(d) && d[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = r.pop(stack)
				i++
				break
			}
			if c == '{' {
				if i, err = r.key(i); err != nil {
					return err
				}
			}
			continue
		case '"':
			start := i
			if i, err = scanString(d, i); err != nil {
				return err
			}
			if err = r.str(start, i); err != nil {
				return err
			}
		default:
			if i, err = scanScalar(d, i); err != nil {
				return err
			}
		}
		// A value ended at i; close containers until one continues.
		for {
			if len(stack) == 0 {
				if j := skipSpace(d, i); j != len(d) {
					return syntaxErr(d, j, "unexpected data after the value")
				}
				return nil
			}
			i = skipSpace(d, i)
			if i >= len(d) {
				return syntaxErr(d, i, "unexpected end of input")
			}
			open := stack[len(stack)-1]
			if d[i] == open+2 {
				stack = r.pop(stack)
				i++
				continue
			}
			if d[i] != ',' {
				return syntaxErr(d, i, fmt.Sprintf("want ',' or %q", open+2))
			}
			i++
			if open == '{' {
				if i, err = r.key(i); err != nil {
					return err
				}
			} else if r.detail {
				r.frames[len(r.frames)-1]++
			}
			break
		}
	}
}

func (r *resolver) pop(stack []byte) []byte {
	if r.detail {
		r.frames = r.frames[:len(r.frames)-1]
	}
	return stack[:len(stack)-1]
}

// key scans an object key and its colon, recording where the key is.
func (r *resolver) key(i int) (int, error) {
	j, k, err := scanKey(r.args, i)
	if err == nil && r.detail {
		r.frames[len(r.frames)-1] = -1 - k.start
	}
	return j, err
}

// str plans the edit, if any, for the validated string value args[start:end].
func (r *resolver) str(start, end int) error {
	tok := r.args[start:end]
	body := tok[1 : len(tok)-1]
	if len(body) < 3 || (body[0] != '$' && body[0] != '\\') {
		return nil // the common case: not a reference
	}
	if bytes.IndexByte(body, '\\') >= 0 {
		body = appendUnescaped(nil, tok)
	}
	n := 0
	for n < len(body) && body[n] == '$' {
		n++
	}
	// A reference starts "$r" and a nonzero digit.
	if n == 0 || len(body)-n < 2 || body[n] != 'r' || body[n+1] < '1' || body[n+1] > '9' {
		return nil
	}
	if n > 1 {
		// The escape: drop the first '$', written as '$' or "\u0024".
		if _, ok := parseRef(string(body[n:])); !ok {
			return nil
		}
		w := 1
		if r.args[start+1] == '\\' {
			w = len(`\u0024`)
		}
		return r.plan(edit{start + 1, start + 1 + w, dropDollar})
	}
	hi, ok := r.find(body)
	if !ok {
		ref := string(body)
		p, ok := parseRef(ref[1:])
		if !ok {
			return nil // "$r1." and the like: not a reference
		}
		if p.segs != "" {
			if v, ok := r.s.Get(p.handle); ok {
				r.scan += v.Size()
				if r.scan > scanFactor*r.bound {
					return fmt.Errorf("values: %w: looking up %d distinct paths would scan more than %s of stored JSON", ErrTooLarge, len(r.hits)+1, size(scanFactor*r.bound))
				}
			}
		}
		h := hit{ref: ref}
		h.whole, h.part, h.err = r.s.lookup(p)
		if h.err == nil {
			h.size = jsonSize(h.whole, h.part)
		}
		hi = r.remember(h)
	}
	h := &r.hits[hi]
	if r.detail {
		ptr := r.pointer()
		r.meta += len(ptr)
		if r.meta > r.bound {
			return fmt.Errorf("values: %w: the locations of %d references exceed the bound of %s", ErrTooLarge, len(r.refs), size(r.bound))
		}
		r.refs = append(r.refs, Reference{Ref: h.ref, Pointer: ptr, Err: h.err})
	}
	if h.err != nil {
		return nil
	}
	if !r.detail {
		if r.resolved == nil {
			r.resolved = make([]string, 0, initialRefs)
		}
		r.resolved = append(r.resolved, h.ref)
	}
	r.total += h.size - (end - start)
	return r.plan(edit{start, end, hi})
}

// plan records e and fails once the result is certain to exceed the bound:
// the edits still to come can shrink it by at most the bytes left to scan.
func (r *resolver) plan(e edit) error {
	if e.hit == dropDollar {
		r.total -= e.end - e.start
	}
	if r.edits == nil {
		r.edits = make([]edit, 0, initialRefs)
	}
	r.edits = append(r.edits, e)
	if r.total-(len(r.args)-e.end) > r.bound {
		return r.tooLarge()
	}
	return nil
}

// find returns the index in hits of the reference body, if looked up before.
func (r *resolver) find(body []byte) (int, bool) {
	if r.memo != nil {
		i, ok := r.memo[string(body)]
		return i, ok
	}
	for i := range r.hits {
		if r.hits[i].ref == string(body) {
			return i, true
		}
	}
	return 0, false
}

func (r *resolver) remember(h hit) int {
	if r.hits == nil {
		r.hits = make([]hit, 0, initialRefs)
	}
	r.hits = append(r.hits, h)
	i := len(r.hits) - 1
	switch {
	case r.memo != nil:
		r.memo[h.ref] = i
	case len(r.hits) == memoAfter:
		r.memo = make(map[string]int, 2*memoAfter)
		for j := range r.hits {
			r.memo[r.hits[j].ref] = j
		}
	}
	return i
}

// pointer returns the JSON pointer of the value being scanned.
func (r *resolver) pointer() string {
	if len(r.frames) == 0 {
		return ""
	}
	var b []byte
	for _, pos := range r.frames {
		b = append(b, '/')
		if pos >= 0 {
			b = strconv.AppendInt(b, int64(pos), 10)
			continue
		}
		pos = -1 - pos
		b = appendPointerToken(b, r.args[pos:skipString(r.args, pos)])
	}
	return string(b)
}

// appendPointerToken appends the validated quoted key raw as a JSON
// pointer token: decoded, with '~' written "~0" and '/' written "~1".
func appendPointerToken(dst, raw []byte) []byte {
	var key []byte
	if bytes.IndexByte(raw, '\\') >= 0 {
		key = appendUnescaped(nil, raw)
	} else {
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

// jsonSize returns the number of bytes Resolve splices in for a lookup's
// result: the part, or the whole value as Value.AppendJSON encodes it.
func jsonSize(whole Value, part []byte) int {
	if part != nil {
		return len(part)
	}
	x := whole.get()
	switch x.kind {
	case KindText:
		return quotedSize(x.raw)
	case KindBinary:
		return base64.StdEncoding.EncodedLen(len(x.raw)) + 2
	}
	return len(x.raw)
}

// quoteExtra is the number of bytes appendQuoted adds to a byte when it
// escapes it: 1 for "\n" and the like, 5 for "\u0001".
var quoteExtra = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 5
	}
	for _, c := range []byte{'"', '\\', '\n', '\r', '\t', '\b', '\f'} {
		t[c] = 1
	}
	return t
}()

// quotedSize returns len(appendQuoted(nil, s)) without writing it, eight
// bytes at a time: each '"' and '\\' adds one byte, each control character
// one or five.
func quotedSize(s []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		low7  = 0x7f7f7f7f7f7f7f7f
	)
	n := len(s) + 2
	for len(s) >= 8 {
		w := binary.LittleEndian.Uint64(s)
		s = s[8:]
		// Exact byte-wise tests (no carry crosses a byte): the high bit of
		// a byte of qb is set where w holds '"' or '\\', of ctrl where it
		// holds a byte below 0x20.
		q := w ^ (ones * '"')
		b := w ^ (ones * '\\')
		qb := ^((q & low7) + low7 | q) | ^((b & low7) + low7 | b)
		ctrl := ^((w & low7) + ones*0x60 | w) & highs
		n += bits.OnesCount64(qb & highs)
		for ctrl != 0 {
			n += int(quoteExtra[byte(w>>(bits.TrailingZeros64(ctrl)&^7))])
			ctrl &= ctrl - 1
		}
	}
	for _, c := range s {
		n += int(quoteExtra[c])
	}
	return n
}

// refPath is a parsed reference: a handle and the path after it.
type refPath struct {
	handle string // "r3"
	index  int    // the handle's number; maxHandle when too large to store
	segs   string // the path as written after the handle, without its leading '.'; "" for none
}

// maxHandle stands for a handle number too large to have been handed out.
const maxHandle = int(^uint(0) >> 1)

// String returns the reference in its typed form, "$r3.rows.0".
func (r refPath) String() string {
	if r.segs == "" {
		return "$" + r.handle
	}
	return "$" + r.handle + "." + r.segs
}

// prefix returns the reference to the part named by the first segments of
// r, those before index i of its path.
func (r refPath) prefix(i int) string {
	if i == 0 {
		return "$" + r.handle
	}
	return "$" + r.handle + "." + r.segs[:i-1]
}

// parseRef parses s, which must not include the leading '$', as
//
//	handle *("." segment)
//	handle  = "r" digit1-9 *digit
//	segment = 1*(char / "\." / "\\")
//
// where char is any character but '.' and '\'. It reports false for any
// other string. A handle number too large for an int parses, as one that
// names no stored value.
func parseRef(s string) (refPath, bool) {
	end := strings.IndexByte(s, '.')
	if end < 0 {
		end = len(s)
	}
	h := s[:end]
	if len(h) < 2 || h[0] != 'r' || h[1] == '0' {
		return refPath{}, false
	}
	n := 0
	for _, c := range h[1:] {
		if c < '0' || c > '9' {
			return refPath{}, false
		}
		if n > (maxHandle-9)/10 {
			n = maxHandle
		} else if n != maxHandle {
			n = n*10 + int(c-'0')
		}
	}
	r := refPath{handle: h, index: n}
	if end == len(s) {
		return r, true
	}
	r.segs = s[end+1:]
	segLen := 0
	for i := 0; i < len(r.segs); i++ {
		switch r.segs[i] {
		case '.':
			if segLen == 0 {
				return refPath{}, false // empty segment
			}
			segLen = 0
			continue
		case '\\':
			if i+1 == len(r.segs) || (r.segs[i+1] != '.' && r.segs[i+1] != '\\') {
				return refPath{}, false
			}
			i++
		}
		segLen++
	}
	if segLen == 0 {
		return refPath{}, false
	}
	return r, true
}

// nextSegment returns the segment of the valid path p starting at i,
// unescaped, and the index after it and its dot.
func nextSegment(p string, i int) (seg string, next int) {
	j := i
	escaped := false
	for j < len(p) && p[j] != '.' {
		if p[j] == '\\' {
			escaped = true
			j++
		}
		j++
	}
	seg = p[i:j]
	if escaped {
		b := make([]byte, 0, len(seg))
		for k := 0; k < len(seg); k++ {
			if seg[k] == '\\' {
				k++
			}
			b = append(b, seg[k])
		}
		seg = string(b)
	}
	return seg, j + 1
}

// lookup finds what r names. whole is the stored value; part is nil when r has no path, and
// otherwise the JSON of the part of whole the path names (a subslice of
// the stored bytes, which must not be modified). Its errors wrap
// [ErrUnknownHandle], [ErrNoPath] or [ErrUnavailable].
func (s *SessionValues) lookup(r refPath) (whole Value, part []byte, err error) {
	s.mu.RLock()
	n := len(s.vals)
	if r.index <= n {
		whole = s.vals[r.index-1]
	}
	s.mu.RUnlock()
	if r.index > n {
		written := r.String()
		if n == 0 {
			return Value{}, nil, fmt.Errorf("values: %q is %w; no values are stored yet", written, ErrUnknownHandle)
		}
		return Value{}, nil, fmt.Errorf("values: %q is %w; stored: %s", written, ErrUnknownHandle, storedRange(n))
	}
	if whole, err = s.materialize(r, whole); err != nil { // read back a value kept only in the durable store
		return Value{}, nil, err
	}
	if r.segs == "" {
		return whole, nil, nil
	}
	x := whole.get()
	if x.kind != KindArray && x.kind != KindObject {
		return whole, nil, fmt.Errorf("values: %q: %w: $%s is %s, which has no fields or items", r.String(), ErrNoPath, r.handle, x.kind)
	}
	cur := x.raw
	for i := 0; i < len(r.segs); {
		start := i // cur is what r.prefix(start) names
		var seg string
		seg, i = nextSegment(r.segs, i)
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
				return whole, nil, fmt.Errorf("values: %q: %w: %s has no key %q%s", r.String(), ErrNoPath, r.prefix(start), seg, keyList(cur))
			}
			cur = found
		case '[':
			count := -1 // the array's length, when known
			if start == 0 {
				count = x.n // counted at Put
			}
			idx, ok := parseIndex(seg)
			if !ok {
				return whole, nil, fmt.Errorf("values: %q: %w: %s is an array; %q is not an index (0, 1, … or -1 for the last item)", r.String(), ErrNoPath, r.prefix(start), seg)
			}
			if idx < 0 {
				if count < 0 {
					count = countChildren(cur)
				}
				idx += count
			}
			var found []byte
			k := 0
			if idx >= 0 {
				eachChild(cur, func(_, v []byte) bool {
					if k == idx {
						found = v
						return false
					}
					k++
					return true
				})
			}
			if found == nil {
				if count < 0 {
					count = k
				}
				return whole, nil, fmt.Errorf("values: %q: %w: index %s is out of range for %s, an array of %d items", r.String(), ErrNoPath, seg, r.prefix(start), count)
			}
			cur = found
		default:
			return whole, nil, fmt.Errorf("values: %q: %w: %s is %s, which has no fields or items", r.String(), ErrNoPath, r.prefix(start), kindOf(cur[0]))
		}
	}
	return whole, cur, nil
}

// keyListMax is the number of keys an error about a missing key lists, so
// that the model can correct its path without reading the value.
const keyListMax = 8

// keyList returns "; its keys: a, b, …" for the validated object obj.
func keyList(obj []byte) string {
	b := []byte("; its keys: ")
	n := 0
	eachChild(obj, func(k, _ []byte) bool {
		if n == keyListMax {
			b = append(b, ", "+ellipsis...)
			return false
		}
		if n > 0 {
			b = append(b, ", "...)
		}
		b = appendKey(b, k)
		n++
		return true
	})
	if n == 0 {
		return "; it is empty"
	}
	return string(b)
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
