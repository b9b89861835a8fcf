package values

import (
	"bytes"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the preview index: what Put records of a stored array or
// object so that rendering its preview, and finding its head and tail
// items, never rescans it.

// What a preview shows of a container, and so what Put records of it: the
// preview's parts are sized to the preview bound in render.go and clip.go.
const (
	arrayHeadItems  = 3   // items shown from the start of a long array
	arrayTailItems  = 2   // items shown from the end of a long array
	objectFieldsMax = 24  // objects with more keys describe these first fields, and name more keys
	literalBudget   = 120 // strings up to this many bytes are shown literally, never as a part of their own
)

// What Put records of a container.
const (
	scanHead      = 96             // first children: of an object, the keys a preview may name (see objectFieldsMax)
	scanTail      = arrayTailItems // last children
	scanKeys      = 256            // distinct keys of the object items of an array
	nestedKeys    = 8              // keys named of an object one level down
	itemFields    = 8              // fields shown of an object item of an array, when five items are shown
	itemFieldsMax = 64             // fields described of an object item of an array (see wideItem)
	dominantDepth = 4              // containers indexed inside one another as dominant
)

// lazyIndex is the index of a value that Put did not index at once,
// because its transcript shows it whole: it is built on the value's first
// preview or lookup that needs it, by scanning the value again. A copy of
// the value made by clone shares it.
type lazyIndex struct {
	once   sync.Once
	c      *container
	format textFormat
}

// newLazy returns the value of kind, raw, n and lines (as value has them)
// whose index is built on first use; top is as value has it. The value
// is one small allocation, and its lazyIndex another on first use: most
// values shown whole are never previewed or looked into.
func newLazy(kind Kind, raw []byte, n, lines int, top jsontext.Child) *value {
	return &value{kind: kind, onUse: true, raw: raw, n: n, lines: lines, top: top}
}

// lazyIndex returns the lazyIndex of x, a value indexed on first use,
// made on its first call: if two goroutines race to make it, one's is
// kept and both use it.
func (x *value) lazyIndex() *lazyIndex {
	p := (*unsafe.Pointer)(unsafe.Pointer(&x.lazy))
	if l := atomic.LoadPointer(p); l != nil {
		return (*lazyIndex)(l)
	}
	l := new(lazyIndex)
	if atomic.CompareAndSwapPointer(p, nil, unsafe.Pointer(l)) {
		return l
	}
	return (*lazyIndex)(atomic.LoadPointer(p))
}

// clone returns a copy of x, sharing its index.
func (x *value) clone() *value {
	c := x.copied()
	return &c
}

// copied returns a copy of x, sharing its index. It reads x.lazy once
// lazyIndex has set it, when nothing writes it any more.
func (x *value) copied() value {
	if x.onUse {
		x.lazyIndex()
	}
	return *x
}

// index returns the index of x: of an array or object, or of the JSON a
// text holds; nil for other values.
func (x *value) index() *container {
	if x.onUse {
		return x.built().c
	}
	return x.c
}

// formatIndex returns what a text value holds other than JSON (a table or
// a document in a data format), or nil.
func (x *value) formatIndex() textFormat {
	if x.onUse {
		return x.built().format
	}
	return x.format
}

// built returns the lazyIndex of x, a value indexed on first use, built.
func (x *value) built() *lazyIndex {
	l := x.lazyIndex()
	l.once.Do(func() { l.c, l.format = buildIndex(x) })
	return l
}

// buildIndex indexes x, a value that Put validated but did not index.
func buildIndex(x *value) (*container, textFormat) {
	switch x.kind {
	case KindText:
		return indexText(x.raw, x.lines, jsonUntried)
	case KindArray, KindObject:
		_, sh, err := jsontext.Scan(x.raw, scanLimits)
		if err != nil {
			return nil, nil // unreachable: Put validated it
		}
		return newContainer(x.raw, &sh, 0, 0), nil
	}
	return nil, nil
}

// container is the index of a JSON array or object: of a stored value, of
// the dominant part of one, or of the JSON held in a string of one.
type container struct {
	raw     []byte // its JSON, valid
	kind    Kind   // KindArray or KindObject
	n       int    // items or keys
	nodes   []node // an array's head and tail items (all of up to 5); an object's fields (up to 24), or its first 24 fields and the keys of up to 72 more
	last    []node // an object of more than 24 keys: its last keys
	largest []node // an object: its largest fields, largest first
	items   *jsontext.Items
	marks   jsontext.Marks     // an array's: where some of its items start (see offsetsSize)
	blocks  jsontext.KeyBlocks // an object's: its keys in blocks (see offsetsSize)
	dom     *dominant          // the part previewed as a value of its own, if any
	stream  bool               // raw is a stream of JSON values, its items, not an array
}

// dominant is the part of a container that holds most of its bytes and is
// previewed, and indexed, as if it were a value of its own: the largest
// field of an object when it holds at least a third of it, or the only item
// of a one-item array, when that part is an array, an object, or a string
// whose text is a JSON array or object, or a long string (previewed as
// text, with its head and tail).
type dominant struct {
	key  jsontext.Span // its key, for an object field
	val  jsontext.Span // its JSON in the container
	c    *container    // its index: over its own bytes, or over the text of the string; nil for plain text
	text bool          // val is a string whose text c describes
	// The decoded length and lines of a string: of the text that c
	// describes, or of one that does not hold JSON, previewed as text with
	// head and tail, or, when it is base64 of data of a known type, as
	// the size and type of the data.
	n, lines int
	b64      base64Data
}

// base64Data is what a string that holds base64 holds: the size of the
// data and its type; the zero value for a string that holds none.
type base64Data struct {
	size int
	typ  string
}

// node is the index entry of one child of a container.
type node struct {
	key    jsontext.Span   // the key with its quotes, for an object field
	val    jsontext.Span   // the child's JSON
	kind   Kind            // its kind (a JSON string is KindText)
	n      int             // items or keys of a container; decoded bytes of a string
	lines  int             // lines of a string
	keys   []jsontext.Span // an object's first keys; an array's first item's first keys
	fields []node          // an object item of an array: its first fields (up to itemFieldsMax)
	b64    base64Data      // a string of more than literalBudget bytes that is base64 of known data
	more   bool            // keys or fields past those recorded
}

// newContainer indexes the valid JSON container raw, whose shape a scan of
// a buffer starting base bytes before raw recorded. depth is the number of
// containers around it indexed as dominant.
func newContainer(raw []byte, sh *jsontext.Shape, base, depth int) *container {
	c := &container{raw: raw, kind: KindArray, n: sh.Count, items: sh.Items}
	if raw[0] == '{' {
		c.kind = KindObject
	}
	if c.items != nil {
		for i := range c.items.Keys { // spans in raw, as the children's below
			k := &c.items.Keys[i]
			k.Key.Start, k.Key.End = k.Key.Start-base, k.Key.End-base
			k.Values.Rebase(base)
		}
		c.items.Scalars.Rebase(base)
	}
	c.dom = dominantOf(c, sh, base, depth)
	c.marks, c.blocks = offsets(sh, base, c.dom.index() != nil)
	rebase := func(ch jsontext.Child) jsontext.Child {
		ch.Val.Start, ch.Val.End = ch.Val.Start-base, ch.Val.End-base
		if ch.Key != (jsontext.Span{}) {
			ch.Key.Start, ch.Key.End = ch.Key.Start-base, ch.Key.End-base
		}
		return ch
	}
	describeAll := func(chs []jsontext.Child, element bool) []node {
		nodes := make([]node, len(chs))
		for i, ch := range chs {
			ch = rebase(ch)
			if d := c.dom; !element && d != nil && d.c != nil && !d.text && ch.Val == d.val {
				nodes[i] = describeIndexed(raw, ch.Key, ch.Val, d.c) // not scanned again
				continue
			}
			nodes[i] = describe(raw, ch.Key, ch.Val, element)
		}
		return nodes
	}
	switch {
	case c.kind == KindArray && c.n <= arrayHeadItems+arrayTailItems:
		c.nodes = describeAll(sh.Head, true)
	case c.kind == KindArray:
		c.nodes = describeAll(append(sh.Head[:arrayHeadItems:arrayHeadItems], sh.Last(arrayTailItems)...), true)
	case c.n <= objectFieldsMax:
		c.nodes = describeAll(sh.Head, false)
	default:
		c.nodes = describeAll(sh.Head[:objectFieldsMax], false)
		for _, ch := range sh.Head[objectFieldsMax:] {
			c.nodes = append(c.nodes, node{key: rebase(ch).Key})
		}
		for _, ch := range sh.Last(scanTail) {
			c.last = append(c.last, node{key: rebase(ch).Key})
		}
	}
	if c.kind == KindObject {
		c.largest = make([]node, min(c.n, jsontext.Largest))
		for i, ch := range sh.Largest[:len(c.largest)] {
			if nd := nodeAt(c.nodes, rebase(ch).Val); nd != nil { // described above
				c.largest[i] = *nd
				continue
			}
			c.largest[i] = describeAll([]jsontext.Child{ch}, false)[0]
		}
	}
	return c
}

// offsetsSize returns the bytes the marks and key blocks of c take, and
// those of the parts it indexes as dominant. Marks are kept at most one
// per jsontext.MarkGap (512) bytes of an array, 16 bytes each, and key
// blocks one per jsontext.KeyBlockGap (1 KiB) of an object, 40 bytes each:
// each container's take at most 1/25 of its bytes, plus one block. A
// dominant part is indexed again, over its own bytes, but the bytes of its
// container's that it spans hold no mark or block start, and those of a
// container with an indexed dominant part are kept at their length (see
// offsets): so the marks and blocks of a value and of all its dominant
// parts take at most 1/25 of the value's bytes, plus two blocks (80 bytes)
// for each container indexed (at most 1 + dominantDepth).
func (c *container) offsetsSize() int {
	n := 0
	for ; c != nil; c = c.dom.index() {
		n += cap(c.marks)*int(unsafe.Sizeof(jsontext.Mark{})) + cap(c.blocks)*int(unsafe.Sizeof(jsontext.KeyBlock{}))
	}
	return n
}

// index returns the index of the dominant part d; d may be nil.
func (d *dominant) index() *container {
	if d == nil {
		return nil
	}
	return d.c
}

// offsets returns the marks and key blocks of sh, rebased by base. Scan
// made each slice large enough for the whole value. One is copied to its
// length when it is less than half full (a container of large children),
// so that the index keeps little spare capacity, and whenever trim is set
// (a container whose dominant part is indexed too: the room made for the
// bytes of that part would count them twice).
func offsets(sh *jsontext.Shape, base int, trim bool) (jsontext.Marks, jsontext.KeyBlocks) {
	marks, blocks := sh.Marks, sh.Blocks
	switch {
	case len(marks) == 0:
		marks = nil
	case trim && cap(marks) > len(marks) || cap(marks) > 2*len(marks):
		marks = append(make(jsontext.Marks, 0, len(marks)), marks...)
	}
	switch {
	case len(blocks) == 0:
		blocks = nil
	case trim && cap(blocks) > len(blocks) || cap(blocks) > 2*len(blocks):
		blocks = append(make(jsontext.KeyBlocks, 0, len(blocks)), blocks...)
	}
	for i := range marks {
		marks[i].Off -= base
	}
	for i := range blocks {
		blocks[i].Start -= base
	}
	return marks, blocks
}

// nodeAt returns the node of nodes whose value is val, or nil (a node
// that records only a key has no value).
func nodeAt(nodes []node, val jsontext.Span) *node {
	for i := range nodes {
		if nodes[i].val == val {
			return &nodes[i]
		}
	}
	return nil
}

// describeIndexed is describe for a container field that dc indexes
// already: its count is dc's, and its first keys are read from its start.
func describeIndexed(raw []byte, key, val jsontext.Span, dc *container) node {
	nd := node{key: key, val: val, kind: dc.kind, n: dc.n}
	switch {
	case dc.kind == KindObject:
		nd.keys, nd.more = firstKeys(raw, val.Of(raw))
	case dc.n > 0 && len(dc.nodes) > 0 && dc.nodes[0].kind == KindObject:
		nd.keys, nd.more = firstKeys(raw, dc.nodes[0].val.Of(dc.raw))
	}
	return nd
}

// dominantOf finds and indexes the dominant part of c, if any (see
// dominant), unless depth containers around c are dominant already.
func dominantOf(c *container, sh *jsontext.Shape, base, depth int) *dominant {
	if depth >= dominantDepth || c.n == 0 {
		return nil
	}
	var ch jsontext.Child
	switch {
	case c.kind == KindArray && c.n == 1:
		ch = sh.Head[0]
	case c.kind == KindObject:
		ch = sh.Largest[0]
		if 3*(ch.Val.End-ch.Val.Start) < len(c.raw) {
			return nil
		}
	default:
		return nil
	}
	d := &dominant{key: ch.Key, val: ch.Val}
	d.val.Start, d.val.End = d.val.Start-base, d.val.End-base
	if c.kind == KindObject {
		d.key.Start, d.key.End = d.key.Start-base, d.key.End-base
	}
	part := d.val.Of(c.raw)
	switch part[0] {
	case '[', '{':
		if sh.Nested != nil && sh.NestedVal == ch.Val {
			// The scan of c recorded it (Limits.Nested): not read again.
			d.c = newContainer(part, sh.Nested, ch.Val.Start, depth+1)
			break
		}
		_, psh, err := jsontext.Scan(part, scanLimits)
		if err != nil {
			return nil // unreachable: part is valid
		}
		d.c = newContainer(part, &psh, 0, depth+1)
	case '"':
		d.c, d.n, d.lines = jsonInString(part, depth+1)
		d.text = d.c != nil
		if d.c == nil {
			d.text = false
			if d.n, d.lines = jsontext.StringStats(part); d.n <= literalBudget {
				return nil
			}
			d.b64 = base64In(part)
		}
	default:
		return nil
	}
	return d
}

// scanLimits is what Put has a scan record of a container.
var scanLimits = jsontext.Limits{Head: scanHead, Tail: scanTail, Keys: scanKeys, Index: true, Nested: true}

// jsonInString returns the index of the JSON array or object that the text
// of the valid JSON string raw holds, and the text's length and lines; nil
// when it holds none. The text is decoded only when its first character
// (after white space) opens an array or object.
func jsonInString(raw []byte, depth int) (c *container, n, lines int) {
	i := 1
	for i < len(raw)-1 {
		if raw[i] == ' ' {
			i++
		} else if raw[i] == '\\' && (raw[i+1] == 'n' || raw[i+1] == 'r' || raw[i+1] == 't') {
			i += 2
		} else {
			break
		}
	}
	if i >= len(raw)-1 || raw[i] != '[' && raw[i] != '{' {
		return nil, 0, 0
	}
	text := jsontext.AppendUnquoted(make([]byte, 0, len(raw)), raw)
	top, sh, err := jsontext.Scan(text, scanLimits)
	if err != nil {
		return nil, 0, 0
	}
	return newContainer(text[top.Start:top.End], &sh, top.Start, depth), len(text), lineCount(text)
}

// lineCount returns the lines of the text b: its newlines, and one more
// when it does not end with one (as Value.Lines counts them).
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// describe indexes the child val (with key, for an object field) of the
// container raw. An object item of an array also gets its first fields
// described.
func describe(raw []byte, key, val jsontext.Span, element bool) node {
	v := val.Of(raw)
	nd := node{key: key, val: val, kind: kindOf(v[0])}
	switch nd.kind {
	case KindText:
		if nd.n, nd.lines = jsontext.StringStats(v); nd.n > literalBudget {
			nd.b64 = base64In(v)
		}
	case KindArray:
		jsontext.EachChild(v, func(_, item []byte) bool {
			if nd.n == 0 && item[0] == '{' {
				nd.keys, nd.more = firstKeys(raw, item)
			}
			nd.n++
			return true
		})
	case KindObject:
		nd.n = jsontext.CountChildren(v)
		if !element {
			nd.keys, nd.more = firstKeys(raw, v)
			break
		}
		nd.fields = make([]node, 0, min(nd.n, itemFieldsMax))
		jsontext.EachChild(v, func(k, f []byte) bool {
			if len(nd.fields) == itemFieldsMax {
				nd.more = true
				return false
			}
			ks, fs := offsetIn(raw, k), offsetIn(raw, f)
			nd.fields = append(nd.fields, describe(raw, jsontext.Span{Start: ks, End: ks + len(k)}, jsontext.Span{Start: fs, End: fs + len(f)}, false))
			return true
		})
	}
	return nd
}

// firstKeys returns the spans in raw of the first keys of obj, a valid
// object within raw, and whether it has more.
func firstKeys(raw, obj []byte) (keys []jsontext.Span, more bool) {
	keys = make([]jsontext.Span, 0, nestedKeys)
	jsontext.EachChild(obj, func(k, _ []byte) bool {
		if len(keys) == nestedKeys {
			more = true
			return false
		}
		ks := offsetIn(raw, k)
		keys = append(keys, jsontext.Span{Start: ks, End: ks + len(k)})
		return true
	})
	return keys, more
}

// offsetIn returns the offset of sub within outer; sub must be a subslice.
func offsetIn(outer, sub []byte) int {
	return cap(outer) - cap(sub)
}

// kindOf returns the kind of the JSON value starting with c.
func kindOf(c byte) Kind {
	switch c {
	case '"':
		return KindText
	case '[':
		return KindArray
	case '{':
		return KindObject
	case 't', 'f':
		return KindBool
	case 'n':
		return KindNull
	}
	return KindNumber
}
