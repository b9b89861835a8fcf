package values

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// The fast path of validation. Most tool schemas are a handful of typed
// properties, some required, no others allowed: the validator's decoding
// of the arguments into maps, and its walk building a schema path per
// application, cost a small call more than everything else the proxy does
// to it. A fastSchema is such a schema, read once when it is compiled,
// and admits checks raw arguments against it in one walk with no
// allocation. It only ever proves arguments valid: whatever it cannot
// decide (a keyword it does not know, an escape in a key, a number that is
// not a plain integer), and every argument that fails, goes to the
// validator, which finds the same outcome and words the violations.
// FuzzFastSchema holds it to the validator: arguments it admits, the
// validator accepts.

// A fastSchema is a subschema of the subset the fast path reads; nil
// stands for the schema true.
type fastSchema struct {
	never bool  // the schema false
	types uint8 // the types allowed, as typeBits; 0: any

	props    map[string]fastProp // the properties named in properties or required
	required uint64              // the bits of the required properties
	noOthers bool                // additionalProperties is false
	others   *fastSchema         // additionalProperties' schema, when one

	items              *fastSchema
	hasItems           bool
	minItems, maxItems int // -1 where not given

	minLength, maxLength int      // -1 where not given
	enum                 []string // the strings allowed (enum, or const)
	hasEnum              bool

	// Bounds on numbers, each when its has bit is set.
	min, max, exMin, exMax int64
	has                    uint8 // hasMin, hasMax, hasExMin, hasExMax

	anyOf, allOf []*fastSchema
}

// A fastProp is a property of an object schema: its schema (nil: true),
// and its bit in fastSchema.required when it is required.
type fastProp struct {
	schema *fastSchema
	bit    uint64
	named  bool // in properties
}

// The types of JSON Schema's "type", as bits.
const (
	typeObject = 1 << iota
	typeArray
	typeString
	typeNumber
	typeInteger
	typeBoolean
	typeNull
)

var typeBits = map[string]uint8{
	"object": typeObject, "array": typeArray, "string": typeString, "number": typeNumber,
	"integer": typeInteger, "boolean": typeBoolean, "null": typeNull,
}

const (
	hasMin = 1 << iota
	hasMax
	hasExMin
	hasExMax
)

// maxRequiredFast is the most properties a subschema of the fast path
// may require: one bit each.
const maxRequiredFast = 64

// fastAnnotations are the keywords that never fail a value, which the fast
// path reads past. ("format" is one in schemas that name draft 2019-09 or
// 2020-12; see compileFast.)
var fastAnnotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true,
}

// compileFast reads the schema raw, which CompileSchema compiled, as a
// fastSchema, and counts its subschemas; nil when it is not of the subset
// (then every validation takes the validator).
func compileFast(raw []byte) (f *fastSchema, nodes int) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, 0
	}
	// The validator checks "format" in draft-07 schemas, and in schemas
	// that name no draft (read as 2020-12 otherwise); it is an annotation
	// in those that name 2019-09 or 2020-12.
	formatAsserted := true
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["$schema"]; ok {
			switch s {
			case "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#",
				"https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2019-09/schema#":
				formatAsserted = false
			case "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema":
			default:
				return nil, 0 // an older draft, whose keywords differ
			}
		}
	}
	c := fastCompiler{formatAsserted: formatAsserted}
	f, ok := c.schema(v, true)
	if !ok {
		return nil, 0
	}
	return f, c.nodes
}

// fastCompiler is the state of compileFast.
type fastCompiler struct {
	formatAsserted bool
	nodes          int
}

// schema reads the subschema v; false when it is not of the subset.
func (c *fastCompiler) schema(v any, root bool) (*fastSchema, bool) {
	c.nodes++
	switch v := v.(type) {
	case bool:
		if v {
			return nil, true
		}
		return &fastSchema{never: true}, true
	case map[string]any:
		f := &fastSchema{minItems: -1, maxItems: -1, minLength: -1, maxLength: -1}
		var required []any
		for k, kv := range v {
			ok := true
			switch k {
			case "$schema":
				ok = root
			case "format":
				ok = !c.formatAsserted
			case "type":
				ok = f.readType(kv)
			case "properties":
				props, isMap := kv.(map[string]any)
				if ok = isMap; ok {
					if f.props == nil {
						f.props = make(map[string]fastProp, len(props))
					}
					for name, ps := range props {
						s, sok := c.schema(ps, false)
						if !sok {
							return nil, false
						}
						p := f.props[name]
						p.schema, p.named = s, true
						f.props[name] = p
					}
				}
			case "required":
				required, ok = kv.([]any)
			case "additionalProperties":
				switch a := kv.(type) {
				case bool:
					f.noOthers = !a
					c.nodes++
				default:
					f.others, ok = c.schema(a, false)
				}
			case "items":
				if _, isArray := kv.([]any); isArray {
					return nil, false // draft-07's tuple form
				}
				f.items, ok = c.schema(kv, false)
				f.hasItems = true
			case "minItems", "maxItems", "minLength", "maxLength":
				var n int64
				if n, ok = fastInt(kv); ok && n >= 0 && n <= math.MaxInt32 {
					switch k {
					case "minItems":
						f.minItems = int(n)
					case "maxItems":
						f.maxItems = int(n)
					case "minLength":
						f.minLength = int(n)
					case "maxLength":
						f.maxLength = int(n)
					}
				} else {
					ok = false
				}
			case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
				var n int64
				if n, ok = fastInt(kv); ok {
					switch k {
					case "minimum":
						f.min, f.has = n, f.has|hasMin
					case "maximum":
						f.max, f.has = n, f.has|hasMax
					case "exclusiveMinimum":
						f.exMin, f.has = n, f.has|hasExMin
					case "exclusiveMaximum":
						f.exMax, f.has = n, f.has|hasExMax
					}
				}
			case "enum":
				var list []any
				if list, ok = kv.([]any); ok {
					if f.hasEnum {
						return nil, false // "const" read first (a map's order): as below
					}
					f.hasEnum = true
					for _, e := range list {
						s, isString := e.(string)
						if !isString {
							return nil, false
						}
						f.enum = append(f.enum, s)
					}
				}
			case "const":
				var s string
				if s, ok = kv.(string); ok {
					if f.hasEnum {
						return nil, false // both: rare enough to leave to the validator
					}
					f.hasEnum, f.enum = true, []string{s}
				}
			case "anyOf", "allOf":
				list, isList := kv.([]any)
				if ok = isList && len(list) > 0; ok {
					for _, b := range list {
						s, sok := c.schema(b, false)
						if !sok {
							return nil, false
						}
						if k == "anyOf" {
							f.anyOf = append(f.anyOf, s)
						} else {
							f.allOf = append(f.allOf, s)
						}
					}
				}
			default:
				ok = fastAnnotations[k]
			}
			if !ok {
				return nil, false
			}
		}
		if len(required) > maxRequiredFast {
			return nil, false
		}
		for i, r := range required {
			name, ok := r.(string)
			if !ok {
				return nil, false
			}
			if f.props == nil {
				f.props = map[string]fastProp{}
			}
			p := f.props[name]
			p.bit |= 1 << i
			f.props[name] = p
			f.required |= 1 << i
		}
		return f, true
	}
	return nil, false
}

// readType reads the value of "type" into f.types.
func (f *fastSchema) readType(v any) bool {
	switch v := v.(type) {
	case string:
		f.types = typeBits[v]
		return f.types != 0
	case []any:
		for _, t := range v {
			s, _ := t.(string)
			b := typeBits[s]
			if b == 0 {
				return false
			}
			f.types |= b
		}
		return f.types != 0
	}
	return false
}

// fastInt reads a bound of the schema: an integer written without a
// fraction or an exponent, that fits an int64.
func fastInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	return plainInt([]byte(n))
}

// plainInt reads the JSON number d when it is an integer of at most 18
// digits written without a fraction or an exponent.
func plainInt(d []byte) (int64, bool) {
	digits := d
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(d), 10, 64)
	return n, err == nil
}

// admits reports whether the valid JSON args, of the given shape, are
// proven valid against the schema of root, of nodes subschemas. It
// declines (false) arguments whose validation the validator might stop
// over its budget: more than 31 levels deep, where an application counts
// more than one step, or more subschemas times values than the budget's
// fixed part (in a schema without references a subschema applies to a
// value at most once).
func (f *fastSchema) admits(nodes int, args []byte, shape argsShape) bool {
	if shape.depth > 31 || nodes*shape.values > validationSteps {
		return false
	}
	i := jsontext.SkipSpace(args, 0)
	return f.accepts(args[i:jsontext.SkipValue(args, i)])
}

// accepts reports whether the valid JSON value d is proven valid against
// f.
func (f *fastSchema) accepts(d []byte) bool {
	if f == nil {
		return true
	}
	if f.never {
		return false
	}
	if f.types != 0 && !f.typed(d) {
		return false
	}
	switch d[0] {
	case '{':
		if (f.props != nil || f.noOthers || f.others != nil) && !f.object(d) {
			return false
		}
	case '[':
		if f.hasItems || f.minItems >= 0 || f.maxItems >= 0 {
			n, ok := 0, true
			jsontext.EachChild(d, func(_, v []byte) bool {
				n++
				ok = f.items.accepts(v)
				return ok
			})
			if !ok || n < f.minItems || f.maxItems >= 0 && n > f.maxItems {
				return false
			}
		}
	case '"':
		if (f.hasEnum || f.minLength >= 0 || f.maxLength >= 0) && !f.text(d[1:len(d)-1]) {
			return false
		}
	case 't', 'f', 'n':
	default:
		if f.has != 0 && !f.bounded(d) {
			return false
		}
	}
	if f.hasEnum && d[0] != '"' {
		return false
	}
	for _, s := range f.allOf {
		if !s.accepts(d) {
			return false
		}
	}
	if f.anyOf != nil {
		for _, s := range f.anyOf {
			if s.accepts(d) {
				return true
			}
		}
		return false
	}
	return true
}

// typed reports whether d is of one of f's types; a number with a
// fraction or an exponent is not proven an integer.
func (f *fastSchema) typed(d []byte) bool {
	var t uint8
	switch d[0] {
	case '{':
		t = typeObject
	case '[':
		t = typeArray
	case '"':
		t = typeString
	case 't', 'f':
		t = typeBoolean
	case 'n':
		t = typeNull
	default:
		t = typeNumber
		if bytes.IndexAny(d, ".eE") < 0 {
			t |= typeInteger
		}
	}
	return f.types&t != 0
}

// object reports whether the object d is proven to have the properties f
// requires, each of them and the others valid.
func (f *fastSchema) object(d []byte) bool {
	ok, seen := true, uint64(0)
	jsontext.EachChild(d, func(k, v []byte) bool {
		name := k[1 : len(k)-1]
		if !plainText(name) {
			ok = false // decoded, it may name another property
			return false
		}
		p := f.props[string(name)] // the zero fastProp when it names none
		seen |= p.bit
		switch {
		case p.named:
			ok = p.schema.accepts(v)
		case f.noOthers:
			ok = false
		default:
			ok = f.others.accepts(v)
		}
		return ok
	})
	return ok && seen&f.required == f.required
}

// text reports whether the string body s is proven within f's enum and
// lengths.
func (f *fastSchema) text(s []byte) bool {
	if !plainText(s) {
		return false
	}
	if f.hasEnum {
		found := false
		for _, e := range f.enum {
			if string(s) == e {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if f.minLength >= 0 || f.maxLength >= 0 {
		n := utf8.RuneCount(s)
		if n < f.minLength || f.maxLength >= 0 && n > f.maxLength {
			return false
		}
	}
	return true
}

// plainText reports whether the body of a JSON string s decodes to
// itself: no escape, and valid UTF-8 (invalid bytes decode to U+FFFD).
func plainText(s []byte) bool {
	for i, c := range s {
		if c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			return bytes.IndexByte(s[i:], '\\') < 0 && utf8.Valid(s[i:])
		}
	}
	return true
}

// bounded reports whether the number d is proven within f's bounds.
func (f *fastSchema) bounded(d []byte) bool {
	n, ok := plainInt(d)
	if !ok {
		return false
	}
	return (f.has&hasMin == 0 || n >= f.min) && (f.has&hasMax == 0 || n <= f.max) &&
		(f.has&hasExMin == 0 || n > f.exMin) && (f.has&hasExMax == 0 || n < f.exMax)
}
