package values

import (
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// renderObject appends "json(…, bytes=N)" for x within limit bytes in total.
func renderObject(b []byte, x *value, limit int) []byte {
	b = append(b, "json("...)
	suffix := make([]byte, 0, 32)
	suffix = append(suffix, "bytes="...)
	suffix = strconv.AppendInt(suffix, int64(len(x.raw)), 10)
	suffix = append(suffix, ')')

	if x.n == 0 {
		b = append(b, "keys=0, "...)
		return append(b, suffix...)
	}
	if x.n > objectFieldsMax {
		b = append(b, "keys="...)
		b = strconv.AppendInt(b, int64(x.n), 10)
		b = append(b, " total, first=["...)
		for i := range x.elems {
			k := x.elems[i].key
			piece := appendKey(nil, x.raw[k.Start:k.End])
			if len(b)+len(piece)+len(", …], ")+len(suffix) > limit {
				break
			}
			b = append(b, piece...)
			b = append(b, ", "...)
		}
		b = append(b, "…], "...)
		return append(b, suffix...)
	}

	var elided []byte
	for i := range x.elems {
		piece := appendField(nil, x.raw, &x.elems[i])
		rest := len(x.elems) - i - 1
		need := len(b) + len(piece) + len(", ") + len(suffix)
		if rest > 0 {
			need += len("… 99 more keys, ")
		}
		if need > limit {
			elided = append(elided, "… "...)
			elided = strconv.AppendInt(elided, int64(rest+1), 10)
			elided = append(elided, " more keys, "...)
			break
		}
		b = append(b, piece...)
		b = append(b, ", "...)
	}
	b = append(b, elided...)
	return append(b, suffix...)
}

// appendField appends "key: description" for one field of an object.
func appendField(dst, raw []byte, f *node) []byte {
	dst = appendKey(dst, raw[f.key.Start:f.key.End])
	dst = append(dst, ": "...)
	switch f.kind {
	case KindText:
		if f.n <= literalBudget {
			return jsontext.AppendClippedString(dst, raw[f.val.Start:f.val.End], 2*literalBudget)
		}
		dst = append(dst, "text(len="...)
		dst = append(dst, size(f.n)...)
		dst = append(dst, ", lines="...)
		dst = strconv.AppendInt(dst, int64(f.lines), 10)
		return append(dst, ')')
	case KindArray:
		return appendArrayLen(dst, f.n)
	case KindObject:
		dst = append(dst, "json(keys="...)
		dst = strconv.AppendInt(dst, int64(f.n), 10)
		return append(dst, ')')
	}
	return appendLiteral(dst, raw[f.val.Start:f.val.End], literalBudget)
}
