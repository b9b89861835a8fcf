package values

import (
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// renderArray appends "array(len=N, …)" for x within limit bytes in total.
func renderArray(b []byte, x *value, limit int) []byte {
	b = append(b, "array(len="...)
	b = strconv.AppendInt(b, int64(x.n), 10)
	long := x.n > arrayHeadItems+arrayTailItems
	// Share what is left among the items shown.
	fixed := len(", [:3]=[], [-2:]=[])")
	per := elementBudget
	if len(x.elems) > 0 {
		per = min(per, (limit-len(b)-fixed)/len(x.elems)-len(", "))
	}
	if !long {
		b = append(b, ", ["...)
		for i := range x.elems {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendElement(b, x.raw, &x.elems[i], per)
		}
		return append(b, "])"...)
	}
	b = append(b, ", [:"...)
	b = strconv.AppendInt(b, arrayHeadItems, 10)
	b = append(b, "]=["...)
	for i := range x.elems[:arrayHeadItems] {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendElement(b, x.raw, &x.elems[i], per)
	}
	b = append(b, "], [-"...)
	b = strconv.AppendInt(b, arrayTailItems, 10)
	b = append(b, ":]=["...)
	for i := range x.elems[arrayHeadItems:] {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendElement(b, x.raw, &x.elems[arrayHeadItems+i], per)
	}
	return append(b, "])"...)
}

// appendElement appends the summary of one array item in at most budget
// bytes: an object as its first two fields, an array as its length, a
// string or other scalar literally, each clipped with "…".
func appendElement(dst, raw []byte, nd *node, budget int) []byte {
	if budget < len(jsontext.Ellipsis) {
		return dst
	}
	v := raw[nd.val.Start:nd.val.End]
	var e []byte
	switch nd.kind {
	case KindObject:
		e = append(e, '{')
		for i := range nd.fields {
			f := &nd.fields[i]
			if i > 0 {
				e = append(e, ',')
			}
			e = jsontext.AppendClipped(e, appendKey(nil, raw[f.key.Start:f.key.End]), innerBudget)
			e = append(e, ':')
			e = appendInner(e, raw, f)
		}
		if nd.more {
			e = append(e, ", …"...)
		}
		e = append(e, '}')
	case KindArray:
		e = appendArrayLen(e, nd.n)
	default:
		return appendLiteral(dst, v, budget)
	}
	return jsontext.AppendClipped(dst, e, budget)
}

// appendInner appends a field value inside an array item: objects as {…},
// arrays as their length, scalars clipped to innerBudget.
func appendInner(dst, raw []byte, f *node) []byte {
	switch f.kind {
	case KindObject:
		return append(dst, "{…}"...)
	case KindArray:
		return appendArrayLen(dst, f.n)
	}
	return appendLiteral(dst, raw[f.val.Start:f.val.End], innerBudget)
}

func appendArrayLen(dst []byte, n int) []byte {
	dst = append(dst, "array(len="...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, ')')
}
