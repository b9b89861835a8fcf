package values

import (
	"bytes"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the lines that tell the model a value is still
// reachable, and how: the hint after a preview, and the line after a
// value shown whole.

// ReferenceHint returns the line an agent loop appends after a preview
// (it begins with a newline). It names the exact forms the model types to
// pass the value, or a part of it, as a tool argument, and the read_value
// tool ([ReadValueTool]) that pages its bytes; register that tool, or
// write your own hint. It names both the field and the item forms, for a
// value of any kind: [ReferenceHintFor] names only those that fit the
// value.
func ReferenceHint(handle string) string {
	return string(appendHint(nil, handle, partsAny))
}

// ReferenceHintFor is [ReferenceHint] for the value v under handle: it
// offers "$r1.<field>" for an object (or a text holding one), "$r1.0" and
// "$r1.-1" for an array (or a text holding one, or a stream of JSON
// values), and no part at all for other text, binary values and scalars,
// which have none.
func ReferenceHintFor(handle string, v Value) string {
	return string(appendHint(nil, handle, partsOf(v.get())))
}

// parts says which forms of a reference name a part of a value.
type parts uint8

const (
	partsNone   parts = iota // text, binary, scalars
	partsFields              // an object
	partsItems               // an array, or a stream of values
	partsAny                 // either: the value is not known
)

// partsOf returns the parts that references name in x: those of the
// array or object it is or, for a text, holds. A text kept only in the
// durable store is judged by its recorded preview, so as not to read it
// back.
func partsOf(x *value) parts {
	switch x.kind {
	case KindArray:
		return partsItems
	case KindObject:
		return partsFields
	case KindText:
		if x.disk != nil {
			return partsOfPreview(x.disk.preview)
		}
		if c := x.index(); c != nil {
			if c.kind == KindArray {
				return partsItems
			}
			return partsFields
		}
	}
	return partsNone
}

// partsOfPreview is partsOf for a text whose preview is p.
func partsOfPreview(p string) parts {
	_, p, _ = strings.Cut(p, " = ")
	switch {
	case strings.HasPrefix(p, "json-stream("):
		return partsItems
	case !strings.HasPrefix(p, "json-text("):
		return partsNone
	}
	// json-text(len=S, lines=N, array(…)) or json(…)
	if i := strings.Index(p, ", array("); i >= 0 && (strings.Index(p, ", json(") < 0 || i < strings.Index(p, ", json(")) {
		return partsItems
	}
	return partsFields
}

// appendHint appends the hint after a preview of the value under handle,
// whose parts references name as ps.
func appendHint(dst []byte, handle string, ps parts) []byte {
	dst, hb := appendShownHandle(append(dst, "\n["...), handle)
	dst = append(dst, " holds the full value for this run: pass \"$"...)
	dst = append(dst, hb...)
	dst = append(dst, "\" as a tool argument to use all of it"...)
	switch ps {
	case partsAny:
		dst = appendAll(dst, ", \"$", hb, ".<field>\" or \"$", hb, ".0\" for a part (\"$", hb, ".-1\" is the last item)")
	case partsFields:
		dst = appendAll(dst, ", \"$", hb, ".<field>\" for a part")
	case partsItems:
		dst = appendAll(dst, ", \"$", hb, ".0\" for an item (\"$", hb, ".-1\" is the last)")
	}
	return appendAll(dst, "; read_value {\"ref\":\"", hb, "\"} pages its bytes]")
}

// appendAll appends each of parts.
func appendAll(dst []byte, parts ...string) []byte {
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

// hintLen is the length of the longest hint without its handle.
var hintLen = len(ReferenceHint(""))

// StoredLine returns the line an agent loop appends after a value it
// shows whole ([SessionValues.Transcript] does), in brackets, without a
// newline: the handle, what the value is (its kind, size and the count
// that fits it: keys, items, lines; for a text holding JSON or a table,
// what it holds; for an envelope whose bytes are mostly one text, the
// reference to that text with its size and lines), and the forms that
// pass it, or a part of it, as a tool argument. A model reads from it
// what it would otherwise count in the value.
func StoredLine(handle string, v Value) string {
	b := appendStoredLine(make([]byte, 0, storedLineSize), handle, v.get())
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again: one allocation, not two
}

// storedLineSize is room for most stored lines (about 90 to 200 bytes),
// so that the line is not regrown as it is written.
const storedLineSize = 192

// appendStoredLine appends StoredLine(handle, Value{x}) to dst.
func appendStoredLine(dst []byte, handle string, x *value) []byte {
	dst, hb := appendShownHandle(append(dst, "[stored as "...), handle)
	dst = append(dst, " ("...)
	dst = appendWhat(dst, hb, x)
	dst = append(dst, "): pass \"$"...)
	dst = append(dst, hb...)
	const reuse = "\" as a tool argument to reuse it]"
	switch partsOf(x) {
	case partsFields:
		return appendAll(dst, "\" or \"$", hb, ".<field>"+reuse)
	case partsItems:
		return appendAll(dst, "\" or \"$", hb, ".0"+reuse)
	}
	return append(dst, reuse...)
}

// appendWhat appends what x is, for the line after it shown whole: "object,
// 46 keys, 1.9 KiB", "array, 12 items, 900 B", "text, 1.2 KiB, 34 lines",
// and what a text holds or an envelope's text is.
func appendWhat(dst []byte, hb string, x *value) []byte {
	count := func(n int, one, many string) {
		dst = appendDecimal(dst, uint64(max(n, 0)))
		if n == 1 {
			dst = append(dst, one...)
		} else {
			dst = append(dst, many...)
		}
	}
	switch x.kind {
	case KindObject:
		dst = append(dst, "object, "...)
		count(x.n, " key, ", " keys, ")
		dst = appendSize(dst, len(x.raw))
		return appendEnvelopeText(dst, hb, x)
	case KindArray:
		dst = append(dst, "array, "...)
		count(x.n, " item, ", " items, ")
		dst = appendSize(dst, len(x.raw))
		return appendEnvelopeText(dst, hb, x)
	case KindText:
		dst = append(dst, "text, "...)
		dst = appendSize(dst, x.n)
		dst = append(dst, ", "...)
		count(x.lines, " line", " lines")
		c, f := x.index(), x.formatIndex()
		switch {
		case c != nil && c.stream:
			dst = append(dst, "; a stream of "...)
			count(c.n, " JSON value", " JSON values")
		case c != nil && c.kind == KindArray:
			dst = append(dst, "; JSON, an array of "...)
			count(c.n, " item", " items")
		case c != nil:
			dst = append(dst, "; JSON, an object of "...)
			count(c.n, " key", " keys")
		}
		switch f := f.(type) {
		case *table:
			dst = append(dst, "; a table of "...)
			count(f.rows, " row, ", " rows, ")
			count(f.cols, " column", " columns")
		case *diffDoc:
			dst = append(dst, "; a diff of "...)
			count(f.files, " file", " files")
		case *yamlDoc:
			dst = append(dst, "; YAML of "...)
			if f.seq {
				count(f.n, " item", " items")
			} else {
				count(f.n, " key", " keys")
			}
		case *xmlDoc:
			dst = append(dst, "; XML, root <"...)
			dst = appendName(dst, []byte(f.root.name), keyBudget, false)
			dst = append(dst, '>')
		case *htmlDoc:
			dst = append(dst, "; HTML"...)
		case *mdDoc:
			dst = append(dst, "; Markdown"...)
		}
		return dst
	case KindBinary:
		dst = append(dst, "binary, "...)
		dst = appendSize(dst, x.n)
		return append(dst, ", "+x.contentType()...)
	}
	return append(dst, x.kind.String()...)
}

// envelopeMin is the size of the smallest value shown whole whose line
// says what text it holds (appendEnvelopeText): a text in a smaller one is
// a few lines, read at a glance.
const envelopeMin = 256

// appendEnvelopeText appends "; "$r1.content.0.text" is text of 1.5 KiB,
// 34 lines" when the bytes of the array or object x are mostly one string,
// through the parts that dominate it as a preview has them (the largest
// field of an object when it holds a third of it, the only item of an
// array, four deep at most), as an MCP result's are its text block's: a
// model would otherwise count the lines in its escapes. It reads x without
// the index a preview needs, which a value shown whole does not otherwise
// build: its largest field, or its only item, as Put found them, then a
// walk over each container further down (which ends at the second item of
// an array).
func appendEnvelopeText(dst []byte, hb string, x *value) []byte {
	if len(x.raw) < envelopeMin {
		return dst
	}
	var keys [dominantDepth][]byte // nil for an array's item
	v := x.raw
	for depth := range dominantDepth {
		var key, part []byte
		switch {
		case v[0] == '[' && depth == 0:
			if x.n != 1 {
				return dst
			}
			part = v[jsontext.SkipSpace(v, 1):]
			part = part[:len(part)-1]
			for jsontext.IsSpace(part[len(part)-1]) {
				part = part[:len(part)-1]
			}
		case v[0] == '[':
			n := 0
			jsontext.EachChild(v, func(_, item []byte) bool {
				n++
				part = item
				return n < 2
			})
			if n != 1 {
				return dst
			}
		case v[0] == '{' && depth == 0 && x.top.Val.End > 0:
			key, part = x.top.Key.Of(v), x.top.Val.Of(v)
		case v[0] == '{':
			jsontext.EachChild(v, func(k, f []byte) bool {
				if len(f) > len(part) {
					key, part = k, f
				}
				return true
			})
		default:
			return dst
		}
		if part == nil || v[0] == '{' && 3*len(part) < len(v) {
			return dst
		}
		keys[depth] = key
		if part[0] != '"' {
			v = part
			continue
		}
		n, lines := jsontext.StringStats(part)
		if n <= literalBudget {
			return dst
		}
		dst = append(dst, "; \"$"...)
		dst = append(dst, hb...)
		start := len(dst)
		for _, k := range keys[:depth+1] {
			if k == nil {
				dst = append(dst, ".0"...)
			} else {
				dst = appendSegment(append(dst, '.'), k)
			}
		}
		dst = clipFrom(dst, start, 2*keyBudget)
		dst = append(dst, "\" is text of "...)
		dst = appendSize(dst, n)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, int64(lines), 10)
		if lines == 1 {
			return append(dst, " line"...)
		}
		return append(dst, " lines"...)
	}
	return dst
}

// appendSegment appends the quoted key raw as a segment of a reference:
// decoded, with "." and "\" escaped.
func appendSegment(dst, raw []byte) []byte {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		body = jsontext.AppendUnquoted(nil, raw)
	}
	for _, b := range body {
		if b == '.' || b == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, b)
	}
	return dst
}
