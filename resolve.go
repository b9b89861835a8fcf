package values

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"

	"github.com/agentvalues/values/internal/jsontext"
)

// ErrTooLarge reports work past a bound: tool arguments whose resolved
// form would exceed the store's bound ([WithMaxResolved]), path lookups
// that would scan more than 4 times that bound of stored JSON, and a
// query's input or result past its bound ([WithQueryLimits]).
var ErrTooLarge = errors.New("resolved arguments too large")

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
// again. A path goes on into the JSON array or object a string holds
// ("$r1.content.0.text.5.name"), and takes the values of a text holding a
// stream of JSON values as items ("$r1.7.Action"); of duplicate keys the
// last wins, as in encoding/json. A string that merely
// contains a reference ("echo $r1 > f") is left alone. A reference whose
// handle or path names no value is left as written, for the tool's
// validation to report; [SessionValues.ResolveDetail] says which and why,
// and [SessionValues.Prepare] turns it into an error. So is a string that
// starts like a reference ("$r" and a digit 1-9) but breaks the grammar,
// such as "$r1..rows", "$r1.rows." or "$r1.a\x" (a bad escape);
// ResolveDetail reports it with [ErrBadRef]. A string of two or more '$'
// followed by something that starts like a reference loses one '$'
// ("$$r1" becomes the string "$r1", "$$r2d2" the string "$r2d2");
// "$$hello" stays as it is.
//
// args must be exactly one valid JSON value (surrounding whitespace is
// kept); otherwise the error wraps [ErrInvalidJSON]. Any nesting depth is
// accepted. Resolve never modifies args, and returns args itself when it
// holds nothing to replace. When the result would be larger than the
// store's bound ([WithMaxResolved], default 64 MiB), Resolve fails with
// [ErrTooLarge] as soon as that is certain, before building anything; so
// does a call whose path lookups would scan more than 4 times that bound
// of stored JSON (256 MiB by default), each lookup charged what it scans:
// nothing for the head and tail items and the small objects Put indexed,
// so that "$r1.-1" and "$r1.rows" are found at once in a value of any
// size. The package documentation's Cost section says what a lookup scans.
func (s *SessionValues) Resolve(args []byte) ([]byte, []string, error) {
	r := resolver{s: s, args: args}
	if err := r.run(); err != nil {
		return nil, nil, err
	}
	var resolved []string
	for _, e := range r.edits {
		if e.hit == dropDollar {
			continue
		}
		if resolved == nil {
			resolved = make([]string, 0, len(r.edits))
		}
		resolved = append(resolved, r.hits[e.hit].ref)
	}
	return r.out, resolved, nil
}

// ResolveDetail is [SessionValues.Resolve] with every reference reported,
// resolved or not, with its location in the arguments; the errors are
// those of Resolve. It is safe to call concurrently with Put.
func (s *SessionValues) ResolveDetail(args []byte) (Resolution, error) {
	r := resolver{s: s, args: args}
	if err := r.run(); err != nil {
		return Resolution{}, err
	}
	refs, err := r.references()
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Args: r.out, Refs: refs}, nil
}

// resolver is the state of one call of Resolve: a validating walk over
// the arguments that plans the splice, then one copy.
type resolver struct {
	s    *SessionValues
	args []byte

	bound      int // the store's bound on the result
	total      int // size of the result with the edits planned so far
	meta       int // bytes of distinct references, and of their pointers, held to the bound too
	scan       int // bytes of stored JSON that path lookups have scanned
	edits      []edit
	unresolved []edit          // the references left as written, hit set, in document order
	hits       []hit           // one per distinct reference string
	memo       map[string]int  // reference → index in hits, once there are many
	walks      walkCache       // containers that lookups reached by long scans
	walker     jsontext.Walker // the walk over args

	out []byte
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
	if bound > math.MaxInt/scanFactor {
		return math.MaxInt
	}
	return scanFactor * bound
}

// initialRefs is the capacity the lists of a call start with, so that a
// call with a few references allocates each list once.
const initialRefs = 8

func (r *resolver) run() error {
	r.bound = r.s.maxResolved()
	r.total = len(r.args)
	if err := r.walker.Walk(r.args, r.scalar); err != nil {
		if errors.Is(err, jsontext.ErrSyntax) {
			return fmt.Errorf("values: %w", err)
		}
		return err // from r.scalar, which says "values: " itself
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

// scalar plans the edit, if any, for a scalar of the arguments: a string
// that is a reference or an escaped one.
func (r *resolver) scalar(start, end int) error {
	if r.args[start] != '"' {
		return nil
	}
	return r.str(start, end)
}

// str plans the edit, if any, for the validated string value args[start:end].
func (r *resolver) str(start, end int) error {
	tok := r.args[start:end]
	body := tok[1 : len(tok)-1]
	if len(body) < 3 || (body[0] != '$' && body[0] != '\\') {
		return nil // the common case: not a reference
	}
	if bytes.IndexByte(body, '\\') >= 0 {
		body = jsontext.AppendUnquoted(nil, tok)
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
			h.err = fmt.Errorf("values: %s: %w: %s", jsontext.QuoteClipped(h.ref), ErrBadRef, problem)
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
	if h.err != nil {
		if r.unresolved == nil {
			r.unresolved = make([]edit, 0, initialRefs)
		}
		r.unresolved = append(r.unresolved, edit{start, end, hi})
		return nil
	}
	grow := h.size - (end - start)
	if grow > math.MaxInt-r.total {
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

// references lists every reference of the call, resolved (an edit) or
// not, in document order, with its JSON pointer. The pointers are held to
// the bound with the reference strings.
func (r *resolver) references() ([]Reference, error) {
	n := len(r.unresolved)
	for _, e := range r.edits {
		if e.hit != dropDollar {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	refs := make([]Reference, 0, n)
	offsets := make([]int, 0, n)
	edits, unresolved := r.edits, r.unresolved
	for len(edits) > 0 || len(unresolved) > 0 {
		var e edit
		if len(unresolved) == 0 || len(edits) > 0 && edits[0].start < unresolved[0].start {
			e, edits = edits[0], edits[1:]
			if e.hit == dropDollar {
				continue
			}
		} else {
			e, unresolved = unresolved[0], unresolved[1:]
		}
		h := &r.hits[e.hit]
		refs = append(refs, Reference{Ref: h.ref, Err: h.err})
		offsets = append(offsets, e.start)
	}
	ptrs, ok := jsontext.Pointers(r.args, offsets, r.bound-r.meta)
	if !ok {
		return nil, fmt.Errorf("values: %w: the locations of %d references exceed the bound of %s", ErrTooLarge, len(refs), size(r.bound))
	}
	for i := range refs {
		refs[i].Pointer = ptrs[i]
	}
	return refs, nil
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
		return jsontext.QuotedLen(x.raw)
	case KindBinary:
		return base64.StdEncoding.EncodedLen(len(x.raw)) + 2
	}
	return len(x.raw)
}
