package values

import (
	"bytes"
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// renderObject appends "json(keys=N, bytes=…, …)" for c in at most budget
// bytes: an object of up to 24 keys field by field, its dominant field
// previewed as a value of its own; a wider one by as many of its first
// fields as fit, the names of as many of its other keys, and its largest
// fields. Keys left out are counted and named while their names fit.
func renderObject(dst []byte, c *container, budget int) []byte {
	start := len(dst)
	dst = append(dst, "json(keys="...)
	dst = strconv.AppendInt(dst, int64(c.n), 10)
	dst = append(dst, ", bytes="...)
	dst = appendSize(dst, len(c.raw))
	left := budget - (len(dst) - start) - len(")")
	if c.n > objectFieldsMax {
		dst = appendWide(dst, c, left)
	} else {
		dst = appendFields(dst, c, left)
	}
	return append(dst, ')')
}

// appendFields appends ", key: description" for each field of c in at most
// budget bytes. The dominant field is previewed in what the others leave,
// and at least two fifths of the budget; what it does not use goes to the
// others. When they do not all fit, the last of them are dropped,
// counted and named while the names fit.
func appendFields(dst []byte, c *container, budget int) []byte {
	// The fields other than the dominant one, each ", key: description",
	// are written one after another in scratch; ends[i] is where field i's
	// ends.
	scratch := make([]byte, 0, 512)
	ends := make([]int, len(c.nodes))
	piece := func(i int) []byte {
		if i == 0 {
			return scratch[:ends[0]]
		}
		return scratch[ends[i-1]:ends[i]]
	}
	dom := -1
	for i := range c.nodes {
		nd := &c.nodes[i]
		if c.dom != nil && nd.val == c.dom.val {
			dom = i
		} else {
			scratch = appendField(append(scratch, ", "...), c.raw, nd)
		}
		ends[i] = len(scratch)
	}
	used := len(scratch)
	// The dominant part, ", key: preview", rendered first: the others get
	// what it leaves.
	var part []byte
	if dom >= 0 {
		part = append(part, ", "...)
		part = appendKey(part, c.nodes[dom].key.Of(c.raw))
		part = append(part, ": "...)
		part = appendPart(part, c.raw, c.dom, max(budget-used, budget*2/5)-len(part))
	}
	room := budget - len(part)
	keep := len(c.nodes) // fields shown before the first dropped one
	if used > room {
		// The most fields that fit with the names of the others: for
		// each field kept, its piece in place of its name.
		marker := len(", … 99 more keys [") + len("]")
		names := 0
		for i := range c.nodes {
			if i != dom {
				names += len(", ") + min(len(c.nodes[i].key.Of(c.raw)), keyBudget)
			}
		}
		used = marker + names
		keep = 0
		for i := range c.nodes {
			if i == dom {
				keep = i + 1
				continue
			}
			name := len(", ") + min(len(c.nodes[i].key.Of(c.raw)), keyBudget)
			if used-name+len(piece(i)) > room {
				break
			}
			used += len(piece(i)) - name
			keep = i + 1
		}
		// What the kept fields take; the names of the others get the rest.
		used = len(", … 99 more keys")
		for i := range keep {
			if i != dom {
				used += len(piece(i))
			}
		}
	}
	for i := range c.nodes {
		switch {
		case i == dom:
			dst = append(dst, part...)
		case i < keep:
			dst = append(dst, piece(i)...)
		case i == keep:
			var names [][]byte
			for j := keep; j < len(c.nodes); j++ {
				if j != dom {
					names = append(names, c.nodes[j].key.Of(c.raw))
				}
			}
			dst = appendDropped(dst, len(names), names, false, room-used+len(", … 99 more keys"))
		}
	}
	return dst
}

// appendDropped appends ", … N more keys" and, within budget bytes in
// all, " [a, b, …]": the names of the first keys dropped, as many as fit,
// a gap after the first of them marked with "…" (gap, at names[gapAt],
// when gap is set) and the last ones named when they fit.
func appendDropped(dst []byte, n int, names [][]byte, untracked bool, budget int) []byte {
	start := len(dst)
	dst = appendMoreKeys(dst, n, untracked, true)
	if len(names) == 0 {
		return dst
	}
	mark := len(dst)
	dst = append(dst, " ["...)
	for i, k := range names {
		m := len(dst)
		if i > 0 {
			dst = append(dst, ", "...)
		}
		if k == nil { // a gap
			dst = append(dst, jsontext.Ellipsis...)
			continue
		}
		dst = appendKey(dst, k)
		if len(dst)-start+len(", …]") > budget && i < len(names)-1 || len(dst)-start+len("]") > budget {
			dst = dst[:m]
			if i == 0 {
				return dst[:mark]
			}
			dst = append(dst, ", "+jsontext.Ellipsis...)
			break
		}
	}
	return append(dst, ']')
}

// appendPart appends the preview of the dominant part d of the container
// raw in at most budget bytes: "json-text(…)" around it when it is the JSON
// held in a string, "text(…)" with its head and tail for other text.
func appendPart(dst []byte, raw []byte, d *dominant, budget int) []byte {
	if d.b64.typ != "" {
		return clipFrom(appendBase64(dst, d.b64), len(dst), budget)
	}
	if d.c == nil {
		return appendStringText(dst, d.val.Of(raw), d.n, d.lines, budget)
	}
	if !d.text {
		return renderJSON(dst, d.c, budget)
	}
	start := len(dst)
	dst = append(dst, "json-text(len="...)
	dst = appendSize(dst, d.n)
	dst = append(dst, ", lines="...)
	dst = strconv.AppendInt(dst, int64(d.lines), 10)
	dst = append(dst, ", "...)
	dst = renderJSON(dst, d.c, budget-(len(dst)-start)-len(")"))
	return append(dst, ')')
}

// appendWide appends an object of more than 24 keys in at most budget
// bytes: ", k: desc, …" for as many of its first fields as fit in what
// naming its keys leaves (and at least a quarter), ", … N more keys [k, …,
// y, z]" naming as many of the others as fit (its last ones among them),
// and ", largest=[k: …, …]".
func appendWide(dst []byte, c *container, budget int) []byte {
	// The largest fields say where the bytes are; they get up to two
	// fifths.
	var large []byte
	if l := &c.largest[0]; c.dom != nil || 2*len(c.raw) <= c.n*(l.val.End-l.val.Start) { // notably larger than the average field
		large = append(large, ", largest=["...)
		for i := range c.largest {
			nd := &c.largest[i]
			if i > 0 {
				large = append(large, ", "...)
			}
			if c.dom != nil && nd.val == c.dom.val {
				large = appendKey(large, nd.key.Of(c.raw))
				large = append(large, ": "...)
				large = appendPart(large, c.raw, c.dom, budget*2/5-len(large))
				continue
			}
			large = appendField(large, c.raw, nd)
		}
		large = append(large, ']')
		large = jsontext.AppendClipped(nil, large, budget*2/5)
	}
	room := budget - len(large)
	// The first fields with their values, in what naming every key
	// recorded leaves, and at least a quarter of the rest.
	namesLen := len(", … 99999 more keys [, …]")
	for i := range c.nodes {
		namesLen += len(", ") + min(len(c.nodes[i].key.Of(c.raw)), keyBudget)
	}
	for i := range c.last {
		namesLen += len(", ") + min(len(c.last[i].key.Of(c.raw)), keyBudget)
	}
	valuesRoom := max(room/4, room-namesLen)
	start := len(dst)
	shown := 0
	for i := range c.nodes[:min(len(c.nodes), objectFieldsMax)] {
		mark := len(dst)
		dst = appendField(append(dst, ", "...), c.raw, &c.nodes[i])
		if len(dst)-start > valuesRoom {
			dst = dst[:mark]
			break
		}
		shown++
	}
	// The names of the others: the first keys recorded, then the last.
	var names [][]byte
	for i := shown; i < len(c.nodes); i++ {
		names = append(names, c.nodes[i].key.Of(c.raw))
	}
	gap := c.n > len(c.nodes)+len(c.last)
	for i := range c.last {
		if c.n-len(c.last)+i < len(c.nodes) {
			continue // among the first
		}
		if gap {
			names, gap = append(names, nil), false
		}
		names = append(names, c.last[i].key.Of(c.raw))
	}
	dst = appendDroppedWide(dst, c.n-shown, names, room-(len(dst)-start))
	return append(dst, large...)
}

// appendDroppedWide is appendDropped for the keys of a wide object, whose
// last names are worth more than its middle ones: when not all names fit,
// the last ones are kept and the cut made before them.
func appendDroppedWide(dst []byte, n int, names [][]byte, budget int) []byte {
	gap := -1
	for i, k := range names {
		if k == nil {
			gap = i
		}
	}
	if gap < 0 {
		return appendDropped(dst, n, names, false, budget)
	}
	tailLen := 0
	for _, k := range names[gap+1:] {
		tailLen += len(k) + len(", ")
	}
	// head ends with "]", which the gap's ", …" and the tail replace.
	head := appendDropped(nil, n, names[:gap], false, budget-tailLen-len(", …"))
	if len(head) == 0 || head[len(head)-1] != ']' || len(head)+tailLen+len(", …") > budget {
		return appendDropped(dst, n, names, false, budget)
	}
	dst = append(dst, head[:len(head)-1]...)
	if !bytes.HasSuffix(head, []byte(jsontext.Ellipsis+"]")) {
		dst = append(dst, ", "+jsontext.Ellipsis...)
	}
	for _, k := range names[gap+1:] {
		dst = appendKey(append(dst, ", "...), k)
	}
	return append(dst, ']')
}

// appendField appends "key: description" for one field of an object.
func appendField(dst, raw []byte, f *node) []byte {
	dst = appendKey(dst, f.key.Of(raw))
	dst = append(dst, ": "...)
	return appendDescription(dst, raw, f)
}

// appendDescription describes a child: a string of up to literalBudget
// bytes literally, a longer one as "text(len=…, lines=…)", a small array or
// object of scalars whole (see appendSmall), a larger array as
// "array(len=N, bytes=…, first={keys of its first item})", a larger object
// as "json(keys=N, bytes=…, {first keys})", other scalars literally.
func appendDescription(dst, raw []byte, f *node) []byte {
	switch f.kind {
	case KindText:
		if f.n <= literalBudget {
			return jsontext.AppendClippedString(dst, f.val.Of(raw), 2*literalBudget)
		}
		if f.b64.typ != "" {
			return appendBase64(dst, f.b64)
		}
		dst = append(dst, "text(len="...)
		dst = appendSize(dst, f.n)
		dst = append(dst, ", lines="...)
		dst = strconv.AppendInt(dst, int64(f.lines), 10)
		return append(dst, ')')
	case KindArray:
		if b, ok := appendSmall(dst, f.val.Of(raw)); ok {
			return b
		}
		dst = append(dst, "array(len="...)
		dst = strconv.AppendInt(dst, int64(f.n), 10)
		dst = append(dst, ", bytes="...)
		dst = appendSize(dst, f.val.End-f.val.Start)
		if len(f.keys) > 0 {
			dst = append(dst, ", first="...)
			dst = appendKeySet(dst, raw, f.keys, f.more)
		}
		return append(dst, ')')
	case KindObject:
		if b, ok := appendSmall(dst, f.val.Of(raw)); ok {
			return b
		}
		dst = append(dst, "json(keys="...)
		dst = strconv.AppendInt(dst, int64(f.n), 10)
		dst = append(dst, ", bytes="...)
		dst = appendSize(dst, f.val.End-f.val.Start)
		if len(f.keys) > 0 {
			dst = append(dst, ", "...)
			dst = appendKeySet(dst, raw, f.keys, f.more)
		}
		return append(dst, ')')
	}
	return appendLiteral(dst, f.val.Of(raw), literalBudget)
}

// appendKeySet appends "{a, b, c, …}".
func appendKeySet(dst, raw []byte, keys []jsontext.Span, more bool) []byte {
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = clipFrom(appendKey(dst, k.Of(raw)), len(dst), keyBudget/2)
	}
	if more {
		dst = append(dst, ", …"...)
	}
	return append(dst, '}')
}

// smallPart is the largest array or object, in bytes of JSON, that a
// preview shows whole when it holds only scalars: a repository's {type,
// url}, a list of a few file names.
const smallPart = 128

// appendSmall appends the valid JSON array or object v whole, as
// "{k: v, …}" or "[v, …]", when it holds only scalars and takes at most
// smallPart bytes; it reports false, and leaves dst as it was, otherwise.
func appendSmall(dst, v []byte) ([]byte, bool) {
	if len(v) > smallPart || v[0] != '[' && v[0] != '{' {
		return dst, false
	}
	start := len(dst)
	open, close := byte('['), byte(']')
	if v[0] == '{' {
		open, close = '{', '}'
	}
	dst = append(dst, open)
	ok, first := true, true
	jsontext.EachChild(v, func(k, f []byte) bool {
		if f[0] == '{' || f[0] == '[' {
			ok = false
			return false
		}
		if !first {
			dst = append(dst, ", "...)
		}
		first = false
		if k != nil {
			dst = append(appendKey(dst, k), ": "...)
		}
		dst = appendLiteral(dst, f, literalBudget)
		return true
	})
	if !ok {
		return dst[:start], false
	}
	return append(dst, close), true
}
