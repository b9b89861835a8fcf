package gojq

// agentvalues: this file is not in upstream gojq. It holds the metered
// versions of the builtins that build values or work in proportion to
// their input, which the compiler calls in place of internalFuncs'
// callbacks ([internalCallback]). Each charges what it builds to the
// run's meter before it builds it, and ticks the meter as it works; with
// a nil meter it behaves as upstream's.

import (
	"encoding/base64"
	"strings"
	"time"
)

// maxIntBits bounds the integers computed exactly: a result of more bits
// is computed as a float (±Inf: it is beyond float64's range), as jq
// computes every number, and a number literal of more digits is read as a
// float. Arithmetic on larger integers would take time that grows faster
// than their size (a product of two 2^30-bit integers takes minutes) in
// one step that no deadline can stop.
const maxIntBits = 1 << 14

// maxIntDigits is the most decimal digits of an integer read exactly
// (maxIntBits bits hold 4932 digits).
const maxIntDigits = 4932

var meteredFuncs map[string]meteredFunc

func init() {
	meteredFuncs = map[string]meteredFunc{
		"keys":           meteredFunc0(keysMetered),
		"add":            meteredFunc0(funcAddMetered),
		"tostring":       meteredFunc0(func(m *meter, v any) any { return toStringMetered(m, v, "a string (tostring)") }),
		"reverse":        meteredFunc0(reverseMetered),
		"contains":       meteredFunc1(containsMetered),
		"inside":         meteredFunc1(func(m *meter, v, x any) any { return containsMetered(m, x, v) }),
		"indices":        meteredFunc1(func(m *meter, v, x any) any { return indexFunc(m, "indices", v, x, indices) }),
		"index":          meteredFunc1(func(m *meter, v, x any) any { return indexFunc(m, "index", v, x, indexFirst) }),
		"rindex":         meteredFunc1(func(m *meter, v, x any) any { return indexFunc(m, "rindex", v, x, indexLast) }),
		"explode":        meteredFunc0(explodeBuiltin),
		"implode":        meteredFunc0(implodeMetered),
		"split":          meteredFunc1(splitMetered),
		"join":           meteredFunc1(joinMetered),
		"ascii_downcase": meteredFunc0(func(m *meter, v any) any { return asciiCaseMetered(m, v, funcASCIIDowncase) }),
		"ascii_upcase":   meteredFunc0(func(m *meter, v any) any { return asciiCaseMetered(m, v, funcASCIIUpcase) }),
		"tojson":         meteredFunc0(func(m *meter, v any) any { return jsonMarshalMetered(m, v, "a string (tojson)") }),
		"fromjson":       meteredFunc0(fromJSONMetered),
		"format":         meteredFunc1(formatMetered),
		"_tohtml":        meteredFunc0(toHTMLMetered),
		"_touri":         meteredFunc0(toURIMetered),
		"_tourid":        meteredFunc0(toURIdMetered),
		"_tocsv":         meteredFunc0(toCSVMetered),
		"_totsv":         meteredFunc0(toTSVMetered),
		"_tosh":          meteredFunc0(toShMetered),
		"_tobase64":      meteredFunc0(toBase64Metered),
		"_tobase64d":     meteredFunc0(toBase64dMetered),
		"_index":         meteredFunc2(func(m *meter, _, v, x any) any { return index2Metered(m, v, x) }),
		"_add":           meteredFunc2(func(m *meter, _, l, r any) any { return opAdd(m, l, r) }),
		"_subtract":      meteredFunc2(func(m *meter, _, l, r any) any { return opSub(m, l, r) }),
		"_multiply":      meteredFunc2(func(m *meter, _, l, r any) any { return opMul(m, l, r) }),
		"_divide":        meteredFunc2(func(m *meter, _, l, r any) any { return opDiv(m, l, r) }),
		"_equal":         compareOp(func(c int) bool { return c == 0 }),
		"_notequal":      compareOp(func(c int) bool { return c != 0 }),
		"_greater":       compareOp(func(c int) bool { return c > 0 }),
		"_less":          compareOp(func(c int) bool { return c < 0 }),
		"_greatereq":     compareOp(func(c int) bool { return c >= 0 }),
		"_lesseq":        compareOp(func(c int) bool { return c <= 0 }),
		"flatten":        flattenMetered,
		"min":            meteredFunc0(minMetered),
		"_min_by":        meteredFunc1(minByMetered),
		"max":            meteredFunc0(maxMetered),
		"_max_by":        meteredFunc1(maxByMetered),
		"sort":           meteredFunc0(func(m *meter, v any) any { return sortBy(m, "sort", v, v) }),
		"_sort_by":       meteredFunc1(func(m *meter, v, x any) any { return sortBy(m, "sort_by", v, x) }),
		"_group_by":      meteredFunc1(groupByMetered),
		"unique":         meteredFunc0(func(m *meter, v any) any { return uniqueBy(m, "unique", v, v) }),
		"_unique_by":     meteredFunc1(func(m *meter, v, x any) any { return uniqueBy(m, "unique_by", v, x) }),
		"setpath":        meteredFunc2(func(m *meter, v, p, n any) any { return setpath(m, v, p, n, nil) }),
		"delpaths":       meteredFunc1(func(m *meter, v, p any) any { return delpaths(m, v, p, allocator{}) }),
		"getpath":        meteredFunc1(getpathMetered),
		"transpose":      meteredFunc0(transposeMetered),
		"bsearch":        meteredFunc1(bsearchMetered),
		"strftime":       meteredFunc1(func(m *meter, v, x any) any { return formatTimeMetered(m, "strftime", v, x, time.UTC) }),
		"strflocaltime":  meteredFunc1(func(m *meter, v, x any) any { return formatTimeMetered(m, "strflocaltime", v, x, time.Local) }),
		"_captures":      meteredFunc0(capturesMetered),
	}
}

// internalCallback returns what the compiler calls for the internal
// function name: its metered version if it has one, else its callback.
func internalCallback(name string) any {
	if f, ok := meteredFuncs[name]; ok {
		return f
	}
	return internalFuncs[name].callback
}

func meteredFunc0(f func(*meter, any) any) meteredFunc {
	return func(m *meter, v any, _ []any) any { return f(m, v) }
}

func meteredFunc1(f func(_ *meter, _, _ any) any) meteredFunc {
	return func(m *meter, v any, args []any) any { return f(m, v, args[0]) }
}

func meteredFunc2(f func(_ *meter, _, _, _ any) any) meteredFunc {
	return func(m *meter, v any, args []any) any { return f(m, v, args[0], args[1]) }
}

// growBuilder charges the growth of sb for n more bytes, before it grows.
func growBuilder(m *meter, sb *strings.Builder, n int, what string) {
	if m != nil && sb.Len()+n > sb.Cap() {
		m.alloc(addSize(2*sb.Cap(), n), what)
		sb.Grow(n)
	}
}

func keysMetered(m *meter, v any) any {
	switch v := v.(type) {
	case []any:
		m.alloc(addSize(sizeArray, mulSize(len(v), sizeAny+sizeNumber)), "an array (keys)")
	case map[string]any:
		m.alloc(addSize(sizeArray, mulSize(len(v), sizeAny+2*sizeString)), "an array (keys)")
		m.tick(len(v))
	}
	return funcKeys(v)
}

func reverseMetered(m *meter, v any) any {
	if vs, ok := v.([]any); ok {
		m.alloc(addSize(sizeArray, mulSize(len(vs), sizeAny)), "an array (reverse)")
	}
	return funcReverse(v)
}

func explodeBuiltin(m *meter, v any) any {
	s, ok := v.(string)
	if !ok {
		return &func0TypeError{"explode", v}
	}
	return explodeMetered(m, s)
}

func splitMetered(m *meter, v, x any) any {
	s, ok := v.(string)
	if !ok {
		return &func1TypeError{"split", v, x}
	}
	t, ok := x.(string)
	if !ok {
		return &func1TypeError{"split", v, x}
	}
	return splitStringMetered(m, s, t)
}

// asciiCaseMetered charges the string f returns: its size, and after f,
// what invalid UTF-8 grew it by (each invalid byte becomes U+FFFD).
func asciiCaseMetered(m *meter, v any, f func(any) any) any {
	s, ok := v.(string)
	if ok {
		m.alloc(addSize(sizeString, len(s)), "a string (ascii case)")
	}
	w := f(v)
	if t, ok := w.(string); ok && len(t) > len(s) {
		m.alloc(len(t)-len(s), "a string (ascii case)")
	}
	return w
}

// fromJSONMetered charges what decoding the text builds before decoding
// it: the text copied twice (the decoder's buffer, the strings), and a
// slot, an entry or a boxed value for each value the text holds (counted
// by its commas, colons and brackets outside strings).
func fromJSONMetered(m *meter, v any) any {
	s, ok := v.(string)
	if ok && m != nil {
		values, in, esc := 1, false, false
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case in:
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					in = false
				}
			case c == '"':
				in = true
			case c == ',' || c == ':' || c == '[' || c == '{':
				values++
			}
		}
		m.tick(len(s) >> 4)
		m.alloc(addSize(mulSize(len(s), 2), mulSize(values, sizeEntryGrown+sizeAny+sizeString)), "the value of fromjson")
	}
	return funcFromJSON(v)
}

func toHTMLMetered(m *meter, v any) any {
	s := toStringMetered(m, v, "a string (@html)")
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>', '&', '\'', '"':
			n += 5 // &quot; is the longest
		}
	}
	m.tick(len(s) >> 6)
	m.alloc(addSize(sizeString, n), "a string (@html)")
	return funcToHTML(s)
}

func toURIMetered(m *meter, v any) any {
	s := toStringMetered(m, v, "a string (@uri)")
	m.tick(len(s) >> 6)
	// Escaped, each byte takes at most 3; then + becomes %20, in a copy.
	m.alloc(addSize(sizeString, mulSize(len(s), 6)), "a string (@uri)")
	return funcToURI(s)
}

func toURIdMetered(m *meter, v any) any {
	s := toStringMetered(m, v, "a string (@urid)")
	m.tick(len(s) >> 6)
	m.alloc(addSize(sizeString, mulSize(len(s), 3)), "a string (@urid)")
	return funcToURId(s)
}

func toCSVMetered(m *meter, v any) any {
	return formatJoinMetered(m, "csv", v, ",", func(s string) string {
		return `"` + csvEscaper.Replace(s) + `"`
	})
}

func toTSVMetered(m *meter, v any) any {
	return formatJoinMetered(m, "tsv", v, "\t", tsvEscaper.Replace)
}

func toShMetered(m *meter, v any) any {
	if _, ok := v.([]any); !ok {
		v = []any{v}
	}
	return formatJoinMetered(m, "sh", v, " ", func(s string) string {
		return "'" + shEscaper.Replace(s) + "'"
	})
}

func toBase64Metered(m *meter, v any) any {
	s := toStringMetered(m, v, "a string (@base64)")
	m.tick(len(s) >> 6)
	// The bytes copied, then encoded (4 for 3), then copied to a string.
	m.alloc(addSize(sizeString, addSize(len(s), mulSize(base64.StdEncoding.EncodedLen(len(s)), 2))), "a string (@base64)")
	return funcToBase64(s)
}

func toBase64dMetered(m *meter, v any) any {
	s := toStringMetered(m, v, "a string (@base64d)")
	m.tick(len(s) >> 6)
	m.alloc(addSize(sizeString, mulSize(base64.StdEncoding.DecodedLen(len(s)), 2)), "a string (@base64d)")
	return funcToBase64d(s)
}

func capturesMetered(m *meter, v any) any {
	if vs, ok := v.([]any); ok {
		m.alloc(objectSize(len(vs)), "an object (captures)")
	}
	return funcCaptures(v)
}
