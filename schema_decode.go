package values

import (
	"encoding/json"
	"unicode/utf8"
)

// maxFastDepth bounds the nesting decodeArgs decodes itself (it recurses);
// deeper arguments, which the limits of validation refuse before they are
// decoded anyway, take encoding/json's decoder.
const maxFastDepth = 64

// decodeArgs decodes args, one JSON value with whitespace around it, as
// encoding/json's Decoder with UseNumber decodes it into an any (objects
// as map[string]any, arrays as []any, never nil, numbers as json.Number),
// and reports true; false, with nothing decoded, for anything else (not
// valid JSON, or too deep), which the caller leaves to that decoder, for
// its errors. It is the decoding of the arguments of every call
// validated against a schema: a tenth of the allocations of the Decoder
// (its reader, its buffer, its copy of the value) and a single pass, where
// the Decoder scans the value twice. FuzzDecodeArgs holds it to the
// Decoder's result.
func decodeArgs(args []byte) (any, bool) {
	d := argsDecoder{b: args}
	d.space()
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.b)
}

// argsDecoder is the state of decodeArgs: the text b, read up to i.
type argsDecoder struct {
	b []byte
	i int
}

func (d *argsDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *argsDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *argsDecoder) literal(s string) bool {
	if len(d.b)-d.i < len(s) || string(d.b[d.i:d.i+len(s)]) != s {
		return false
	}
	d.i += len(s)
	return true
}

func (d *argsDecoder) object(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	m := make(map[string]any)
	d.i++ // {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k.(string)] = v // the last of duplicate keys, as encoding/json
		if more, ok := d.next('}'); !ok || !more {
			return m, ok
		}
	}
}

func (d *argsDecoder) array(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	a := make([]any, 0)
	d.i++ // [
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := d.next(']'); !ok || !more {
			return a, ok
		}
	}
}

// next reads what follows a member or element of a container that end
// closes: a comma, then more (more), or end (the container's end); ok is
// false for anything else.
func (d *argsDecoder) next(end byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.b) {
		return false, false
	}
	switch d.b[d.i] {
	case ',':
		d.i++
		d.space()
		return true, true
	case end:
		d.i++
		return false, true
	}
	return false, false
}

// string decodes the string at i. One with no escape and valid UTF-8 is
// its bytes; any other is left to encoding/json, for its decoding of
// escapes, surrogates and invalid bytes.
func (d *argsDecoder) string() (any, bool) {
	start := d.i
	d.i++ // "
	plain := true
	for {
		if d.i >= len(d.b) {
			return nil, false
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			body := d.b[start+1 : d.i-1]
			if plain && utf8.Valid(body) {
				return string(body), true
			}
			var s string
			if json.Unmarshal(d.b[start:d.i], &s) != nil {
				return nil, false
			}
			return s, true
		case c == '\\':
			plain = false
			d.i += 2 // the escaped byte cannot end the string; Unmarshal checks the escape
		case c < 0x20:
			return nil, false
		default:
			d.i++
		}
	}
}

// number decodes the number at i, checked against JSON's grammar, as a
// json.Number of its text.
func (d *argsDecoder) number() (any, bool) {
	start := d.i
	if d.b[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.b) && d.b[d.i] == '0':
		d.i++
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if !d.digits() {
			return nil, false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
	}
	return json.Number(d.b[start:d.i]), true
}

// digits moves past the digits at i and reports whether there was one.
func (d *argsDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}
