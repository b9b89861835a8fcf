package jsontext

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every error about invalid JSON.
var ErrSyntax = errors.New("invalid JSON")

// errAfterValue is wrapped too by Scan's error for data after a valid
// value: see AfterValue.
var errAfterValue = errors.New("unexpected data after the value")

// AfterValue reports whether err is [Scan]'s error for input that holds a
// valid value and more after it: input that may be a stream of values
// ([ScanStream]), as against one broken inside its first value.
func AfterValue(err error) bool { return errors.Is(err, errAfterValue) }

// Span is a half-open byte range [Start, End) of a document.
type Span struct{ Start, End int }

// Of returns the bytes of b that s spans.
func (s Span) Of(b []byte) []byte { return b[s.Start:s.End] }

// Child is one direct child of a top-level container, as Scan records it.
type Child struct {
	Key Span // the key with its quotes, for an object field; zero for an array item
	Val Span // the value
}

// MaxTail is the largest number of last children Scan can record.
const MaxTail = 8

// Limits says how much [Scan] records of a top-level container.
type Limits struct {
	Head int // first children
	Tail int // last children, at most MaxTail
	Keys int // distinct keys of the object items of an array (see Items)
	// Index asks for the Marks of a top-level array (or stream) and the
	// KeyBlocks of a top-level object.
	Index bool
	// Outline asks for the Outline of a top-level object, of at most this
	// many parts (see Shape.Outline); Descend says which of its
	// containers to outline the children of.
	Outline int
	Descend Descend
	// Nested asks for the Shape of the largest member of a top-level
	// object that is an array or object (see Shape.Nested), recorded in
	// the same pass.
	Nested bool
	// Inner, with Outline, names one container of the outline, at depth 2
	// or more, that the outline does not descend into: the first for
	// which it reports true, asked as Descend is. Scan records its Shape
	// as Scan of that value alone with InnerLimits records it (their
	// Outline and Inner ignored, and their Nested heeded), except that its
	// spans, marks and key blocks are offsets in the document:
	// Shape.Inner. A caller that scans a document to validate it, and
	// then one value in it to index it, so reads that value once.
	Inner       Descend
	InnerLimits *Limits
	// validOnly, for Valid, records nothing of an array's items (Items is
	// nil): their keys cost a scan of a large array more than validating
	// it does. The rest of the Shape is then not Scan's either (an array's
	// items are taken for an object's members).
	validOnly bool
}

// Descend says whether an outline goes on into the children of the
// container at depth (1 for a member of the top-level object) under key
// (the quoted key of an object member, nil for an array item).
type Descend func(depth int, key []byte) bool

// MaxOutlineDepth is the deepest an outline goes: Descend is not asked of
// containers at this depth.
const MaxOutlineDepth = 6

// A Part is one value of an outline: its depth (1 for a member of the
// top-level object), its key (the quoted key of an object member; zero for
// an array item) and its span.
type Part struct {
	Depth int
	Key   Span
	Val   Span
}

// Largest is the number of largest children Scan records.
const Largest = 3

// Shape is what Scan records of a top-level array or object: the number of
// its children, the first ones, the last ones, the largest ones, and for
// an array what its items hold.
type Shape struct {
	Count   int            // direct children
	Head    []Child        // the first children, as many as Scan was asked for
	Largest [Largest]Child // the largest children, largest first; zero spans past Count
	Items   *Items         // for an array, its items; nil otherwise
	Marks   Marks          // for an array, with Limits.Index: marks of its items
	Blocks  KeyBlocks      // for an object, with Limits.Index: blocks of its keys
	Depth   int            // of Scan: the deepest nesting of arrays and objects in the document, as [Depth] counts it
	// Outline, with Limits.Outline, holds the members of a top-level
	// object and, within each container Descend chose, its children, in
	// document order (a container before what it holds); nil when the
	// document holds more than Limits.Outline of them. It lets a caller
	// find values deep in a large document without reading past what
	// surrounds them again ([OutlineOf] makes the same of valid JSON).
	Outline []Part
	// Nested, with Limits.Nested, is the Shape of the largest member of a
	// top-level object that is an array or object (the first of equal
	// ones, among the first nestedMembers of them), as Scan of that member
	// alone records it with the same Limits (without Outline and Nested),
	// except that its spans, marks and key blocks are offsets in the
	// document; NestedVal
	// is the member's span. Nil when the object has no such member. A
	// caller about to scan the largest member of an object (the part that
	// dominates it) so reads it once, not twice; it must check that
	// NestedVal is the member it wants (Largest[0]): past nestedMembers
	// arrays and objects, the later ones are not recorded.
	Nested    *Shape
	NestedVal Span
	// Inner, with Limits.Inner, is the Shape of the container it named
	// (see there), InnerVal its span; nil when there was none. Its Depth
	// is the container's own (1 for a container of scalars alone).
	Inner    *Shape
	InnerVal Span
	tail     [MaxTail]Child
	ntail    int // the ring size: the number of last children asked for
}

// Last returns the last k children in order; k must not exceed the number
// Scan was asked to record, nor Count.
func (sh *Shape) Last(k int) []Child {
	out := make([]Child, 0, k)
	for i := sh.Count - k; i < sh.Count; i++ {
		out = append(out, sh.tail[i%sh.ntail])
	}
	return out
}

// add records the child c that ended at the top level, among the largest
// too when largest (for an object: an array's largest items are not used).
func (sh *Shape) add(c Child, head int, largest bool) {
	if sh.Count < head {
		sh.Head = append(sh.Head, c)
	}
	if sh.ntail > 0 {
		sh.tail[sh.Count%sh.ntail] = c
	}
	sh.Count++
	if largest {
		sh.addLargest(c)
	}
}

// addLargest keeps c among the largest children if it is one of them.
func (sh *Shape) addLargest(c Child) {
	n := c.Val.End - c.Val.Start
	for i := range sh.Largest {
		l := &sh.Largest[i]
		if n > l.Val.End-l.Val.Start {
			copy(sh.Largest[i+1:], sh.Largest[i:Largest-1])
			*l = c
			return
		}
	}
}

// IsSpace reports whether c is JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace, or len(d).
func SkipSpace(d []byte, i int) int {
	for i < len(d) && IsSpace(d[i]) {
		i++
	}
	return i
}

// Scan validates d as exactly one JSON value (surrounding whitespace
// allowed, strings valid UTF-8) in one pass, and returns the span of the
// value without the whitespace. For a top-level array or object it also
// records its [Shape], as much as lim asks for: with lim.Index, the
// [Marks] of an array's items or the [KeyBlocks] of an object's keys, in
// slices made once with room for as many as d could hold: at most 1/25 of
// its bytes, plus one block. An error wraps [ErrSyntax] and gives the byte
// offset of the problem.
//
// A top-level array of at least 4 MiB is scanned by two goroutines when
// GOMAXPROCS allows, each over about half of it, and so is, with
// lim.Nested (and no Outline), an object of at least 4 MiB whose middle
// falls among the items of an array member that Nested records, when the
// member's key is at least a KiB before the middle (see scanSplitObject);
// both have ended when Scan returns. The Shape is one scan's, but for the
// Marks of a split array (or Nested member), which mark the first item of
// the second half too, and for a Nested member the split cannot tell (nil:
// see joinObject).
func Scan(d []byte, lim Limits) (top Span, sh Shape, err error) {
	lim.Tail = min(max(lim.Tail, 0), MaxTail)
	if splits(d) {
		if top, sh, err, ok := scanSplit(d, lim); ok {
			return top, sh, err
		}
	}
	top, err, _ = scanFrom(d, 0, false, -1, lim, &sh)
	return top, sh, err
}

// ScanStream validates d as a stream of JSON values: one or more values,
// each separated from the next by white space or nothing (JSON Lines,
// NDJSON, and the concatenated pretty-printed objects of go list -json
// among them), and returns the [Shape] of the stream as if it were an
// array of its values: their number, the first and last ones, and what
// they hold, as much as lim asks for. Input without a value, or with
// anything but white space between values, is an error wrapping
// [ErrSyntax].
func ScanStream(d []byte, lim Limits) (Shape, error) {
	lim.Tail = min(max(lim.Tail, 0), MaxTail)
	if SkipSpace(d, 0) == len(d) {
		return Shape{}, syntaxErr(d, len(d), "no value")
	}
	sc := scanner{d: d, level: level{head: lim.Head, items: &itemsScan{max: lim.Keys}}, stream: true}
	sc.sh.ntail = lim.Tail
	sc.index(lim, 0, false)
	_, err := sc.run(0, -1)
	if err != nil {
		return Shape{}, err
	}
	sh := sc.sh
	sh.Items = sc.items.items()
	return sh, nil
}

// Valid returns nil when d is exactly one valid JSON value, and otherwise
// an error wrapping [ErrSyntax].
//
// It validates with Tally, which accepts and refuses as Scan does, with
// Scan's error (FuzzSkim, FuzzValid), without Scan's fixed cost (most of
// the time of a small message: every request and response of a small call
// is validated) or its records. Only an array that Scan would split among
// goroutines (splitScanMin, more than one GOMAXPROCS) is Scan's, recording
// nothing of its items (Limits.validOnly).
func Valid(d []byte) error {
	if !splits(d) {
		_, _, _, err := Tally(d)
		return err
	}
	_, _, err := Scan(d, Limits{validOnly: true})
	return err
}

// splitScanMin is the size from which Scan splits the scan of an array in
// two: below it, starting a goroutine costs more than it saves.
const splitScanMin = 4 << 20

// splits says whether Scan tries to split the scan of d between two
// goroutines: when d is large enough and there is more than one
// GOMAXPROCS.
func splits(d []byte) bool { return len(d) >= splitScanMin && runtime.GOMAXPROCS(0) > 1 }

// scanSplit scans a top-level array in two halves at once. The second
// half starts at a guessed boundary between two items of the array; the
// guess is confirmed when the scan of the first half arrives at that very
// offset as the start of an item of the array (the rest of the document is
// then context-free). When the guess was wrong, the first scan simply goes
// on to the end and the second one's result is dropped. ok is false when d
// is not an array or no boundary was found, and the caller scans alone.
func scanSplit(d []byte, lim Limits) (top Span, sh Shape, err error, ok bool) {
	start := SkipSpace(d, 0)
	if start < len(d) && d[start] == '{' && lim.Nested && lim.Outline == 0 {
		return scanSplitObject(d, start, lim)
	}
	if start >= len(d) || d[start] != '[' {
		return top, sh, nil, false
	}
	mid := guessItemStart(d, start+len(d)/2)
	if mid < 0 {
		return top, sh, nil, false
	}
	type result struct {
		top Span
		sh  Shape
		err error
	}
	second := make(chan result, 1)
	go func() {
		var r result
		r.top, r.err, _ = scanFrom(d, mid, true, -1, lim, &r.sh)
		second <- r
	}()
	top, err, stopped := scanFrom(d, 0, false, mid, lim, &sh)
	r := <-second // always wait: no goroutine outlives the call
	if !stopped {
		return top, sh, err, true // the guess was wrong; the first scan did it all
	}
	if r.err != nil {
		return top, sh, r.err, true
	}
	top.End = r.top.End
	joined := joinShapes(d, &sh, &r.sh, lim)
	if joined.Items == nil && !lim.validOnly {
		// The items' keys cannot be counted from the halves (mergeItems):
		// one scan does it all.
		top, err, _ = scanFrom(d, 0, false, -1, lim, &sh)
		return top, sh, err, true
	}
	return top, joined, nil, true
}

// canStop reports whether run, at the value at i (at stopDepth), is where
// the second half of a split scan started: an item of a top-level array;
// or an item of an array member of a top-level object, one the nesting
// records, when the member's key began at least KeyBlockGap before i (so
// that the next key, after the member, starts a key block of its own, as
// it does in one scan).
func (sc *scanner) canStop(i int) bool {
	if sc.stopDepth == 1 {
		return sc.stack[0] == '['
	}
	return sc.stack[0] == '{' && sc.stack[1] == '[' && sc.nest != nil && sc.nest.on &&
		i-sc.curKey.Start >= KeyBlockGap
}

// scanSplitObject is scanSplit for a top-level object at start, when the
// middle of d is likely inside a large array member of it (the rows of
// {"object":"list","data":[…]}): the second half starts at a guessed item
// of that array, inside the object and the array, and the first confirms
// it by arriving there. The Shape is the object's with the member's Nested
// shape joined from both halves; Nested is nil (and the caller scans the
// member again) when members the second half recorded may have been past
// the nestedMembers the nesting records.
func scanSplitObject(d []byte, start int, lim Limits) (top Span, sh Shape, err error, ok bool) {
	mid := guessItemStart(d, start+len(d)/2)
	if mid < 0 {
		return top, sh, nil, false
	}
	b := &scanner{d: d, level: newLevel(lim), stack: []byte{'{', '['}, spanning: true, stopDepth: 1}
	b.sh.Depth = 2
	if lim.Index {
		b.keys = &keyIndexer{blocks: make(KeyBlocks, 0, (len(d)-mid)/KeyBlockGap+1)}
	}
	b.nest = &nesting{lim: lim, on: true}
	b.nest.reset(d, mid, '[')
	b.nest.cur.markNext, b.nest.cur.sh.Depth = mid, 1 // its first item is marked, as in an array's second half
	b.nest.cur.items.max = secondHalfKeys(lim.Keys)
	type result struct {
		end int
		err error
	}
	second := make(chan result, 1)
	go func() {
		end, err := b.run(mid, -1)
		second <- result{end, err}
	}()
	a := newScanner(d, start, false, lim)
	a.stopDepth = 2
	top.Start = start
	top.End, err = a.run(start, mid)
	r := <-second // always wait: no goroutine outlives the call
	if !a.stopped {
		return top, a.shape(err), err, true // the guess was wrong; the first scan did it all
	}
	if r.err != nil {
		return top, sh, r.err, true
	}
	top.End = r.end
	return top, joinObject(d, a, b, lim), nil, true
}

// joinObject returns the Shape of the object scanned by a, up to an item
// of its array member m, and by b, from that item to the end.
func joinObject(d []byte, a, b *scanner, lim Limits) Shape {
	m := Child{Key: a.curKey, Val: Span{a.curStart, b.spanEnd}}
	a.sh.add(m, a.head, true)
	bsh := b.shape(nil)
	sh := joinShapes(d, &a.sh, &bsh, lim)
	if a.keys != nil {
		sh.Blocks = append(a.keys.blocks, b.keys.blocks...) // made large enough for the whole object
	}
	// m's own shape, from both halves.
	first, second := a.nest.cur.sh, b.span.sh // b.span is set: b's scan ended past the member
	first.Items, second.Items = a.nest.cur.items.items(), b.span.items.items()
	ms := joinShapes(d, &first, &second, lim)
	// The largest of the members before m (a's best), m, and those after
	// (b's best, when it is known to be among those the nesting records).
	size := func(s Span) int { return s.End - s.Start }
	var best *Shape
	var val Span
	if a.nest.bestVal.End != 0 {
		best, val = &a.nest.best.sh, a.nest.bestVal
	}
	if size(m.Val) > size(val) {
		if ms.Items == nil {
			return sh // m's items' keys cannot be counted from the halves (mergeItems)
		}
		best, val = &ms, m.Val
	}
	if after := b.nest.bestVal; after.End != 0 && size(after) > size(val) {
		if b.nest.bestAt > nestedMembers-a.nest.members {
			return sh // it may not be; nor is the largest of those that are known
		}
		best, val = &b.nest.best.sh, after
	}
	if best != nil {
		cutToLength(best)
		sh.Nested, sh.NestedVal = best, val
	}
	return sh
}

// guessItemStart returns the first offset at or after from that follows
// "}," or "]," (with optional whitespace) and starts an object or array: a
// likely start of an item of a large array of objects or arrays. It
// returns -1 when there is none within a small window.
func guessItemStart(d []byte, from int) int {
	const window = 1 << 20
	for i, end := from, min(len(d), from+window); i < end; i++ {
		if d[i] != ',' || i == 0 || (d[i-1] != '}' && d[i-1] != ']') {
			continue
		}
		j := SkipSpace(d, i+1)
		if j < len(d) && (d[j] == '{' || d[j] == '[') {
			return j
		}
	}
	return -1
}

// joinShapes returns the shape of an array of d whose items are those of
// a followed by those of b; its Items are nil when mergeItems cannot tell
// them.
func joinShapes(d []byte, a, b *Shape, lim Limits) Shape {
	sh := Shape{Count: a.Count + b.Count, Head: a.Head, ntail: a.ntail, Largest: a.Largest, Depth: max(a.Depth, b.Depth)}
	for _, c := range b.Head {
		if len(sh.Head) == lim.Head {
			break
		}
		sh.Head = append(sh.Head, c)
	}
	for _, c := range b.Largest {
		sh.addLargest(c)
	}
	if a.Items != nil && b.Items != nil {
		sh.Items = mergeItems(d, a.Items, b.Items, lim.Keys)
	}
	if lim.Index {
		sh.Marks = a.Marks // made large enough for the whole array
		for _, m := range b.Marks {
			sh.Marks = append(sh.Marks, Mark{a.Count + m.Item, m.Off})
		}
	}
	if sh.ntail == 0 {
		return sh
	}
	last := append(a.Last(min(a.Count, a.ntail)), b.Last(min(b.Count, b.ntail))...)
	last = last[max(0, len(last)-sh.ntail):]
	for k, c := range last {
		sh.tail[(sh.Count-len(last)+k)%sh.ntail] = c
	}
	return sh
}

// index sets sc up to record what lim.Index asks of the top-level value,
// which starts at i (or, inArray, whose item starts at i: that item is
// marked).
func (sc *scanner) index(lim Limits, i int, inArray bool) {
	// The slices are made once, large enough for what the rest of the
	// document can hold (marks at least MarkGap apart, blocks KeyBlockGap),
	// rather than grown: no copies, and nothing past that bound is kept.
	switch {
	case !lim.Index:
	case inArray:
		sc.marks, sc.markNext = true, i
		sc.sh.Marks = make(Marks, 0, (len(sc.d)-i)/MarkGap+1)
	case sc.stream || i < len(sc.d) && sc.d[i] == '[':
		sc.marks, sc.markNext = true, i+MarkGap
		sc.sh.Marks = make(Marks, 0, (len(sc.d)-i)/MarkGap+1)
	case i < len(sc.d) && sc.d[i] == '{':
		sc.keys = &keyIndexer{blocks: make(KeyBlocks, 0, (len(sc.d)-i)/KeyBlockGap+1)}
	}
}

// scanFrom is the scanner. With inArray false it scans d from offset from
// as one whole JSON value. With inArray true it starts inside a top-level
// array, at the item at offset from, and scans to the end of the document.
// With stop ≥ 0 it stops, reporting stopped, when an item of a top-level
// array starts exactly at offset stop, and gives up stopping once it has
// gone past it. It sets *sh to the Shape recorded (written in place: a
// Shape is large, and a small message is scanned in little more time than
// copying it takes).
func scanFrom(d []byte, from int, inArray bool, stop int, lim Limits, sh *Shape) (top Span, err error, stopped bool) {
	i := SkipSpace(d, from)
	var sc scanner // on the stack: a small message is scanned without allocating it
	sc.init(d, i, inArray, lim)
	top.Start = i
	top.End, err = sc.run(i, stop)
	sc.shapeTo(sh, err)
	return top, err, sc.stopped
}

// newScanner returns a scanner on the heap, set up by init (scanFrom
// keeps its own on its stack), for a split scan's halves.
func newScanner(d []byte, i int, inArray bool, lim Limits) *scanner {
	sc := new(scanner)
	sc.init(d, i, inArray, lim)
	return sc
}

// init sets up the zero scanner sc to scan the value at d[i] (inArray: an
// item of a top-level array) as lim asks, before it runs.
func (sc *scanner) init(d []byte, i int, inArray bool, lim Limits) {
	sc.d, sc.level, sc.stopDepth = d, newLevel(lim), 1
	switch {
	case lim.validOnly:
	case inArray: // the second half of a split scan
		sc.items = &itemsScan{max: secondHalfKeys(lim.Keys)}
	case i < len(d) && d[i] == '[':
		sc.items = &itemsScan{max: lim.Keys}
	}
	if inArray {
		sc.stack = append(sc.stack, '[')
	}
	sc.index(lim, i, inArray)
	if lim.Nested && sc.items == nil && i < len(d) && d[i] == '{' {
		sc.nest = &nesting{lim: lim}
	}
	if lim.Outline > 0 && sc.items == nil && i < len(d) && d[i] == '{' {
		sc.descend, sc.desc = lim.Descend, 1
		if lim.Inner != nil && lim.InnerLimits != nil && sc.nest == nil {
			sc.inner, sc.innerLim, sc.innerAt = lim.Inner, lim.InnerLimits, -1
		}
		sc.sh.Outline = make([]Part, 0, min(lim.Outline, 64))
		sc.outMax = lim.Outline
		for l := range sc.open {
			sc.open[l] = -1
		}
	}
}

// shape returns the Shape the scanner recorded, complete when err is nil.
func (sc *scanner) shape(err error) (sh Shape) {
	sc.shapeTo(&sh, err)
	return sh
}

// shapeTo sets *sh to the Shape the scanner recorded, as shape returns it.
func (sc *scanner) shapeTo(sh *Shape, err error) {
	*sh = sc.sh
	if sc.keys != nil && err == nil {
		sh.Blocks = sc.keys.blocks
	}
	if sc.items != nil && err == nil {
		sh.Items = sc.items.items()
	}
	if sc.nest != nil && err == nil {
		sh.Nested, sh.NestedVal = sc.nest.shape()
	}
}

// run scans from i to the end of the document, or until an item of a
// top-level array starts at stop (when stop ≥ 0; sc.stopped says so), and
// returns where the value ended.
func (sc *scanner) run(i, stop int) (end int, err error) {
	d := sc.d
	if sc.stream {
		sc.stack = append(sc.stack, '[')
	}
	for {
		// A value starts at i (after optional whitespace).
		i = SkipSpace(d, i)
		if i >= len(d) {
			return i, syntaxErr(d, i, "unexpected end of input")
		}
		// Nothing is recorded of a value deeper than 2 but in an outline,
		// nor is one a place to stop at: one test passes it.
		if l := len(sc.stack); l <= 2 || l <= sc.desc || stop >= 0 {
			if l != 0 && l <= sc.desc {
				sc.record(i)
			}
			if stop >= 0 && i >= stop && l == sc.stopDepth {
				if i == stop && sc.canStop(i) {
					sc.stopped = true
					return i, nil
				}
				stop = -1
			}
			if l == 1 {
				sc.pend = sc.level.begin(d, i)
				if sc.nest != nil {
					sc.nest.member(d, i)
				}
			} else if sc.nest != nil && sc.nest.on && l == 2 {
				sc.pend = sc.nest.cur.begin(d, i)
			}
		}
		switch c := d[i]; c {
		case '{', '[':
			sc.pend = nil
			if c == '{' && skimDeep && !sc.invalid && sc.desc == 0 {
				if items, member := sc.itemsHere(); items != nil {
					if end, ok := sc.objectItem(i, items, member); ok {
						i = end
						break
					}
					// It is invalid: scanned again below, to the error,
					// with nothing skimmed. What objectItem recorded of it
					// is dropped with the Shape.
					sc.invalid = true
				}
			}
			if i == sc.innerAt && sc.inner != nil {
				var ok bool
				if i, ok = sc.scanInner(i); ok {
					break
				}
			}
			if l := len(sc.stack) + 1; skimDeep && !sc.invalid && l > 2 && l > sc.desc && (l > 3 || sc.nest == nil || !sc.nest.on) {
				// Nothing is recorded of its children: it is validated at
				// once (see skim).
				sc.skims++
				end, stack, deepest, ok := skim(d, i, sc.stack)
				sc.stack = stack
				sc.invalid = !ok
				if ok {
					sc.depth(sc.member(), deepest)
					i = end
					break
				}
			}
			sc.stack = append(sc.stack, c)
			sc.depth(sc.member(), len(sc.stack))
			i = SkipSpace(d, i+1)
			if i < len(d) && d[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				sc.stack = sc.stack[:len(sc.stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, err = sc.key(i); err != nil {
					return i, err
				}
			}
			continue
		default:
			i, err = scanScalarTo(d, i, sc.pend)
			sc.pend = nil
		}
		if err != nil {
			return i, err
		}
		if i, err = sc.next(i); err != nil || len(sc.stack) == 0 {
			return i, err
		}
	}
}

// itemsHere returns the items that a value starting at the scan's depth
// is one of, when it is an item of the top-level array, or of the array
// member a nesting records (with that member's Shape); nil otherwise.
func (sc *scanner) itemsHere() (*itemsScan, *Shape) {
	switch l := len(sc.stack); {
	case l == 1 && sc.nest == nil:
		return sc.items, nil
	case l == 2 && sc.nest != nil && sc.nest.on:
		return sc.nest.cur.items, sc.member()
	}
	return nil, nil
}

// member returns the Shape of the member of a top-level object that a
// nesting is recording, and nil when there is none.
func (sc *scanner) member() *Shape {
	if sc.nest != nil && sc.nest.on {
		return &sc.nest.cur.sh
	}
	return nil
}

// objectItem scans the object at d[i], an item of a top-level array whose
// items sc records, or of the array member of a top-level object whose
// Shape member is (see nesting). It records what run records of it (its
// fields' keys in items, the Summary of each scalar value, the depth),
// skims the containers in it, and returns the index after it. It is run's
// loop for the common item, with its state in local variables rather than
// in sc and its steps in one function rather than in run, next and key:
// those cost a large array of small objects about as much again as
// validating it. On invalid input it returns ok false, with sc.stack as it
// found it: what it recorded is then wrong, and run, scanning the item
// again, reports the error (FuzzSkim holds the two to the same Shape and
// error).
func (sc *scanner) objectItem(i int, items *itemsScan, member *Shape) (end int, ok bool) {
	d := sc.d
	base := len(sc.stack)
	sc.stack = append(sc.stack, '{')
	sc.depth(member, base+1)
	if i = SkipSpace(d, i+1); i < len(d) && d[i] == '}' {
		sc.stack = sc.stack[:base]
		return i + 1, true
	}
fields:
	for {
		// A key at i (white space passed), and its value: fieldAt, with
		// its common case (sameKey) inline.
		j, ok := items.sameKey(d, i)
		var err error
		if !ok {
			if j, _, err = items.newField(d, i); err != nil || j >= len(d) {
				break
			}
		}
		switch d[j] {
		case '{', '[':
			sc.skims++
			var deepest int
			if i, sc.stack, deepest, ok = skim(d, j, sc.stack); !ok {
				break fields
			}
			sc.depth(member, deepest)
		default:
			if i, err = scanScalarTo(d, j, items.cur); err != nil {
				break fields
			}
		}
		if i = SkipSpace(d, i); i >= len(d) {
			break
		}
		if d[i] == '}' {
			sc.stack = sc.stack[:base]
			return i + 1, true
		}
		if d[i] != ',' {
			break
		}
		i++
	}
	sc.stack = sc.stack[:base]
	return i, false
}

// depth records that the stack went as deep as l: in the Shape, and in
// member's, one level less deep, when it is not nil.
func (sc *scanner) depth(member *Shape, l int) {
	sc.sh.Depth = max(sc.sh.Depth, l)
	if member != nil {
		member.Depth = max(member.Depth, l-1)
	}
}

// skimDeep says whether run passes a container whose children it records
// nothing of with skim, and an object item of an array with objectItem:
// tests turn it off to compare.
var skimDeep = true

// skim validates the value at d[i] with nothing recorded of it, and
// returns the index after it, the stack (as given, its capacity perhaps
// grown) and the deepest the stack went in the value. It pushes and pops
// the value's containers on stack as run does, but passes every value and
// key with nothing between them but the grammar. On invalid input it
// returns ok false, and the caller scans the value again with run: the
// error, and the offset it gives, are run's.
func skim(d []byte, i int, stack []byte) (end int, _ []byte, deepest int, ok bool) {
	base := len(stack)
	deepest = base
	key := false // a key comes first, at i
	var err error
	for {
		if key {
			if j := quickString(d, i); j > 0 && j < len(d) && d[j] == ':' {
				i = j + 1 // d[i] is the quote: skim saw it
			} else if i, _, err = scanKey(d, i); err != nil {
				break
			}
			if i = SkipSpace(d, i); i >= len(d) {
				break
			}
			key = false
		}
		// A value starts at i.
		switch c := d[i]; c {
		case '{', '[':
			stack = append(stack, c)
			deepest = max(deepest, len(stack))
			i = SkipSpace(d, i+1)
			if i < len(d) && d[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if i >= len(d) || c == '{' && d[i] != '"' {
				return i, stack[:base], 0, false
			}
			key = c == '{'
			continue
		case '"':
			if j := quickString(d, i); j > 0 {
				i = j
			} else {
				i, err = scanString(d, i)
			}
		default:
			if j := quickScalar(d, i); j > 0 {
				i = j
			} else {
				i, err = scanAnyScalar(d, i)
			}
		}
		if err != nil {
			break
		}
		// After a value: close what ends here, then find the next value.
		for len(stack) > base {
			if i = SkipSpace(d, i); i >= len(d) {
				return i, stack[:base], 0, false
			}
			open := stack[len(stack)-1]
			if d[i] == open+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if d[i] != ',' {
				return i, stack[:base], 0, false
			}
			if i = SkipSpace(d, i+1); i >= len(d) || open == '{' && d[i] != '"' {
				return i, stack[:base], 0, false
			}
			key = open == '{'
			break
		}
		if len(stack) == base {
			return i, stack, deepest, true
		}
	}
	return i, stack[:base], 0, false
}

// Tally validates d as [Valid] does and returns the span of its value
// and, for a top-level array or object, the number of its children and,
// of an object, its largest member (the first of equal ones), zero
// otherwise: what [Scan] with no Limits records in Count and Largest[0],
// without its fixed cost (a small document is tallied in about the time
// Scan takes to set up). An error is Scan's.
func Tally(d []byte) (top Span, n int, largest Child, err error) {
	var t tallied
	if top, err = t.run(d); err != nil {
		return top, 0, Child{}, err
	}
	return top, t.n, t.largest, nil
}

// Members validates d as [Valid] does and returns the number of children
// of its top-level array or object (0 for a scalar), records the first
// len(head) of them in head, and returns the deepest its arrays and
// objects nest: what [Scan] with Limits{Head: len(head)} records in
// Count, Head and Depth, without its fixed cost or any allocation while
// d nests at most 32 deep (the envelope of every message the proxy reads
// below its outline's size is read so). An error is Scan's.
func Members(d []byte, head []Child) (n, depth int, err error) {
	t := tallied{head: head}
	if _, err = t.run(d); err != nil {
		return 0, 0, err
	}
	return t.n, t.depth, nil
}

// tallied is what tally records of a top-level array or object: the
// number of its children, the first len(head) of them, the largest
// member of an object, and the deepest nesting.
type tallied struct {
	n       int
	head    []Child
	largest Child
	depth   int
}

// run tallies d, whose value is at top, as Tally and Members do.
func (t *tallied) run(d []byte) (top Span, err error) {
	var buf [32]byte // the stack of open containers, on the stack while shallow
	if i := SkipSpace(d, 0); i < len(d) && (d[i] == '{' || d[i] == '[') {
		if end, ok := t.tally(d, i, buf[:0]); ok && SkipSpace(d, end) == len(d) {
			return Span{i, end}, nil
		}
	}
	// A scalar, or the error of invalid input.
	top, sh, err := Scan(d, Limits{Head: len(t.head)})
	t.n, t.largest, t.depth = sh.Count, sh.Largest[0], sh.Depth
	copy(t.head, sh.Head)
	return top, err
}

// tally is Tally of the array or object at d[i]: it returns the index
// after it, and ok false when it is not valid.
func (t *tallied) tally(d []byte, i int, stack []byte) (end int, ok bool) {
	open := d[i]
	t.depth = 1
	i = SkipSpace(d, i+1)
	if i < len(d) && d[i] == open+2 {
		return i + 1, true
	}
	stack = append(stack, open)
	for {
		var key Span
		var err error
		if open == '{' {
			if i, key, err = scanKey(d, i); err != nil {
				return i, false
			}
			i = SkipSpace(d, i)
		}
		if i >= len(d) {
			return i, false
		}
		start, deepest := i, 0
		if i, stack, deepest, ok = skim(d, i, stack); !ok {
			return i, false
		}
		if t.n < len(t.head) {
			t.head[t.n] = Child{Key: key, Val: Span{start, i}}
		}
		t.n++
		t.depth = max(t.depth, deepest)
		if open == '{' && i-start > t.largest.Val.End-t.largest.Val.Start {
			t.largest = Child{Key: key, Val: Span{start, i}}
		}
		if i = SkipSpace(d, i); i >= len(d) {
			return i, false
		}
		if d[i] == open+2 {
			return i + 1, true
		}
		if d[i] != ',' {
			return i, false
		}
		i = SkipSpace(d, i+1)
	}
}

// scanner is the state of scanFrom. Its level records the top-level
// value's children.
type scanner struct {
	d     []byte
	stack []byte // open containers, '[' or '{'
	level
	stream  bool // the input is a stream of values, the top-level "array" of ScanStream
	stopped bool // run stopped at its stop offset
	// invalid is set when skim found the document invalid: run scans on
	// to the error itself, and skims nothing more, so that each container
	// it enters is not skimmed to the error again (a quadratic cost in
	// the depth). skims counts the containers skimmed, for tests.
	invalid bool
	skims   int
	nest    *nesting // with Limits.Nested, for a top-level object
	// pend is the Summary that the value starting next adds to when it is
	// a scalar: of the item of a top-level array (or of the array member
	// a nesting records), or of the field of such an item; nil when there
	// is none, and once a container starts.
	pend *Summary
	// stopDepth is the depth of the stack at which run may stop: 1 for an
	// item of a top-level array, 2 for one of an array member of a
	// top-level object (see scanSplitObject).
	stopDepth int
	// With spanning, the scan starts inside an array member of a
	// top-level object (the second half of scanSplitObject): when that
	// member ends, at spanEnd, the nesting's record of it moves to span.
	spanning bool
	spanEnd  int
	span     *level // set when the member ended: a scanner that never spans does not carry it
	// The outline: values at depth 1 to desc are recorded (desc is 0
	// when there is no outline); open[l] is the part of the value at
	// depth l while it is open and recorded, and -1 otherwise; outKey[l]
	// is the key of the member at depth l.
	descend Descend
	desc    int
	outMax  int
	open    [MaxOutlineDepth + 1]int
	outKey  [MaxOutlineDepth + 1]Span
	// With Limits.Inner: the container at innerAt (-1 for none yet) is
	// scanned with innerLim by a scanner of its own (see scanInner).
	// embedded says that sc is that scanner: its value ends before the
	// document does.
	inner    Descend
	innerLim *Limits
	innerAt  int
	embedded bool
}

// newLevel returns the level that records the children of a top-level
// value as lim asks.
func newLevel(lim Limits) level {
	lv := level{head: lim.Head}
	lv.sh.ntail = lim.Tail
	if lim.Head > 0 {
		lv.sh.Head = make([]Child, 0, min(lim.Head, 32)) // one allocation, not a growing one
	}
	return lv
}

// A level records the Shape of the children of one container as the scan
// goes: the top-level value's, or (see nesting) a member's of it.
type level struct {
	sh       Shape
	head     int
	curStart int         // start of the current child
	curKey   Span        // key of the current child, in an object
	items    *itemsScan  // for an array
	marks    bool        // record Marks of an array's items
	markNext int         // the offset from which the next item is marked
	keys     *keyIndexer // records KeyBlocks of an object
	reserve  int         // for a member (see nesting), the room for marks the rest of the document may need
}

// begin records that a child starts at i, and returns the Summary its
// value adds to, for an array's item that may be a scalar, or nil.
func (lv *level) begin(d []byte, i int) (sum *Summary) {
	lv.curStart = i
	if lv.items != nil {
		sum = lv.items.item(d[i])
	}
	if lv.marks && i >= lv.markNext {
		if n := len(lv.sh.Marks); n == cap(lv.sh.Marks) && n >= reserveAfter && lv.reserve > n {
			lv.sh.Marks = append(make(Marks, 0, lv.reserve), lv.sh.Marks...)
		}
		lv.sh.Marks = append(lv.sh.Marks, Mark{lv.sh.Count, i})
		lv.markNext = i + MarkGap
	}
	return sum
}

// reserveAfter is how many marks or key blocks a member of a top-level
// object (see nesting) grows to, appending, before its slice is made
// large enough for the rest of the document at once: small members take
// little, and a large one is not copied as it grows.
const reserveAfter = 8

// key records that the key k of d names the next child.
func (lv *level) key(d []byte, k Span) {
	lv.curKey = k
	if lv.keys != nil {
		lv.keys.add(d, k)
	}
}

// end records that the current child ended at i.
func (lv *level) end(i int) {
	lv.sh.add(Child{Key: lv.curKey, Val: Span{lv.curStart, i}}, lv.head, lv.items == nil)
}

// nestedMembers is how many members of a top-level object that are arrays
// or objects Scan records the Shape of, with Limits.Nested.
const nestedMembers = 16

// A nesting records, with Limits.Nested, the Shape of each member of a
// top-level object that is an array or object (up to nestedMembers of
// them) and keeps the largest: its children are values at depth 2, their
// keys and fields at 2 and 3. Its slices grow as the members need them
// (see reserveAfter): a member is not known to be large until it ends, and
// most are small. They are reused from member to member, and the best's
// are cut to their length when the scan ends.
type nesting struct {
	lim       Limits
	on        bool  // a member is being recorded, in cur
	cur, best level // best holds the largest member so far, from bestVal
	bestVal   Span
	bestAt    int // the number of members recorded when best was
	members   int // recorded so far
	// What cur does not use for the member it records: an array's items
	// and an object's key indexer, kept for the next member of that kind.
	spareItems *itemsScan
	spareKeys  *keyIndexer
}

// member notes that a member starts at i: it is recorded when it is an
// array or object and there is room.
func (n *nesting) member(d []byte, i int) {
	c := d[i]
	n.on = (c == '[' || c == '{') && n.members < nestedMembers
	if !n.on {
		return
	}
	n.members++
	n.reset(d, i, c)
}

// reset sets cur up to record a member that starts at i with c, '[' or
// '{'.
func (n *nesting) reset(d []byte, i int, c byte) {
	lv := &n.cur
	// An object's Marks stay empty: the slice is only kept for reuse.
	sh := Shape{Head: lv.sh.Head[:0], ntail: n.lim.Tail, Marks: lv.sh.Marks[:0]}
	items, keys := lv.items, lv.keys
	*lv = level{sh: sh, head: n.lim.Head}
	if lv.sh.Head == nil && n.lim.Head > 0 {
		lv.sh.Head = make([]Child, 0, min(n.lim.Head, 32))
	}
	if c == '[' {
		if keys != nil {
			n.spareKeys = keys
		}
		if items == nil {
			items, n.spareItems = n.spareItems, nil
		}
		if items == nil {
			items = &itemsScan{}
		}
		*items = itemsScan{max: n.lim.Keys, tmpl: items.tmpl[:0], it: Items{Keys: items.it.Keys[:0]}}
		lv.items = items
		lv.marks, lv.markNext = n.lim.Index, i+MarkGap // as index does
		lv.reserve = (len(d)-i)/MarkGap + 1
		return
	}
	if items != nil {
		n.spareItems = items
	}
	if !n.lim.Index {
		return
	}
	if keys == nil {
		keys, n.spareKeys = n.spareKeys, nil
	}
	if keys == nil {
		keys = &keyIndexer{}
	}
	keys.blocks, keys.reserve = keys.blocks[:0], (len(d)-i)/KeyBlockGap+1
	lv.keys = keys
}

// done notes that the member being recorded ended at end: it becomes the
// best when it is larger than the best so far.
func (n *nesting) done(start, end int) {
	n.on = false
	if end-start <= n.bestVal.End-n.bestVal.Start {
		return
	}
	n.cur, n.best = n.best, n.cur
	n.bestVal, n.bestAt = Span{start, end}, n.members
	b := &n.best
	if b.items != nil {
		b.sh.Items = b.items.items()
	}
	if b.keys != nil {
		b.sh.Blocks = b.keys.blocks
	}
}

// shape returns the best member's Shape and span, or nil, its marks and
// key blocks in slices of their length.
func (n *nesting) shape() (*Shape, Span) {
	if n.bestVal.End == 0 {
		return nil, Span{}
	}
	cutToLength(&n.best.sh)
	return &n.best.sh, n.bestVal
}

// cutToLength copies the marks and key blocks of sh into slices of their
// length, when they have room to spare: those of a nested member were
// made with room for the rest of the document.
func cutToLength(sh *Shape) {
	if cap(sh.Marks) > len(sh.Marks) {
		sh.Marks = append(Marks(nil), sh.Marks...)
	}
	if cap(sh.Blocks) > len(sh.Blocks) {
		sh.Blocks = append(KeyBlocks(nil), sh.Blocks...)
	}
}

// record adds the value that starts at i to the outline, and descends
// into it when it is a container Descend chooses. Past outMax parts the
// outline is dropped.
func (sc *scanner) record(i int) {
	l := len(sc.stack)
	if len(sc.sh.Outline) == sc.outMax {
		sc.sh.Outline, sc.desc = nil, 0
		return
	}
	var key Span
	var k []byte // nil for an array item, as EachChild has it
	if sc.stack[l-1] == '{' {
		key = sc.outKey[l]
		k = key.Of(sc.d)
	}
	sc.open[l] = len(sc.sh.Outline)
	sc.sh.Outline = append(sc.sh.Outline, Part{Depth: l, Key: key, Val: Span{i, -1}})
	c := sc.d[i]
	if (c == '{' || c == '[') && l < MaxOutlineDepth && sc.descend != nil && sc.descend(l, k) {
		sc.desc = l + 1
	} else if (c == '{' || c == '[') && l >= 2 && sc.inner != nil && sc.innerAt < 0 && sc.sh.Inner == nil && sc.inner(l, k) {
		sc.innerAt = i
	}
}

// scanInner scans the container at i that Limits.Inner named, with a
// scanner of its own, and returns the index after it; false when it is
// not valid, and then run goes on into it, to its error.
func (sc *scanner) scanInner(i int) (int, bool) {
	sc.innerAt = -1
	lim := *sc.innerLim
	lim.Outline, lim.Descend, lim.Inner, lim.InnerLimits = 0, nil, nil, nil
	lim.Tail = min(max(lim.Tail, 0), MaxTail)
	var sub scanner
	sub.init(sc.d, i, false, lim)
	sub.embedded = true
	end, err := sub.run(i, -1)
	if err != nil {
		sc.invalid = true // not skimmed to the error again
		return i, false
	}
	sh := new(Shape)
	sub.shapeTo(sh, nil)
	sc.sh.Inner, sc.sh.InnerVal = sh, Span{i, end}
	sc.sh.Depth = max(sc.sh.Depth, len(sc.stack)+sh.Depth)
	return end, true
}

// endPart ends the part of the value at depth l, which ended at i, if it
// has one, and stops descending past it.
func (sc *scanner) endPart(l, i int) {
	if l > MaxOutlineDepth || sc.open[l] < 0 {
		return
	}
	sc.sh.Outline[sc.open[l]].Val.End = i
	sc.open[l] = -1
	sc.desc = min(sc.desc, l)
}

// key scans an object key at i and its colon, remembering it when it
// names a depth-1 field.
func (sc *scanner) key(i int) (int, error) {
	if l := len(sc.stack); l > 2 && l > sc.desc && sc.nest == nil {
		// Nothing is recorded of a key this deep: it is only scanned.
		i, _, err := scanKey(sc.d, i)
		return i, err
	}
	// The level whose children are at this depth, if any, and the items
	// (of an array) whose fields are.
	var lv *level
	var items *itemsScan
	switch l := len(sc.stack); {
	case l == 1:
		lv = &sc.level
	case l == 2 && sc.items != nil:
		items = sc.items
	case sc.nest == nil || !sc.nest.on:
	case l == 2:
		lv = &sc.nest.cur
	case l == 3:
		items = sc.nest.cur.items
	}
	if items != nil {
		j, k, err := items.fieldAt(sc.d, i)
		if l := len(sc.stack); l <= sc.desc && k != (Span{}) {
			sc.outKey[l] = k
		}
		sc.pend = items.cur
		return j, err
	}
	i, k, err := scanKey(sc.d, i)
	if l := len(sc.stack); l <= sc.desc {
		sc.outKey[l] = k
	}
	if err == nil && lv != nil {
		lv.key(sc.d, k)
	}
	return i, err
}

// next moves past the end of a value at i: it closes the containers that
// end there, recording each depth-1 child that ends, and returns the start
// of the next value, or, at the end of the document, the end of the value
// with an empty stack.
func (sc *scanner) next(i int) (int, error) {
	d := sc.d
	for {
		if sc.desc != 0 {
			sc.endPart(len(sc.stack), i)
		}
		switch len(sc.stack) {
		case 0:
			if sc.embedded {
				return i, nil // the document goes on: its scanner reads the rest
			}
			if j := SkipSpace(d, i); j != len(d) {
				return i, fmt.Errorf("%w: %w at byte %d", ErrSyntax, errAfterValue, j)
			}
			return i, nil
		case 1:
			if sc.spanning {
				// The member this scan started in ended: its start and key
				// are the first half's.
				sc.spanning, sc.spanEnd = false, i
				sc.span = new(level)
				*sc.span, sc.nest.cur, sc.nest.on = sc.nest.cur, level{}, false
				break
			}
			sc.level.end(i)
			if sc.nest != nil && sc.nest.on {
				sc.nest.done(sc.curStart, i)
			}
			if sc.stream {
				// Values of a stream are separated by white space, or
				// nothing, and end with the input.
				if i = SkipSpace(d, i); i == len(d) {
					sc.stack = sc.stack[:0]
				}
				return i, nil
			}
		case 2:
			if sc.nest != nil && sc.nest.on {
				sc.nest.cur.end(i)
			}
		}
		i = SkipSpace(d, i)
		if i >= len(d) {
			return i, syntaxErr(d, i, "unexpected end of input")
		}
		open := sc.stack[len(sc.stack)-1]
		if d[i] == open+2 {
			sc.stack = sc.stack[:len(sc.stack)-1]
			i++
			continue
		}
		if d[i] != ',' {
			return i, syntaxErr(d, i, fmt.Sprintf("want ',' or %q", open+2))
		}
		if open == '{' {
			return sc.key(i + 1)
		}
		return i + 1, nil
	}
}

// scanKey scans `ws string ws ':'` and returns the index after the colon and
// the span of the quoted key.
func scanKey(d []byte, i int) (int, Span, error) {
	i = SkipSpace(d, i)
	if i < len(d) && d[i] == '"' {
		if j := quickString(d, i); j > 0 && j < len(d) && d[j] == ':' {
			return j + 1, Span{i, j}, nil // a short key and its colon, the common case
		}
	}
	if i >= len(d) || d[i] != '"' {
		return i, Span{}, syntaxErr(d, i, "want an object key")
	}
	start := i
	i, err := scanString(d, i)
	if err != nil {
		return i, Span{}, err
	}
	k := Span{start, i}
	i = SkipSpace(d, i)
	if i >= len(d) || d[i] != ':' {
		return i, k, syntaxErr(d, i, "want ':' after an object key")
	}
	return i + 1, k, nil
}

// quickString returns the index after the string at the quote d[i] when
// it holds at most fifteen bytes, each ASCII but a control character, the
// quote and the backslash; otherwise it returns 0, and scanString tells.
// Keys and short values (ids, names, flags) so cost a short loop the
// caller inlines, whose branches predict well, not a call: a scan of
// small values is bound by the latency from one value's end to the next.
func quickString(d []byte, i int) int {
	for j, end := i+1, min(len(d), i+17); j < end; j++ {
		if c := d[j]; c == '"' {
			return j + 1
		} else if c < 0x20 || c == '\\' || c >= 0x80 {
			return 0
		}
	}
	return 0
}

// quickScalar returns the index after the scalar at d[i] when it is true,
// false, null or an integer with no sign and no leading zero, followed by
// a byte of d that ends it; otherwise it returns 0, and scanScalar tells.
// The common scalars of a tool's output (counts, ids, flags) so cost one
// short call rather than a switch, scanNumber's general path (which can
// compute the value too) and two calls.
func quickScalar(d []byte, i int) int {
	switch c := d[i]; c {
	case 't':
		if len(d)-i >= 4 && string(d[i:i+4]) == "true" {
			return i + 4
		}
	case 'f':
		if len(d)-i >= 5 && string(d[i:i+5]) == "false" {
			return i + 5
		}
	case 'n':
		if len(d)-i >= 4 && string(d[i:i+4]) == "null" {
			return i + 4
		}
	default:
		if c-'1' > 8 {
			return 0
		}
		for j := i + 1; j < len(d); j++ {
			if c := d[j]; c-'0' > 9 {
				if c == '.' || c|0x20 == 'e' {
					return 0
				}
				return j
			}
		}
	}
	return 0
}

// scanString validates the string starting at the quote d[i] and returns the
// index after its closing quote. It looks at eight bytes at a time up to the
// first byte that needs a closer look, so a short plain string (a key, a
// name) costs one or two loads. Where escapes are dense (denseEscapes in
// blockWait bytes, past the first blockWait bytes of the string), it looks
// at the string a block of 64 bytes at a time (scanBlocks), and takes a
// block that needs a closer look here, a word at a time. Where the machine
// has the kernel (strscan.go), a string that runs on past kernelWait bytes
// is the kernel's instead, to its end or to the block that holds an error,
// which this loop then reports.
func scanString(d []byte, i int) (int, error) {
	i++
	// Every denseEscapes escapes, the loop checks how far it went since
	// mark (the last check); blocks are not tried before mark.
	mark, next := i+blockWait, denseEscapes
	// The loop hands the string to the kernel once it reaches lim; blocks
	// (scanBlocks) are then not tried.
	lim := len(d)
	if useStringBlocks && len(d)-i >= kernelWait+blockLen {
		lim, mark = i+kernelWait, math.MaxInt
	}
	for {
		for {
			if i+8 > lim {
				if lim < len(d) {
					lim = len(d)
					end, j := kernelString(d, i)
					if end > 0 {
						return end, nil
					}
					i = j
					continue
				}
				// Fewer than eight bytes left: one at a time.
				for i < len(d) && d[i] < utf8.RuneSelf && escLen[d[i]] == 1 {
					i++
				}
				if i >= len(d) {
					return i, syntaxErr(d, i, "unterminated string")
				}
				break
			}
			m := specialBytes(binary.LittleEndian.Uint64(d[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
			// An escape of two bytes (JSON text in a string has an escaped
			// quote every few bytes) is passed here, without leaving the
			// loop; anything else is for the switch.
			if i+1 < len(d) && d[i] == '\\' && shortEscapes[d[i+1]] {
				i += 2
				// Every denseEscapes escapes: were they dense?
				if next--; next > 0 {
					continue
				}
				next = denseEscapes
				if k := i - mark; k < 0 || k > blockWait {
					mark = max(mark, i)
					continue
				}
				end, j := scanBlocks(d, i)
				if end > 0 {
					return end, nil
				}
				// A block at j needs this loop (a \u escape across its
				// end, a control character), or escapes got sparse: this
				// loop takes the next blockWait bytes, and more when the
				// first block needed it.
				mark = j + blockWait
				if j == i {
					mark = j + blockMiss
				}
				i = j
				continue
			}
			break
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(d) {
				return i, syntaxErr(d, i, "unterminated string")
			}
			switch {
			case shortEscapes[d[i+1]]:
				i += 2
			case d[i+1] == 'u':
				if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
					return i, syntaxErr(d, i, `bad \u escape`)
				}
				i += 6
			default:
				return i, syntaxErr(d, i, "bad escape")
			}
		case c < 0x20:
			return i, syntaxErr(d, i, "control character in string")
		default:
			r, n := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && n <= 1 {
				return i, syntaxErr(d, i, "invalid UTF-8 in string")
			}
			i += n
		}
	}
}

// specialBytes returns a mask whose lowest set bit is the high bit of the
// first byte of w (in memory order) that is '"', '\\', a control character
// or not ASCII, and 0 when there is none. Bits above the lowest may be
// spurious (borrows of the byte-wise subtractions), so only the lowest is
// used.
func specialBytes(w uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	return (w | (w - ones*0x20) | (quote-ones)&^quote | (slash-ones)&^slash) & highs
}

// shortEscapes marks the bytes that make an escape of two bytes after a
// backslash: every escape but \u.
var shortEscapes = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// scanScalarTo validates the string, number or literal at d[i], adds it
// to sum when sum is not nil, and returns the index after it.
func scanScalarTo(d []byte, i int, sum *Summary) (int, error) {
	if d[i] == '"' {
		end, err := scanString(d, i)
		if sum != nil && err == nil {
			sum.addString(d, Span{i, end})
		}
		return end, err
	}
	if sum == nil {
		return scanScalar(d, i)
	}
	return sum.scan(d, i)
}

// scanScalar validates a number or literal at d[i] and returns the index after it.
func scanScalar(d []byte, i int) (int, error) {
	if j := quickScalar(d, i); j > 0 {
		return j, nil
	}
	return scanAnyScalar(d, i)
}

// scanAnyScalar is scanScalar without quickScalar's short cut.
func scanAnyScalar(d []byte, i int) (int, error) {
	switch d[i] {
	case 't':
		return scanLiteral(d, i, "true")
	case 'f':
		return scanLiteral(d, i, "false")
	case 'n':
		return scanLiteral(d, i, "null")
	}
	i, _, err := scanNumber(d, i, false)
	return i, err
}

// scanNumber validates a number at d[i] and returns the index after it,
// and, with value, its value (see number).
func scanNumber(d []byte, i int, value bool) (int, float64, error) {
	start := i
	if d[i] == '-' {
		i++
	}
	var mant uint64 // of the digits, when value
	from := i
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9' && !value:
		i = SkipDigits(d, i+1)
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		mant, i = appendDigits(mant, d, i)
	default:
		return i, 0, syntaxErr(d, start, "want a value")
	}
	digits, frac := i-from, 0
	if i < len(d) && d[i] == '.' {
		var j int
		if value {
			mant, j = appendDigits(mant, d, i+1)
		} else {
			j = SkipDigits(d, i+1)
		}
		if j == i+1 {
			return j, 0, syntaxErr(d, j, "want digits after '.'")
		}
		frac = j - i - 1
		digits += frac
		i = j
	}
	exp := false
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		exp = true
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := SkipDigits(d, i)
		if j == i {
			return j, 0, syntaxErr(d, j, "want digits in exponent")
		}
		i = j
	}
	if !value {
		return i, 0, nil
	}
	return i, number(d[start:i], mant, digits, frac, exp), nil
}

// appendDigits returns mant followed by the decimal digits of d from i
// (wrapping around past 19 of them), and the index after them.
func appendDigits(mant uint64, d []byte, i int) (uint64, int) {
	for ; i < len(d) && '0' <= d[i] && d[i] <= '9'; i++ {
		mant = mant*10 + uint64(d[i]-'0')
	}
	return mant, i
}

// SkipDigits returns the index of the first byte at or after i that is not
// a decimal digit, or len(d).
func SkipDigits(d []byte, i int) int {
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(d []byte, i int, lit string) (int, error) {
	if len(d)-i < len(lit) {
		return i, syntaxErr(d, i, "want a value")
	}
	for k := 1; k < len(lit); k++ { // d[i] is lit[0]: the caller switched on it
		if d[i+k] != lit[k] {
			return i, syntaxErr(d, i, "want a value")
		}
	}
	return i + len(lit), nil
}

// syntaxErr returns the error for invalid JSON at byte i of d.
func syntaxErr(d []byte, i int, msg string) error {
	if i >= len(d) {
		return fmt.Errorf("%w: %s at end of input (byte %d)", ErrSyntax, msg, i)
	}
	return fmt.Errorf("%w: %s at byte %d", ErrSyntax, msg, i)
}
