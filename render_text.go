package values

import (
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// renderText appends "text(len=…, lines=…)" and the text whole, or its head
// and tail, within limit bytes in total; a text holding JSON is previewed
// as that JSON, and a table as a table.
func renderText(b []byte, x *value, limit int) []byte {
	c, f := x.index(), x.formatIndex()
	switch {
	case c != nil && c.stream:
		return renderJSON(b, c, limit-len(b))
	case c != nil:
		start := len(b)
		b = append(b, "json-text(len="...)
		b = appendSize(b, x.n)
		b = append(b, ", lines="...)
		b = strconv.AppendInt(b, int64(x.lines), 10)
		b = append(b, ", "...)
		b = renderJSON(b, c, limit-start-(len(b)-start)-len(")"))
		return append(b, ')')
	case f != nil:
		return f.appendPreview(b, x, limit-len(b))
	}
	b = append(b, "text(len="...)
	b = appendSize(b, x.n)
	b = append(b, ", lines="...)
	b = strconv.AppendInt(b, int64(x.lines), 10)

	head, tail := textEnds(limit - len(b) - len(", head=, tail=)"))
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
	dst = appendSize(dst, n)
	dst = append(dst, ", lines="...)
	dst = strconv.AppendInt(dst, int64(lines), 10)
	avail := budget - (len(dst) - start) - len(", head=, tail=)")
	if avail < 2*minElement {
		return append(dst, ", …)"...)
	}
	head, tail := textEnds(avail)
	dst = append(dst, ", head="...)
	dst, _ = jsontext.AppendQuotedHead(dst, jsontext.StringHead(raw, head), head)
	dst = append(dst, ", tail="...)
	dst, _ = jsontext.AppendQuotedTail(dst, jsontext.StringTail(raw, tail), tail)
	return append(dst, ')')
}

// appendPreview appends "table(rows=N, cols=N, bytes=…, format=…,
// header=[…], [:3]=[…], [-2:]=[…])" for the table t of the text x, in at
// most budget bytes, the rows as their lines.
func (t *table) appendPreview(dst []byte, x *value, budget int) []byte {
	start := len(dst)
	dst = append(dst, "table(rows="...)
	dst = strconv.AppendInt(dst, int64(t.rows), 10)
	dst = append(dst, ", cols="...)
	dst = strconv.AppendInt(dst, int64(t.cols), 10)
	dst = append(dst, ", bytes="...)
	dst = appendSize(dst, len(x.raw))
	dst = append(dst, ", format="...)
	dst = append(dst, t.format...)
	left := func() int { return budget - (len(dst) - start) - len(")") }
	if t.header == nil {
		dst = append(dst, ", header=none"...)
	} else {
		dst = append(dst, ", header=["...)
		room := min(left()*2/5, 600)
		for i, h := range t.header {
			var piece []byte
			if i > 0 {
				piece = append(piece, ", "...)
			}
			piece = jsontext.AppendClipped(piece, []byte(h), keyBudget/2)
			if len(piece) > room-len(", …]") && i < len(t.header)-1 || len(piece) > room-len("]") {
				dst = append(dst, ", …"[2*boolInt(i == 0):]...)
				break
			}
			dst = append(dst, piece...)
			room -= len(piece)
		}
		dst = append(dst, ']')
	}
	dst = t.appendColumns(dst, x.raw, min(left()*2/5, 800))
	shown := len(t.head) + len(t.tail)
	framing := len(", [:3]=[], [-2:]=[]")
	per := (left()-framing)/max(shown, 1) - len(", ")
	if shown == 0 || per < minElement {
		return append(dst, ')')
	}
	row := func(dst []byte, s jsontext.Span) []byte {
		b, _ := jsontext.AppendQuotedHead(dst, s.Of(x.raw), per)
		return b
	}
	if t.rows <= arrayHeadItems+arrayTailItems {
		dst = append(dst, ", ["...)
		for i, s := range append(t.head[:len(t.head):len(t.head)], t.tail...) {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = row(dst, s)
		}
		return append(dst, "])"...)
	}
	dst = append(dst, ", [:3]=["...)
	for i, s := range t.head {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = row(dst, s)
	}
	dst = append(dst, "], [-2:]=["...)
	for i, s := range t.tail {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = row(dst, s)
	}
	return append(dst, "])"...)
}

// appendColumns appends ", columns={name: values, …}": what the cells of
// each column take (columnSummary), in at most budget bytes. A table with
// a header shows the columns whose cells it can tell (a set of values, a
// range, blanks), by name; one without shows every column, by number
// from 1. Columns that do not fit are left out, and "…" says so.
func (t *table) appendColumns(dst, raw []byte, budget int) []byte {
	start := len(dst)
	dst = append(dst, ", columns={"...)
	shown, any := 0, false
	var buf []byte
	for j := range t.sums {
		c := &t.sums[j]
		buf = c.appendTo(buf[:0], raw, summaryFull)
		if t.header != nil && string(buf) == "text" {
			continue // nothing to tell: the header names it
		}
		any = true
		mark := len(dst)
		if shown > 0 {
			dst = append(dst, ", "...)
		}
		if t.header != nil {
			dst = jsontext.AppendClipped(dst, []byte(t.header[j]), keyBudget/2)
		} else {
			dst = strconv.AppendInt(dst, int64(j+1), 10)
		}
		dst = append(dst, ": "...)
		dst = jsontext.AppendClipped(dst, buf, elementBudget*2)
		if len(dst)-start > budget-len(", …}") {
			dst = append(dst[:mark], ", …"[2*boolInt(shown == 0):]...)
			return append(dst, '}')
		}
		shown++
	}
	if !any {
		return dst[:start]
	}
	return append(dst, '}')
}

// appendTextSize appends "len=S, lines=N" of the text x.
func appendTextSize(dst []byte, x *value) []byte {
	dst = append(dst, "len="...)
	dst = appendSize(dst, x.n)
	dst = append(dst, ", lines="...)
	return strconv.AppendInt(dst, int64(x.lines), 10)
}

// appendTextEnds ends the preview of a document whose structure dst holds
// from start: with `) "…"`, the text whole, when that fits budget bytes
// from start; else with ", head=…, tail=…)" in what is left of budget; or
// with ")" alone when too little is left for either.
func appendTextEnds(dst []byte, start int, raw []byte, budget int) []byte {
	left := budget - (len(dst) - start)
	if len(raw)+2 < left && len(`) `)+jsontext.QuotedLen(raw) <= left {
		dst = append(dst, ") "...)
		return jsontext.AppendQuote(dst, raw)
	}
	avail := left - len(", head=, tail=)")
	if avail < 2*minElement {
		return append(dst, ')')
	}
	head, tail := textEnds(avail)
	dst = append(dst, ", head="...)
	dst, _ = jsontext.AppendQuotedHead(dst, raw, head)
	dst = append(dst, ", tail="...)
	dst, _ = jsontext.AppendQuotedTail(dst, raw, tail)
	return append(dst, ')')
}
