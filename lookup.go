package values

import (
	"errors"
	"fmt"
	"math"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file finds the value or part a reference names.

// Errors of finding what a reference names, wrapped with the reference and
// details a model can act on.
var (
	// ErrUnknownHandle reports a handle that names no stored value.
	ErrUnknownHandle = errors.New("not a stored value")
	// ErrNoPath reports a path that does not exist in the referenced value.
	ErrNoPath = errors.New("no such path")
)

// errScanBudget is returned by lookupPath when a lookup would scan more
// than it may.
var errScanBudget = errors.New("values: scan budget exceeded")

// lookupPath finds what r names. whole is the stored value; part is nil
// when r has no path, and otherwise the JSON of the part of whole the path
// names (a subslice of the stored bytes, or of its index, which must not
// be modified). Its errors wrap [ErrUnknownHandle], [ErrNoPath] or
// [ErrUnavailable].
//
// Within one call of Resolve it starts from the longest prefix of r that c
// holds (c may be nil) and adds to c the values it reads back, the stored
// value itself when large, and the containers it reaches by long scans,
// with what it learns of them (see builtIndex).
//
// It reports the bytes it scanned, the work the budget is charged with:
//   - nothing for a child that the index Put made answers (see
//     indexedChild), nor for an index out of range of an array whose
//     length is known;
//   - for an item of an array Put indexed (the stored value, or the part
//     of it that dominates its preview, or the JSON in such a string), the
//     bytes from the last mark at or before the item (see jsontext.Marks)
//     to the start of the item it descends into, or the end of the item it
//     returns: less than jsontext.MarkGap bytes plus the item;
//   - for a key of an object Put indexed, jsontext.KeyBlockFilterBytes for
//     each of its key blocks tested, from the last one back, and the bytes
//     of each block scanned, up to the last block that holds the key (the
//     last of duplicate keys wins, as everywhere in the package);
//   - for an object Put did not index, the whole object, once per call
//     when c holds it (later keys are found through its blocks, as above);
//   - for an array Put did not index, the bytes walked from the furthest
//     point a lookup through it reached in c, or from the mark before the
//     item, whichever is nearer, and first to its end when a negative index
//     needs its length (that walk marks its items, so the walk to the item
//     then starts from the mark before it);
//   - the whole value when it was read back from the durable store.
//
// Work that does not grow with the stored value is not charged: comparing
// a segment with the keys Put's index holds of an object of up to 24 keys
// (jsontext.KeyEquals reads no more of a key than about the segment's
// length), and listing the first keys of an object that lacks the key
// (see keyList).
//
// When that would exceed limit it fails with errScanBudget, having scanned
// at most one array item, key block or field past the limit.
func (s *SessionValues) lookupPath(r refPath, c *walkCache, limit int) (whole Value, part []byte, scanned int, err error) {
	w := walker{r: r, limit: limit, count: -1, key: -1}
	e, start, depth, ok := c.longest(r)
	if ok {
		w.whole, w.cur, w.open, w.stream, w.count, w.key, w.depth = e.whole, e.part, e.open, e.stream, e.count, start, depth
		w.ix, w.built = e.ix, e.built
	} else if done, err := s.walkFromValue(&w, c); done || err != nil {
		return w.whole, nil, w.scanned, err
	}
	for i := start; i < len(r.segs); {
		at := i // cur is what r.prefix(at) names
		var seg string
		seg, i = nextSegment(r.segs, i)
		w.depth++
		if w.cur[0] == '"' && !w.stream {
			if w.ix != nil { // a string whose JSON Put indexed
				w.cur, w.open, w.count = w.ix.raw, false, w.ix.n
			} else if err := w.intoString(c, at); err != nil {
				return w.whole, nil, w.scanned, err
			}
		}
		found, known := w.ix.child(seg)
		step, open := 0, false
		if !known {
			var err error
			switch {
			case w.stream || w.cur[0] == '[':
				found, step, open, err = w.item(c, at, seg, i > len(r.segs))
			case w.cur[0] == '{':
				found, step, err = w.field(at, seg)
			default:
				err = fmt.Errorf("values: %s: %w: %s is %s, which has no fields or items", r.quoted(), ErrNoPath, r.prefixShown(at), kindOf(w.cur[0]))
			}
			if err != nil {
				return w.whole, nil, w.scanned + step, err
			}
		} else if found == nil {
			return w.whole, nil, w.scanned, w.missing(at, seg)
		}
		w.enter(c, i, found, open, step)
	}
	part = w.cur
	if w.open {
		part = part[:jsontext.SkipValue(part, 0)]
	}
	return w.whole, part, w.scanned, nil
}

// walker is the state of one lookupPath.
type walker struct {
	r       refPath
	limit   int // bytes it may scan
	scanned int
	depth   int // segments walked

	whole  Value
	cur    []byte // the container reached; runs on past its end when open
	open   bool
	stream bool        // cur is a text holding a stream of JSON values, its items
	count  int         // the length of the array cur, when known, or -1
	key    int         // cur is the cache's entry for r.key(key), when at least 0
	ix     *container  // the index Put made of cur, or of the JSON the string cur holds, if any
	built  *builtIndex // what this call learned of cur, when the cache holds it and Put did not index it
}

// The walker's cache is passed to its methods rather than kept in it, so
// that it stays on the stack of the Resolve call that owns it.

// walkFromValue starts w at the stored value r names, reading it back
// from the durable store when only that holds it, and reports whether
// the lookup ends there (a reference without a path).
func (s *SessionValues) walkFromValue(w *walker, c *walkCache) (done bool, err error) {
	r := w.r
	s.mu.RLock()
	n, i := s.table.len(), r.index-s.base
	if i >= 1 && i <= n {
		w.whole = Value{s.table.at(i - 1).v}
	}
	s.mu.RUnlock()
	if i < 1 || i > n {
		if n == 0 {
			return true, fmt.Errorf("values: %s is %w; no values are stored yet", r.quoted(), ErrUnknownHandle)
		}
		return true, fmt.Errorf("values: %s is %w; stored: %s", r.quoted(), ErrUnknownHandle, storedRange(s.base, n))
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
	ix := x.index() // an array or object, a text holding JSON, or a stream of JSON values
	if ix == nil {
		return true, fmt.Errorf("values: %s: %w: $%s is %s, which has no fields or items", r.quoted(), ErrNoPath, jsontext.ClipString(r.handle), x.kind)
	}
	w.cur, w.count, w.stream, w.ix = ix.raw, ix.n, ix.stream, ix
	if c != nil && w.whole.v != stored.v {
		// Remember the value, so that a value read back is read once.
		c.addKey(r.key(0), walkEntry{whole: w.whole, part: w.cur, count: w.count, stream: w.stream, ix: ix})
		w.key = 0
	}
	return false, nil
}

// enter moves w to found, the child that the segment ending before index
// i of the path names, found by scanning step bytes, and remembers it in
// the cache when that scan was long or found is a large container.
func (w *walker) enter(c *walkCache, i int, found []byte, open bool, step int) {
	w.scanned += step
	ix := w.ix.dominant(found)
	if ix != nil && found[0] != '"' {
		found, open = ix.raw, false // the same bytes, ending where the child does
	}
	w.cur, w.open, w.stream, w.count, w.key, w.ix, w.built = found, open, false, -1, -1, ix, nil
	if ix != nil {
		w.count = ix.n
	}
	long := step >= walkCacheMin || !open && len(found) >= walkCacheMin
	if c != nil && long && w.depth <= walkCacheDepth && (found[0] == '{' || found[0] == '[') {
		w.built = c.addKey(w.r.key(i), walkEntry{whole: w.whole, part: found, open: open, count: w.count, ix: ix})
		w.key = i
	}
}

// intoString moves w from a string, w.cur, into the JSON array or object
// its text holds, the string named by the first at bytes of the path, so
// that a path goes on into it ("$r1.content.0.text.5.name"). The text is
// decoded and validated, and charged to the budget, once per call: the
// cache keeps it. A string that holds no such JSON is an error, as any
// scalar with a path after it is.
func (w *walker) intoString(c *walkCache, at int) error {
	key := w.r.key(at)
	if e, ok := c.lookupJSON(key); ok {
		w.cur, w.open, w.count, w.key, w.built = e.part, false, e.count, -1, e.built
		return nil
	}
	str := w.cur[:jsontext.SkipString(w.cur, 0)]
	if w.scanned+2*len(str) > w.limit {
		return errScanBudget
	}
	w.scanned += 2 * len(str) // decoded, then validated
	text := jsontext.AppendUnquoted(make([]byte, 0, len(str)), str)
	i := jsontext.SkipSpace(text, 0)
	if i == len(text) || text[i] != '{' && text[i] != '[' || jsontext.Valid(text) != nil {
		return fmt.Errorf("values: %s: %w: %s is text, which has no fields or items (it does not hold a JSON array or object)", w.r.quoted(), ErrNoPath, w.r.prefixShown(at))
	}
	text = text[i:jsontext.SkipValue(text, i)]
	w.cur, w.open, w.count, w.key, w.built = text, false, -1, -1, nil
	if c != nil {
		w.built = c.addJSON(key, walkEntry{whole: w.whole, part: text, count: -1})
	}
	return nil
}

// field returns the value of the key seg in the object w.cur (the last of
// duplicate keys), and the bytes scanned: see lookupPath.
func (w *walker) field(at int, seg string) (found []byte, step int, err error) {
	budget := w.limit - w.scanned
	var blocks jsontext.KeyBlocks
	obj := w.cur
	switch b := w.built; {
	case w.ix != nil:
		blocks = w.ix.blocks
	case b != nil && !b.indexed:
		var over bool
		if blocks, b.end, over = jsontext.IndexKeys(obj, budget); over {
			return nil, 0, errScanBudget
		}
		step = b.end
		b.blocks, b.indexed = blocks, true
		obj = obj[:b.end]
	case b != nil:
		blocks, obj = b.blocks, obj[:b.end]
	default:
		return w.scanField(at, seg)
	}
	found, cost, over := blocks.Lookup(obj, seg, budget-step)
	if over {
		return nil, 0, errScanBudget
	}
	step += cost
	if found == nil {
		return nil, step, w.missing(at, seg)
	}
	return found, step, nil
}

// scanField is field for an object without key blocks: it scans the whole
// object, and the last of duplicate keys wins.
func (w *walker) scanField(at int, seg string) (found []byte, step int, err error) {
	d := w.cur
	budget := w.limit - w.scanned
	i := jsontext.SkipSpace(d, 1)
	for d[i] != '}' {
		end := jsontext.SkipString(d, i)
		k := d[i:end]
		i = jsontext.SkipSpace(d, jsontext.SkipSpace(d, end)+1) // the colon
		end = jsontext.SkipValue(d, i)
		if end > budget {
			return nil, 0, errScanBudget
		}
		if jsontext.KeyEquals(k, seg) {
			found = d[i:end] // the last duplicate wins, as in encoding/json
		}
		if i = jsontext.SkipSpace(d, end); d[i] == ',' {
			i = jsontext.SkipSpace(d, i+1)
		}
	}
	if step = i + 1; step > budget {
		return nil, 0, errScanBudget
	}
	if found == nil {
		return nil, step, w.missing(at, seg)
	}
	return found, step, nil
}

// missing returns the error for a segment seg that names nothing in w.cur,
// the container named by the first at bytes of the path.
func (w *walker) missing(at int, seg string) error {
	if w.cur[0] == '{' && !w.stream {
		return fmt.Errorf("values: %s: %w: %s has no key %s%s", w.r.quoted(), ErrNoPath, w.r.prefixShown(at), jsontext.QuoteClipped(seg), w.keyList())
	}
	if _, ok := parseIndex(seg); !ok {
		return fmt.Errorf("values: %s: %w: %s is an array; %s is not an index (0, 1, … or -1 for the last item)", w.r.quoted(), ErrNoPath, w.r.prefixShown(at), jsontext.QuoteClipped(seg))
	}
	return fmt.Errorf("values: %s: %w: index %s is out of range for %s, an array of %d items", w.r.quoted(), ErrNoPath, seg, w.r.prefixShown(at), w.count)
}

// item returns the item of the array w.cur that the index seg names, and
// the bytes scanned (see lookupPath). When last is false the item is to be
// descended into: it is returned open, running on past its end, so that a
// deep path is not scanned once per level.
func (w *walker) item(c *walkCache, at int, seg string, last bool) (found []byte, step int, open bool, err error) {
	idx, ok := parseIndex(seg)
	if !ok {
		return nil, 0, false, w.missing(at, seg)
	}
	b := w.built
	budget := w.limit - w.scanned
	var local builtIndex
	if idx < 0 && w.count < 0 { // count the items, from as far as the walks reached
		if b == nil {
			// Marks for the walk to the item, once this one has counted
			// them: it would otherwise walk the array twice.
			b = &local
		}
		k, from := b.reach()
		_, end, _, n := walkArray(w.cur, k, from, math.MaxInt, budget, false, w.stream, b)
		if end < 0 {
			return nil, 0, false, errScanBudget
		}
		step, w.count = end-from, n
		b.next, b.nextOff = n, end
		if w.key >= 0 {
			ce := c.m[w.r.key(w.key)]
			ce.count = n
			c.m[w.r.key(w.key)] = ce
		}
	}
	if idx < 0 {
		idx += w.count
	}
	if idx < 0 || w.count >= 0 && idx >= w.count {
		return nil, step, false, w.missing(at, seg)
	}
	marks := b.marksOf() // read after the count, which marks what it walks
	if w.ix != nil {
		marks = w.ix.marks
	}
	k, from := 0, 0 // walk from item k at offset from
	if m, ok := marks.Before(idx); ok {
		k, from = m.Item, m.Off
	}
	rec := (*builtIndex)(nil) // marks the items walked past the furthest reach
	if next, nextOff := b.reach(); b != nil && next <= idx && next >= k {
		k, from, rec = next, nextOff, b
	}
	found, end, next, n := walkArray(w.cur, k, from, idx, budget-step, !last, w.stream, rec)
	if end < 0 {
		return nil, 0, false, errScanBudget
	}
	step += end - from
	if rec != nil {
		switch {
		case found == nil: // walked to the end
			rec.next, rec.nextOff = n, end
		case last:
			rec.next, rec.nextOff = idx+1, next
		default: // the item's end is not known: resume at it
			rec.next, rec.nextOff = idx, next
		}
	}
	if found == nil {
		if w.count < 0 {
			w.count = n
		}
		return nil, step, false, w.missing(at, seg)
	}
	return found, step, !last, nil
}

// child returns the child of the container c indexes that seg names, when
// c's index answers for it, with known true: a head or tail item of an
// array, a field of an object small enough to be indexed whole (the last
// of duplicate keys winning), or nil for an index out of range or a key
// such an object lacks. known is false when the child must be looked for;
// c may be nil.
func (c *container) child(seg string) (found []byte, known bool) {
	if c == nil {
		return nil, false
	}
	switch c.kind {
	case KindArray:
		idx, ok := parseIndex(seg)
		if !ok {
			return nil, true
		}
		if idx < 0 {
			idx += c.n
		}
		if idx < 0 || idx >= c.n {
			return nil, true
		}
		i := -1
		switch {
		case c.n == len(c.nodes):
			i = idx
		case idx < arrayHeadItems:
			i = idx
		case idx >= c.n-arrayTailItems:
			i = arrayHeadItems + idx - (c.n - arrayTailItems)
		}
		if i < 0 {
			return nil, false
		}
		return c.nodes[i].val.Of(c.raw), true
	case KindObject:
		if c.n != len(c.nodes) || c.n > objectFieldsMax {
			return nil, false // only some keys are indexed
		}
		for i := range c.nodes {
			if jsontext.KeyEquals(c.nodes[i].key.Of(c.raw), seg) {
				found = c.nodes[i].val.Of(c.raw)
			}
		}
		return found, true
	}
	return nil, false
}

// dominant returns the index of the child of the container c indexes
// whose JSON starts where found does, when that child is c's dominant
// part and Put indexed it (a container, or a string holding one), and
// nil otherwise; c may be nil.
func (c *container) dominant(found []byte) *container {
	if c == nil || c.dom == nil || c.dom.c == nil || c.stream {
		return nil
	}
	if v := c.dom.val; v.End > len(c.raw) || len(found) == 0 || &found[0] != &c.raw[v.Start] {
		return nil
	}
	return c.dom.c
}

// walkArray walks the validated array d from its item k, which starts at
// offset from (0 for the array's start, with k 0), to its item idx (idx ≥
// k), scanning no further than offset from+limit. It returns the item, the
// offset of its end and the offset where the next item starts; or, when
// open, the rest of d from the item's start, that offset as the end, and
// the same as next (the item itself is not scanned); or, when the array
// ends first, nil, the offset of its end and the number of items; or a
// negative end when the walk would go past the limit. With stream, d is a
// stream of JSON values, separated by white space, and they are its items.
// With rec, it marks in rec the items it passes, item idx included, that
// start at least jsontext.MarkGap bytes past rec's last mark.
func walkArray(d []byte, k, from, idx, limit int, open, stream bool, rec *builtIndex) (item []byte, end, next, n int) {
	i := from
	if i == 0 && !stream {
		i = jsontext.SkipSpace(d, 1)
	} else if i == 0 {
		i = jsontext.SkipSpace(d, 0)
	}
	markAt := math.MaxInt
	if rec != nil {
		markAt = jsontext.MarkGap
		if m := rec.marks; len(m) > 0 {
			markAt = m[len(m)-1].Off + jsontext.MarkGap
		}
	}
	for ; i < len(d) && (stream || d[i] != ']'); k++ {
		if i >= markAt {
			rec.marks = append(rec.marks, jsontext.Mark{Item: k, Off: i})
			markAt = i + jsontext.MarkGap
		}
		if k == idx && open {
			if i-from > limit {
				return nil, -1, 0, k
			}
			return d[i:], i, i, k
		}
		e := jsontext.SkipValue(d, i)
		if e-from > limit {
			return nil, -1, 0, k
		}
		j := jsontext.SkipSpace(d, e)
		if j < len(d) && d[j] == ',' && !stream {
			j = jsontext.SkipSpace(d, j+1)
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

// keyList returns "; its keys: a, b, …" for the object w.cur, which has no
// key a lookup asked for, at a cost that does not grow with the object:
// listed from the keys the index Put made of it records, reading none of
// its values; or, for an object this call indexed in blocks, listed once,
// by a walk over its first fields, charged with the scan that indexed it,
// and kept; or, for other objects, by that walk, which reads less than
// the scan of the whole object that the lookup was charged.
func (w *walker) keyList() string {
	if ix := w.ix; ix != nil && ix.kind == KindObject {
		var l keyLister
		for i := range ix.nodes {
			if !l.add(ix.nodes[i].key.Of(ix.raw)) {
				break
			}
		}
		return l.String()
	}
	if b := w.built; b != nil && b.indexed {
		if b.keys == "" {
			b.keys = keyList(w.cur[:b.end])
		}
		return b.keys
	}
	return keyList(w.cur)
}

// keyList returns "; its keys: a, b, …" for the validated object obj.
func keyList(obj []byte) string {
	var l keyLister
	jsontext.EachChild(obj, func(k, _ []byte) bool { return l.add(k) })
	return l.String()
}

// keyLister builds a keyList from keys given in order.
type keyLister struct {
	b []byte
	n int
}

// add appends the key k (a valid JSON string, quotes included), and
// reports whether more are wanted.
func (l *keyLister) add(k []byte) bool {
	if l.n == keyListMax {
		l.b = append(l.b, ", "+jsontext.Ellipsis...)
		return false
	}
	if l.n == 0 {
		l.b = append(l.b, "; its keys: "...)
	} else {
		l.b = append(l.b, ", "...)
	}
	var buf [2*keyBudget + 8]byte
	l.b = appendKey(l.b, shownKey(buf[:0], k))
	l.n++
	return true
}

func (l *keyLister) String() string {
	if l.n == 0 {
		return "; it is empty"
	}
	return string(l.b)
}
