package values

import (
	"encoding/hex"
	"math"
	"math/bits"
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// RenderPreview describes v in one bounded line that starts with the handle,
// as in these examples (the format is meant for models and people; it may
// gain detail between versions, so do not parse it):
//
//	r1 = array(len=100, bytes=3.8 KiB, items={id: number 0..99, email: text, state: "open"|"closed", tags?: array}, [:3]=[{id: 0, email: "user0@example.com"}, …], [-2:]=[…])
//	r1 = array(len=3, bytes=7 B, [1, 2, 3])
//	r2 = json(keys=2, bytes=36 B, name: "car", version: "0.46.1")
//	r2 = json(keys=3, bytes=49 KiB, content: text(len=49 KiB, lines=3, head="…", tail="…"), path: "./big.txt")
//	r2 = json(keys=300, bytes=9.1 KiB, first=[a, b, …], last=[y, z], largest=[big: text(len=2 KiB, lines=1)])
//	r3 = text(len=4.9 KiB, lines=3, head="FIRST LINE\nxxx…", tail="…xxx\nLAST LINE")
//	r3 = text(len=11 B, lines=1) "hello world"
//	r3 = json-text(len=8.7 KiB, lines=1, array(len=42, …))
//	r3 = json-stream(len=604, bytes=76 KiB, items={Action: "start"|"run"|"output"|"pass", …}, [:3]=[…], [-2:]=[…])
//	r3 = table(rows=4, cols=6, bytes=232 B, format=aligned, header=[Filesystem, Size, …], columns={Size: "252G"|"12G"|"24G", …}, […])
//	r3 = table(rows=60, cols=6, bytes=5.7 KiB, format=aligned, header=none, columns={1: text, 2: "TLSv1.3"|"TLSv1.2"|"TLSv1"|"SSLv3", …}, [:3]=[…], [-2:]=[…])
//	r3 = diff(files=8, +159 -124, hunks=12, len=23 KiB, lines=410, [README.md +9 -6, …, store.go +5 -0], head="…", tail="…")
//	r3 = html(len=67 KiB, lines=2361, title="TAR", headings=10 ["# TAR", "## NAME", …], tables=18, links=9, body="…", tail="…")
//	r3 = markdown(len=6.0 KiB, lines=171, headings=7 ["# MCP Go SDK", …], tables=1 (first: 4 rows, [SDK Version, …]), code=2 {go: 2}, head="…", tail="…")
//	r3 = xml(len=39 KiB, lines=1676, root=<iso_3166_entries>, children=280 {iso_3166_entry: 249, iso_3166_3_entry: 31}, first=<iso_3166_entry name="Aruba" …>, last=<…>, head="…", tail="…")
//	r3 = yaml(keys=4, len=7.6 KiB, lines=273, {id: goog-ops-agent-policy, …, resourceGroups: list(len=12, lines=269, first={inventoryFilters, resources})}, head="…", tail="…")
//	r4 = 42
//	r5 = binary(len=1.2 MiB, type=image/png, sha256=9f86d081884c7d65…)
//	r6 = json(keys=1, bytes=5.4 KiB, content: array(len=3, …, [{type: "text", …}, {type: "image", data: base64(bytes=3.9 KiB, type=image/png), mimeType: "image/png"}, …]))
//
// An array states its length and size, what its items hold over every item
// (the keys of its object items, a key some items lack marked "?", each
// with the values it takes: the strings that occur when they are at most
// 8 short ones, else text; the range of its numbers; the booleans that
// occur; null, array, object), and its items: all of up to five, else
// three head and two tail items, each object item by its fields within a
// budget per field; when the first or last item has more than 8 keys, the
// first and last items only, each with as many of its fields as fit, the
// keys that identify it (id, number, name, title, path, url, …) first. An
// object of up to 24 keys is shown field by field (long strings, arrays
// and objects by kind, size and first keys; a small array or object of
// scalars whole); a wider one by as many of its first fields as fit
// beside the names of its other keys, and its largest fields. Keys left
// out are counted and named while their names fit. The part of a value that holds most of its bytes (the largest
// field of an object, when it holds a third of it, or the only item of a
// one-item array) is previewed as a value of its own, four deep at most:
// an array or object, the JSON a string holds, or a long string's head
// and tail. A string that holds base64 of data of a known type (an MCP
// image block's) is shown as the data's size and type, never its
// characters. A text holding JSON, a stream of JSON values or a table is
// previewed as such; a document in a data format (a unified diff, YAML,
// XML, HTML, Markdown) by its structure, then its head and tail. The true
// length or size is always stated, and every
// elision is marked with "…".
//
// The result is valid UTF-8 and never longer than the preview bound of the
// store that holds v ([WithMaxPreview]; [DefaultMaxPreview] for the zero
// Value), whatever the value or handle: when the parts do not fit, items and
// fields are dropped and marked, and as a last resort the line is clipped.
// Its cost is proportional to the preview, not to the value: what it shows
// was recorded at Put, or, for a value no larger than the inline limit
// ([WithInlineLimit]), by its first preview.
//
// For a value kept only in the durable store ([WithMemoryLimit], [Open])
// it returns the preview recorded when the value was stored, when handle
// is the value's own and that preview fits the bound. Otherwise, rarely,
// it reads the value back to render it, and when that fails it states the
// kind and size and that the value is unavailable.
func RenderPreview(handle string, v Value) string {
	return string(appendPreview(nil, handle, v))
}

// appendPreview appends RenderPreview(handle, v) to b, which must be empty
// (its capacity is used).
func appendPreview(b []byte, handle string, v Value) []byte {
	x := v.get()
	limit := x.max
	if limit == 0 {
		limit = DefaultMaxPreview
	}
	if x.disk != nil {
		if p, ok := x.cachedPreview(handle, limit); ok {
			return append(b, p...)
		}
		m, _, err := x.loaded()
		if err != nil {
			return append(b, unavailablePreview(handle, x, limit)...)
		}
		x = m
	}
	if b == nil {
		b = make([]byte, 0, min(limit, DefaultMaxPreview)+64)
	}
	b = appendHandle(b, handle)
	b = append(b, " = "...)
	switch x.kind {
	case KindArray, KindObject:
		b = renderJSON(b, x.index(), limit-len(b))
	case KindText:
		b = renderText(b, x, limit)
	case KindBinary:
		b = renderBinary(b, x)
	default:
		b = renderScalar(b, x, limit)
	}
	return clipFrom(b, 0, limit)
}

// renderJSON appends the preview of the container c in at most budget
// bytes.
func renderJSON(dst []byte, c *container, budget int) []byte {
	start := len(dst)
	if c.kind == KindArray {
		dst = renderArray(dst, c, budget)
	} else {
		dst = renderObject(dst, c, budget)
	}
	return clipFrom(dst, start, budget) // a last resort: the parts are sized to fit
}

// size formats a byte count for reading at a glance, as appendSize does.
func size(n int) string { return string(appendSize(nil, n)) }

// appendSize appends a byte count for reading at a glance: "976 B",
// "1.9 KiB", "95 MiB", in powers of 1024 with three significant digits
// at most (the format of go-humanize's IBytes, without its allocations).
func appendSize(dst []byte, n int) []byte {
	s := uint64(max(n, 0))
	if s < 1024 { // as below, with no fraction: "976 B"
		dst = appendDecimal(dst, s)
		return append(dst, " B"...)
	}
	if s < 1<<40 { // the figures of the floats below, in integers: they agree below 1 TiB
		shift := (bits.Len64(s) - 1) / 10 * 10
		t := (s*10 + 1<<(shift-1)) >> shift // tenths of a unit, half rounded up
		if t < 100 {
			dst = appendDecimal(dst, t/10)
			dst = append(dst, '.', byte('0'+t%10))
		} else { // AppendFloat with no fraction rounds half to even
			w := t / 10
			if f := t % 10; f > 5 || f == 5 && w%2 == 1 {
				w++
			}
			dst = appendDecimal(dst, w)
		}
		dst = append(dst, ' ')
		return append(dst, sizeUnits[shift/10]...)
	}
	e := math.Floor(math.Log(float64(s)) / math.Log(1024))
	val := math.Floor(float64(s)/math.Pow(1024, e)*10+0.5) / 10
	prec := 0
	if val < 10 {
		prec = 1
	}
	dst = strconv.AppendFloat(dst, val, 'f', prec, 64)
	dst = append(dst, ' ')
	return append(dst, sizeUnits[int(e)]...)
}

// appendDecimal appends n in decimal, as strconv.AppendUint does, in
// fewer steps for the short counts and sizes of a stored line.
func appendDecimal(dst []byte, n uint64) []byte {
	if n >= 10000 {
		return strconv.AppendUint(dst, n, 10)
	}
	var b [4]byte
	i := len(b) - 1
	for ; n >= 10; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	b[i] = byte('0' + n)
	return append(dst, b[i:]...)
}

var sizeUnits = [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

func renderScalar(b []byte, x *value, limit int) []byte {
	if len(b)+len(x.raw) <= limit {
		return append(b, x.raw...)
	}
	suffix := " (" + x.kind.String() + ", " + strconv.Itoa(len(x.raw)) + " bytes)"
	b = jsontext.AppendClipped(b, x.raw, limit-len(b)-len(suffix))
	return append(b, suffix...)
}

func renderBinary(b []byte, x *value) []byte {
	b = append(b, "binary(len="...)
	b = appendSize(b, x.n)
	b = append(b, ", type="...)
	b = append(b, x.contentType()...)
	b = append(b, ", sha256="...)
	sum := x.digest()
	b = hex.AppendEncode(b, sum[:8])
	b = append(b, jsontext.Ellipsis...)
	return append(b, ')')
}

// appendList appends "[p, p, …, … K more, p]", the pieces of a list of n
// entries of which the first ones (head) and the last ones (tail) are
// known, in at most budget bytes, brackets included (open and close, such
// as '[' and ']'): as many first entries as fit while room is left for
// the count of those left out and the last entry, which piece appends. A
// list of which nothing fits is "[… N more]".
func appendList[E any](dst []byte, open, close byte, n int, head, tail []E, piece func([]byte, E) []byte, budget int) []byte {
	start := len(dst)
	known := append(head[:len(head):len(head)], tail...)
	if n == 0 || len(known) == 0 {
		return append(dst, open, close)
	}
	last := known[len(known)-1]
	first := head
	if n == len(known) { // every entry known: the tail follows the head
		first = known[:len(known)-1]
	} else if len(tail) == 0 {
		first = head[:len(head)-1]
	}
	var lastBuf [256]byte
	lastPiece := piece(lastBuf[:0], last)
	const more = ", … 9999999 more"
	dst = append(dst, open)
	shown := 0
	for i, e := range first {
		mark := len(dst)
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = piece(dst, e)
		reserve := len(", ") + len(lastPiece) + len("]")
		if n-shown-2 > 0 {
			reserve += len(more)
		}
		if len(dst)-start+reserve > budget {
			dst = dst[:mark]
			break
		}
		shown++
	}
	sep := func() {
		if len(dst)-start > 1 {
			dst = append(dst, ", "...)
		}
	}
	leftOut := n - shown - 1 // between the entries shown and the last
	moreLen := func(k int) int { return len(", … more") + len(strconv.Itoa(k)) + 1 }
	showLast := len(dst)-start+len(", ")+len(lastPiece)+len("]") <= budget
	if leftOut > 0 {
		showLast = showLast && len(dst)-start+moreLen(leftOut)+len(", ")+len(lastPiece)+len("]") <= budget
	}
	if !showLast {
		leftOut++
	}
	if leftOut > 0 {
		sep()
		dst = append(dst, jsontext.Ellipsis+" "...)
		dst = strconv.AppendInt(dst, int64(leftOut), 10)
		dst = append(dst, " more"...)
	}
	if showLast {
		sep()
		dst = append(dst, lastPiece...)
	}
	return clipFrom(append(dst, close), start, budget)
}
