package values

import (
	"encoding/hex"
	"math"
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
//	r3 = table(rows=4, cols=6, bytes=232 B, format=aligned, header=[Filesystem, Size, …], […])
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
// previewed as such. The true length or size is always stated, and every
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
		dst = strconv.AppendUint(dst, s, 10)
		return append(dst, " B"...)
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
	b = append(b, x.ctype...)
	b = append(b, ", sha256="...)
	b = hex.AppendEncode(b, x.sum[:8])
	b = append(b, jsontext.Ellipsis...)
	return append(b, ')')
}
