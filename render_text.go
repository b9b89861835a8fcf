package values

import (
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// renderText appends "text(len=…, lines=…)" and the text whole, or its head
// and tail, within limit bytes in total.
func renderText(b []byte, x *value, limit int) []byte {
	b = append(b, "text(len="...)
	b = append(b, size(x.n)...)
	b = append(b, ", lines="...)
	b = strconv.AppendInt(b, int64(x.lines), 10)

	avail := limit - len(b) - len(", head=, tail=)")
	head := min(textHeadBudget, avail*2/3)
	tail := min(textTailBudget, avail-head)
	if len(x.raw) <= head+tail && len(b)+len(") ")+jsontext.QuotedLen(x.raw) <= limit {
		b = append(b, ") "...)
		return jsontext.AppendQuote(b, x.raw)
	}
	b = append(b, ", head="...)
	b, _ = jsontext.AppendQuotedHead(b, x.raw, head)
	b = append(b, ", tail="...)
	b, _ = jsontext.AppendQuotedTail(b, x.raw, tail)
	return append(b, ')')
}

// appendStringText appends "text(len=…, lines=…, head=…, tail=…)" for the
// valid JSON string raw, whose decoding is n bytes in lines lines, in at
// most budget bytes. Only its ends are decoded.
func appendStringText(dst, raw []byte, n, lines, budget int) []byte {
	start := len(dst)
	dst = append(dst, "text(len="...)
	dst = append(dst, size(n)...)
	dst = append(dst, ", lines="...)
	dst = strconv.AppendInt(dst, int64(lines), 10)
	avail := budget - (len(dst) - start) - len(", head=, tail=)")
	if avail < 2*minElement {
		return append(dst, ", …)"...)
	}
	head := min(textHeadBudget, avail*2/3)
	tail := min(textTailBudget, avail-head)
	dst = append(dst, ", head="...)
	dst, _ = jsontext.AppendQuotedHead(dst, jsontext.StringHead(raw, head), head)
	dst = append(dst, ", tail="...)
	dst, _ = jsontext.AppendQuotedTail(dst, jsontext.StringTail(raw, tail), tail)
	return append(dst, ')')
}
