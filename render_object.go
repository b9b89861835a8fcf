package values

import (
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// renderObject appends "json(keys=N, bytes=…, …)" for c in at most budget
// bytes: an object of up to 24 keys field by field, its dominant field
// previewed as a value of its own; a wider one by as many of its first and
// last keys as fit and its largest fields.
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
// budget bytes; the dominant field gets what the others leave, and when
// they do not fit, the last of them are dropped and counted.
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
	domBudget := 0
	if dom >= 0 {
		// The dominant part is where the bytes are: it gets most of the
		// budget, the other fields what they need up to the rest.
		domBudget = max(budget-used, budget*3/5)
	}
	// Keep the fields that fit in what the dominant part leaves, room for
	// saying how many were dropped included when some are.
	room := budget - domBudget
	keep := len(c.nodes) // fields shown before the first dropped one
	if used > room {
		used = len(", … 99 more keys")
		for i := range c.nodes {
			if i != dom && used+len(piece(i)) > room {
				keep = i
				break
			}
			used += len(piece(i))
		}
	}
	for i := range c.nodes {
		switch {
		case i == dom:
			dst = append(dst, ", "...)
			k := len(dst)
			dst = appendKey(dst, c.nodes[i].key.Of(c.raw))
			keyLen := len(dst) - k
			dst = append(dst, ": "...)
			dst = appendPart(dst, c.raw, c.dom, domBudget-len(", : ")-keyLen)
		case i < keep:
			dst = append(dst, piece(i)...)
		case i == keep:
			dropped := len(c.nodes) - keep
			if dom > keep {
				dropped--
			}
			dst = appendMoreKeys(dst, dropped, false, true)
		}
	}
	return dst
}

// appendPart appends the preview of the dominant part d of the container
// raw in at most budget bytes: "json-text(…)" around it when it is the JSON
// held in a string, "text(…)" with its head and tail for other text.
func appendPart(dst []byte, raw []byte, d *dominant, budget int) []byte {
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

// appendWide appends the keys of an object of more than 24 keys in at most
// budget bytes: ", first=[a, b, …], last=[y, z], largest=[k: …, …]".
func appendWide(dst []byte, c *container, budget int) []byte {
	start := len(dst)
	// The largest fields say where the bytes are; they get up to half.
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
				large = appendPart(large, c.raw, c.dom, budget/2-len(large))
				continue
			}
			large = appendField(large, c.raw, nd)
		}
		large = append(large, ']')
		large = jsontext.AppendClipped(nil, large, budget/2)
	}
	keysRoom := budget - len(large)
	// The first keys, then the last ones not among them.
	last := func(shown int) []byte {
		var b []byte
		for i := range c.last {
			if c.n-len(c.last)+i < shown {
				continue
			}
			if len(b) == 0 {
				b = append(b, ", last=["...)
			} else {
				b = append(b, ", "...)
			}
			b = appendKey(b, c.last[i].key.Of(c.raw))
		}
		if len(b) > 0 {
			b = append(b, ']')
		}
		return b
	}
	dst = append(dst, ", first=["...)
	shown := 0
	for i := range c.nodes {
		piece := appendKey(nil, c.nodes[i].key.Of(c.raw))
		if len(dst)-start+len(piece)+len(", …]")+len(last(i+1)) > keysRoom {
			break
		}
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, piece...)
		shown++
	}
	if shown < c.n {
		if shown > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, jsontext.Ellipsis...)
	}
	dst = append(dst, ']')
	if l := last(shown); len(dst)-start+len(l) <= keysRoom {
		dst = append(dst, l...)
	}
	return append(dst, large...)
}

// appendField appends "key: description" for one field of an object.
func appendField(dst, raw []byte, f *node) []byte {
	dst = appendKey(dst, f.key.Of(raw))
	dst = append(dst, ": "...)
	return appendDescription(dst, raw, f)
}

// appendDescription describes a child: a string of up to literalBudget
// bytes literally, a longer one as "text(len=…, lines=…)", an array as
// "array(len=N, bytes=…, first={keys of its first item})", an object as
// "json(keys=N, bytes=…, {first keys})", other scalars literally.
func appendDescription(dst, raw []byte, f *node) []byte {
	switch f.kind {
	case KindText:
		if f.n <= literalBudget {
			return jsontext.AppendClippedString(dst, f.val.Of(raw), 2*literalBudget)
		}
		dst = append(dst, "text(len="...)
		dst = appendSize(dst, f.n)
		dst = append(dst, ", lines="...)
		dst = strconv.AppendInt(dst, int64(f.lines), 10)
		return append(dst, ')')
	case KindArray:
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
