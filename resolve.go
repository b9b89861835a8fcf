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
	"unicode/utf8"
)

// Errors of resolving references. Lookup errors are wrapped with the
// reference and details a model can act on.
var (
	// ErrBadRef reports a string that is not a reference in the grammar
	// "$" handle *("." segment): a ref given to [SessionValues.Read], or a
	// string in tool arguments that starts like a reference ("$r" and a
	// digit 1-9) but breaks the grammar, such as "$r1..rows".
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
// key) that is a reference in the grammar of the package documentation, or
// that starts like one ("$r" and a digit 1-9) but breaks the grammar, such
// as "$r1..rows" or "$r1.rows." (a likely typo, reported with an error
// wrapping [ErrBadRef]).
type Reference struct {
	// Ref is the string as written, JSON escapes decoded: "$r3.rows.0".
	Ref string
	// Pointer locates the string in the arguments as a JSON pointer
	// (RFC 6901), such as "/rows/0"; "" is the arguments themselves. The
	// resolved value sits at the same pointer in the resolved arguments.
	Pointer string
	// Err is nil when the reference was resolved. Otherwise the string was
	// left as written, and Err, which wraps [ErrBadRef], [ErrUnknownHandle]
	// or [ErrNoPath] (or [ErrUnavailable] for a value that cannot be read
	// back from the durable store), says why in words a model can act on.
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
// they are malformed or their handle or path names no value, in document
// order.
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
// So is a string that starts like a reference ("$r" and a digit 1-9) but
// breaks the grammar, such as "$r1..rows", "$r1.rows." or "$r1.a\x" (a
// bad escape); ResolveDetail reports it with [ErrBadRef].
// A string of two or more '$' followed by something that starts like a
// reference loses one '$' ("$$r1" becomes the string "$r1", "$$r2d2" the
// string "$r2d2"); "$$hello" stays as it is.
//
// args must be exactly one valid JSON value (surrounding whitespace is
// kept); otherwise the error wraps [ErrInvalidJSON]. Any nesting depth is
// accepted. Resolve never modifies args, and returns args itself when it
// holds nothing to replace. When the result would be larger than the
// store's bound ([WithMaxResolved], default 64 MiB), Resolve fails with
// [ErrTooLarge] as soon as that is certain, before building anything; so
// does a call whose path lookups would scan more than 4 times that bound
// of stored JSON (256 MiB by default, about half a second). A lookup scans
// each object it passes through whole (of duplicate keys, the last wins)
// and each array up to the item it takes, and reads a value kept only in
// the durable store back whole; but a child of the stored value itself
// that Put indexed for its preview (the first three and last two items of
// an array, every field of an object of up to 24 keys) costs nothing, so
// "$r1.-1" and "$r1.rows" are found at once in a value of any size.
// Within one call, a value read back, a stored value of at least 4 KiB and
// every container reached by scanning at least 4 KiB are remembered, so
// that other paths through them do not read or scan them again, and a walk
// through a remembered array continues from the item the previous one took
// when that is before the one it wants. Row ids from one large result
// ("$r1.rows.0.id", "$r1.rows.1.id", … or "$r1.0.id", "$r1.1.id", …) thus
// cost, in ascending order, one walk of the rows.
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
	meta  int // bytes of distinct references and of pointers reported, held to the bound too
	scan  int // bytes of stored JSON that path lookups have scanned
	edits []edit
	hits  []hit          // one per distinct reference string
	memo  map[string]int // reference → index in hits, once there are many
	walks walkCache      // containers that lookups reached by long scans

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
// path scans the stored JSON it goes through, and the bytes scanned may
// total at most scanFactor times the bound on the result (256 MiB by
// default, about half a second of scanning on a 2 GHz core), so that many
// distinct paths into one large value fail with ErrTooLarge rather than
// take seconds.
const scanFactor = 4

// scanBudget returns the bytes of stored JSON the path lookups of one call
// may scan: scanFactor times bound, or the largest int when that overflows.
func scanBudget(bound int) int {
	if bound > maxInt/scanFactor {
		return maxInt
	}
	return scanFactor * bound
}

const maxInt = int(^uint(0) >> 1)

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
		// The escape: drop the first '$', written as '$' or "\u0024". It
		// covers everything that starts like a reference, so that a literal
		// such as "$r2d2", which Prepare refuses as malformed, can be passed
		// as "$$r2d2".
		w := 1
		if r.args[start+1] == '\\' {
			w = len(`\u0024`)
		}
		return r.plan(edit{start + 1, start + 1 + w, dropDollar})
	}
	hi, ok := r.find(body)
	if !ok {
		// The reference strings are kept (in the hits, and in what is
		// returned), so they are held to the bound, as pointers are.
		if len(body) > r.bound-r.meta {
			return fmt.Errorf("values: %w: the %d references written in the arguments exceed the bound of %s", ErrTooLarge, len(r.hits)+1, size(r.bound))
		}
		r.meta += len(body)
		h := hit{ref: string(body)}
		p, problem := parseRefProblem(h.ref[1:])
		if problem != "" {
			// "$r1..rows" and the like: a typo the tool must not receive.
			h.err = fmt.Errorf("values: %s: %w: %s", quoteClipped(h.ref), ErrBadRef, problem)
		} else {
			budget := scanBudget(r.bound)
			var scanned int
			h.whole, h.part, scanned, h.err = r.s.lookupPath(p, &r.walks, budget-r.scan)
			if errors.Is(h.err, errScanBudget) {
				return fmt.Errorf("values: %w: looking up %d distinct paths would scan more than %s of stored JSON", ErrTooLarge, len(r.hits)+1, size(budget))
			}
			r.scan += scanned
			if h.err == nil {
				h.size = jsonSize(h.whole, h.part)
			}
		}
		hi = r.remember(h)
	}
	h := &r.hits[hi]
	if r.detail {
		ptr := r.pointer()
		if len(ptr) > r.bound-r.meta {
			return fmt.Errorf("values: %w: the locations of %d references exceed the bound of %s", ErrTooLarge, len(r.refs), size(r.bound))
		}
		r.meta += len(ptr)
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
	grow := h.size - (end - start)
	if grow > maxInt-r.total {
		return r.tooLarge() // reachable only with a bound near the largest int
	}
	r.total += grow
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
	return pointerOf(r.args, r.frames)
}

// pointerOf returns the JSON pointer of a value in the validated JSON args,
// given one frame per container around it: the index of the current item
// of an array, or -1 minus the offset in args of the current key of an
// object.
func pointerOf(args []byte, frames []int) string {
	if len(frames) == 0 {
		return ""
	}
	var b []byte
	for _, pos := range frames {
		b = append(b, '/')
		if pos >= 0 {
			b = strconv.AppendInt(b, int64(pos), 10)
			continue
		}
		pos = -1 - pos
		b = appendPointerToken(b, args[pos:skipString(args, pos)])
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
	text   string // the reference as parsed, without its '$': "r3.rows.0"
	handle string // "r3"
	index  int    // the handle's number; maxHandle when too large to store
	segs   string // the path as written after the handle, without its leading '.'; "" for none
}

// maxHandle stands for a handle number too large to have been handed out.
const maxHandle = maxInt

// String returns the reference in its typed form, "$r3.rows.0".
func (r refPath) String() string {
	if r.segs == "" {
		return "$" + r.handle
	}
	return "$" + r.handle + "." + r.segs
}

// prefixShown returns the reference to the part named by the first
// segments of r, those before index i of its path, clipped for a message.
func (r refPath) prefixShown(i int) string {
	return clipString("$" + r.key(i)[:min(i+len(r.handle), shownMax+utf8.UTFMax)])
}

// quoted returns the reference quoted for a message, clipped.
func (r refPath) quoted() string {
	return quoteClipped("$" + r.text)
}

// key returns r.prefix(i) without its '$', as a substring of r.text: the
// key of the walk cache.
func (r refPath) key(i int) string {
	return r.text[:len(r.handle)+i]
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
	r, problem := parseRefProblem(s)
	return r, problem == ""
}

// parseRefProblem is parseRef, saying what breaks the grammar, in words
// for the model that wrote s, instead of reporting false.
func parseRefProblem(s string) (refPath, string) {
	end := strings.IndexByte(s, '.')
	if end < 0 {
		end = len(s)
	}
	h := s[:end]
	if len(h) < 2 || h[0] != 'r' || h[1] < '1' || h[1] > '9' {
		return refPath{}, fmt.Sprintf("%s is not a handle; handles are r1, r2, …", quoteClipped(h))
	}
	n := 0
	for i, c := range []byte(h[1:]) {
		if c < '0' || c > '9' {
			num := h[:1+i]
			return refPath{}, fmt.Sprintf("the handle %s is followed by %s; a path starts with a dot, as in %s", clipString(num), quoteClipped(h[1+i:]), quoteClipped("$"+num+"."+clipString(s[1+i:])))
		}
		if n > (maxHandle-9)/10 {
			n = maxHandle
		} else if n != maxHandle {
			n = n*10 + int(c-'0')
		}
	}
	r := refPath{text: s, handle: h, index: n}
	if end == len(s) {
		return r, ""
	}
	r.segs = s[end+1:]
	segLen := 0
	for i := 0; i < len(r.segs); i++ {
		switch r.segs[i] {
		case '.':
			if segLen == 0 {
				return refPath{}, emptySegment(s[:end+1+i])
			}
			segLen = 0
			continue
		case '\\':
			if i+1 == len(r.segs) {
				return refPath{}, `the path ends with a lone backslash; write a backslash that is part of a key as "\\\\" and a dot as "\\."`
			}
			if r.segs[i+1] != '.' && r.segs[i+1] != '\\' {
				return refPath{}, fmt.Sprintf(`%q after %s is not an escape; in a path only "\\." (a dot in a key) and "\\\\" (a backslash) are`,
					r.segs[i:i+2], quoteTail("$"+s[:end+1+i]))
			}
			i++
		}
		segLen++
	}
	if r.segs == "" {
		return refPath{}, fmt.Sprintf("empty path after %s; write %s for the whole value, or a key or index after the dot", quoteClipped("$"+s), quoteClipped("$"+h))
	}
	if segLen == 0 {
		return refPath{}, emptySegment(s)
	}
	return r, ""
}

// emptySegment describes an empty path segment after the reference prefix
// p (without its '$'), which ends with a dot.
func emptySegment(p string) string {
	return fmt.Sprintf(`empty segment after %s; separate segments with one dot, and write a dot that is part of a key as "\\."`, quoteTail("$"+p))
}

// segmentEnd returns the index after the segment of the valid path p
// starting at i and its dot.
func segmentEnd(p string, i int) int {
	for i < len(p) && p[i] != '.' {
		if p[i] == '\\' {
			i++
		}
		i++
	}
	return i + 1
}

// nextSegment returns the segment of the valid path p starting at i,
// unescaped, and the index after it and its dot.
func nextSegment(p string, i int) (seg string, next int) {
	next = segmentEnd(p, i)
	seg = p[i : next-1]
	if strings.IndexByte(seg, '\\') >= 0 {
		b := make([]byte, 0, len(seg))
		for k := 0; k < len(seg); k++ {
			if seg[k] == '\\' {
				k++
			}
			b = append(b, seg[k])
		}
		seg = string(b)
	}
	return seg, next
}

// walkCache remembers, within one call of Resolve, the containers that
// path lookups reached by scanning at least walkCacheMin bytes, and the
// values they read back from the durable store, by the reference that
// names them, so that many paths through one large value ("$r1.rows.0.id",
// "$r1.rows.1.id", …) scan it, or read it back, once. The zero value is an
// empty cache that allocates nothing until a lookup scans that much.
type walkCache struct {
	m map[string]walkEntry // keyed by refPath.key
}

type walkEntry struct {
	whole Value  // the stored value, in memory
	part  []byte // the container, a subslice of its bytes
	open  bool   // part runs on past the container's end
	count int    // the container's items or keys when known, or -1
	// For an array, where the item after the last one taken starts: its
	// index and offset in part (0, 0 before any), so that ascending
	// indexes ("$r1.rows.0.id", "$r1.rows.1.id", …) walk it once in all.
	next, nextOff int
}

// Walk cache limits: a step of a lookup is remembered when it scanned at
// least walkCacheMin bytes (shorter ones are cheap to repeat, and small
// calls stay allocation-free), and only within the first walkCacheDepth
// segments of a path, so that probing the cache costs a bounded number of
// map lookups per distinct reference.
const (
	walkCacheMin   = 4 << 10
	walkCacheDepth = 16
)

// longest returns the entry for the longest prefix of r, among those with
// at most walkCacheDepth segments, that c holds, the index in r.segs after
// it, and the number of segments it covers; ok is false when c holds none,
// and for a reference without a path. c may be nil.
func (c *walkCache) longest(r refPath) (e walkEntry, at, segs int, ok bool) {
	if c == nil || c.m == nil || r.segs == "" {
		return e, 0, 0, false
	}
	e, ok = c.m[r.key(0)]
	for i, n := 0, 1; i < len(r.segs) && n <= walkCacheDepth; n++ {
		i = segmentEnd(r.segs, i)
		if hit, found := c.m[r.key(i)]; found {
			e, at, segs, ok = hit, i, n, true
		}
	}
	return e, at, segs, ok
}

// add remembers that r.prefix(at) names e.
func (c *walkCache) add(r refPath, at int, e walkEntry) {
	if c.m == nil {
		c.m = make(map[string]walkEntry)
	}
	c.m[r.key(at)] = e
}

// errScanBudget is returned by lookupPath when a lookup would scan more
// than it may.
var errScanBudget = errors.New("values: scan budget exceeded")

// lookupPath finds what r names. whole is the stored value; part is nil
// when r has no path, and otherwise the JSON of the part of whole the path
// names (a subslice of the stored bytes, which must not be modified). Its
// errors wrap [ErrUnknownHandle], [ErrNoPath] or [ErrUnavailable].
//
// Within one call of Resolve it starts from the longest prefix of r that c
// holds (c may be nil) and adds to c the values it reads back, the stored
// value itself when large, and the containers it reaches by long scans. It
// reports the bytes it scanned: nothing for a child of the stored value
// that Put indexed (see indexedChild); each object it passes through whole
// (the last of duplicate keys wins); each array up to the start of the
// item it descends into, or the end of the item it returns, from where the
// previous lookup through it in c stopped when that was before the item,
// and whole first when a negative index needs its length; and the whole
// value when it was read back from the durable store. When that would
// exceed limit it fails with errScanBudget, having scanned at most one
// array item past the limit.
func (s *SessionValues) lookupPath(r refPath, c *walkCache, limit int) (whole Value, part []byte, scanned int, err error) {
	w := walker{r: r, limit: limit, count: -1, key: -1}
	e, start, depth, ok := c.longest(r)
	if ok {
		w.whole, w.cur, w.open, w.count, w.key, w.depth = e.whole, e.part, e.open, e.count, start, depth
	} else if done, err := s.walkFromValue(&w, c); done || err != nil {
		return w.whole, nil, w.scanned, err
	}
	for i := start; i < len(r.segs); {
		at := i // cur is what r.prefix(at) names
		var seg string
		seg, i = nextSegment(r.segs, i)
		w.depth++
		var found []byte
		if at == 0 {
			found = indexedChild(w.whole.get(), seg)
		}
		step, open := 0, false
		if found == nil {
			var err error
			switch w.cur[0] {
			case '{':
				found, step, err = w.field(at, seg)
			case '[':
				found, step, open, err = w.item(c, at, seg, i > len(r.segs))
			default:
				err = fmt.Errorf("values: %s: %w: %s is %s, which has no fields or items", r.quoted(), ErrNoPath, r.prefixShown(at), kindOf(w.cur[0]))
			}
			if err != nil {
				return w.whole, nil, w.scanned + step, err
			}
		}
		w.enter(c, i, found, open, step)
	}
	part = w.cur
	if w.open {
		part = part[:skipValue(part, 0)]
	}
	return w.whole, part, w.scanned, nil
}

// walker is the state of one lookupPath.
type walker struct {
	r       refPath
	limit   int // bytes it may scan
	scanned int
	depth   int // segments walked

	whole Value
	cur   []byte // the container reached; runs on past its end when open
	open  bool
	count int // the length of the array cur, when known, or -1
	key   int // cur is the cache's entry for r.key(key), when at least 0
}

// The walker's cache is passed to its methods rather than kept in it, so
// that it stays on the stack of the Resolve call that owns it.

// walkFromValue starts w at the stored value r names, reading it back
// from the durable store when only that holds it, and reports whether
// the lookup ends there (a reference without a path).
func (s *SessionValues) walkFromValue(w *walker, c *walkCache) (done bool, err error) {
	r := w.r
	s.mu.RLock()
	n := len(s.vals)
	if r.index <= n {
		w.whole = s.vals[r.index-1]
	}
	s.mu.RUnlock()
	if r.index > n {
		if n == 0 {
			return true, fmt.Errorf("values: %s is %w; no values are stored yet", r.quoted(), ErrUnknownHandle)
		}
		return true, fmt.Errorf("values: %s is %w; stored: %s", r.quoted(), ErrUnknownHandle, storedRange(n))
	}
	stored := w.whole
	if w.whole, err = s.materialize(r, w.whole); err != nil { // read back a value kept only in the durable store
		return true, err
	}
	if r.segs == "" {
		return true, nil
	}
	x := w.whole.get()
	if w.whole.v != stored.v { // read back (or held by the store): charged whole, once
		if w.scanned = len(x.raw); w.scanned > w.limit {
			w.scanned = 0
			return true, errScanBudget
		}
	}
	if x.kind != KindArray && x.kind != KindObject {
		return true, fmt.Errorf("values: %s: %w: $%s is %s, which has no fields or items", r.quoted(), ErrNoPath, clipString(r.handle), x.kind)
	}
	w.cur, w.count = x.raw, x.n // n was counted at Put
	if c != nil && (w.whole.v != stored.v || len(w.cur) >= walkCacheMin) {
		// Remember the value, so that a value read back is read once and
		// the walks of later lookups through a large array resume.
		c.add(r, 0, walkEntry{whole: w.whole, part: w.cur, count: w.count})
		w.key = 0
	}
	return false, nil
}

// enter moves w to found, the child that the segment ending before index
// i of the path names, found by scanning step bytes, and remembers it in
// the cache when that scan was long or found is a large container.
func (w *walker) enter(c *walkCache, i int, found []byte, open bool, step int) {
	w.scanned += step
	w.cur, w.open, w.count, w.key = found, open, -1, -1
	long := step >= walkCacheMin || !open && len(found) >= walkCacheMin
	if c != nil && long && w.depth <= walkCacheDepth && (found[0] == '{' || found[0] == '[') {
		c.add(w.r, i, walkEntry{whole: w.whole, part: found, open: open, count: -1})
		w.key = i
	}
}

// field returns the value of the key seg in the object w.cur (the last of
// duplicate keys), and the bytes scanned: the whole object.
func (w *walker) field(at int, seg string) (found []byte, step int, err error) {
	d := w.cur
	budget := w.limit - w.scanned
	i := skipSpace(d, 1)
	for d[i] != '}' {
		end := skipString(d, i)
		k := d[i:end]
		i = skipSpace(d, skipSpace(d, end)+1) // the colon
		end = skipValue(d, i)
		if end > budget {
			return nil, 0, errScanBudget
		}
		if keyEquals(k, seg) {
			found = d[i:end] // the last duplicate wins, as in encoding/json
		}
		if i = skipSpace(d, end); d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	if step = i + 1; step > budget {
		return nil, 0, errScanBudget
	}
	if found == nil {
		return nil, step, fmt.Errorf("values: %s: %w: %s has no key %s%s", w.r.quoted(), ErrNoPath, w.r.prefixShown(at), quoteClipped(seg), keyList(d))
	}
	return found, step, nil
}

// item returns the item of the array w.cur that the index seg names, and
// the bytes scanned. When last is false the item is to be descended into:
// it is returned open, running on past its end, so that a deep path is
// not scanned once per level.
func (w *walker) item(c *walkCache, at int, seg string, last bool) (found []byte, step int, open bool, err error) {
	idx, ok := parseIndex(seg)
	if !ok {
		return nil, 0, false, fmt.Errorf("values: %s: %w: %s is an array; %s is not an index (0, 1, … or -1 for the last item)", w.r.quoted(), ErrNoPath, w.r.prefixShown(at), quoteClipped(seg))
	}
	var ce walkEntry // cur's cache entry
	if w.key >= 0 {
		ce = c.m[w.r.key(w.key)]
	}
	budget := w.limit - w.scanned
	if idx < 0 && w.count < 0 {
		_, end, _, n := walkArray(w.cur, 0, 0, maxInt, budget, false)
		if end < 0 {
			return nil, 0, false, errScanBudget
		}
		step, w.count = end, n
		if w.key >= 0 {
			ce.count = n
			c.m[w.r.key(w.key)] = ce
		}
	}
	if idx < 0 {
		idx += w.count
	}
	k, from := 0, 0 // walk from item k at offset from
	if ce.next > 0 && ce.next <= idx {
		k, from = ce.next, ce.nextOff
	}
	if idx >= 0 {
		var end, next int
		found, end, next, k = walkArray(w.cur, k, from, idx, budget-step, !last)
		if end < 0 {
			return nil, 0, false, errScanBudget
		}
		step += end - from
		if found != nil && w.key >= 0 {
			ce.next, ce.nextOff = idx+1, next
			if !last {
				ce.next = idx // next is not known: resume at this item
			}
			c.m[w.r.key(w.key)] = ce
		}
	}
	if found == nil { // walked to the end, or not at all
		if w.count < 0 {
			w.count = k
		}
		return nil, step, false, fmt.Errorf("values: %s: %w: index %s is out of range for %s, an array of %d items", w.r.quoted(), ErrNoPath, seg, w.r.prefixShown(at), w.count)
	}
	return found, step, !last, nil
}

// indexedChild returns the child of the stored array or object x that seg
// names when the index Put made of x holds it (a head or tail item of an
// array, a field of an object small enough to be indexed whole, the last
// of duplicate keys winning), and nil otherwise.
func indexedChild(x *value, seg string) []byte {
	switch x.kind {
	case KindArray:
		idx, ok := parseIndex(seg)
		if !ok {
			return nil
		}
		if idx < 0 {
			idx += x.n
		}
		if idx < 0 || idx >= x.n {
			return nil
		}
		i := -1
		switch {
		case x.n == len(x.elems):
			i = idx
		case len(x.elems) == arrayHeadItems+arrayTailItems && idx < arrayHeadItems:
			i = idx
		case len(x.elems) == arrayHeadItems+arrayTailItems && idx >= x.n-arrayTailItems:
			i = arrayHeadItems + idx - (x.n - arrayTailItems)
		}
		if i < 0 {
			return nil
		}
		return x.elems[i].val.of(x.raw)
	case KindObject:
		if x.n != len(x.elems) || x.n > objectFieldsMax {
			return nil // only some keys are indexed
		}
		var found []byte
		for i := range x.elems {
			if keyEquals(x.elems[i].key.of(x.raw), seg) {
				found = x.elems[i].val.of(x.raw)
			}
		}
		return found
	}
	return nil
}

// walkArray walks the validated array d from its item k, which starts at
// offset from (0 for the array's start, with k 0), to its item idx (idx ≥
// k), scanning no further than offset from+limit. It returns the item, the
// offset of its end and the offset where the next item starts; or, when
// open, the rest of d from the item's start, that offset as the end, and
// the same as next (the item itself is not scanned); or, when the array
// ends first, nil, the offset of its end and the number of items; or a
// negative end when the walk would go past the limit.
func walkArray(d []byte, k, from, idx, limit int, open bool) (item []byte, end, next, n int) {
	i := from
	if i == 0 {
		i = skipSpace(d, 1)
	}
	for ; d[i] != ']'; k++ {
		if k == idx && open {
			if i-from > limit {
				return nil, -1, 0, k
			}
			return d[i:], i, i, k
		}
		e := skipValue(d, i)
		if e-from > limit {
			return nil, -1, 0, k
		}
		j := skipSpace(d, e)
		if d[j] == ',' {
			j = skipSpace(d, j+1)
		}
		if k == idx {
			return d[i:e], e, j, k
		}
		i = j
	}
	return nil, i, 0, k
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
