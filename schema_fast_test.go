package values

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentvalues/values/internal/jsontext"
)

// TestFastSchema checks which schemas and arguments the fast path of
// validation decides, and that what it admits the validator accepts.
func TestFastSchema(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		fast         bool     // the schema is of the fast path's subset
		admitted     []string // arguments it proves valid
		declined     []string // arguments it leaves to the validator
	}{
		{
			// As the go-sdk infers a schema from a Go struct.
			name:   "go-sdk",
			schema: `{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"a file"},"limit":{"type":"integer","minimum":1,"maximum":100},"tags":{"type":["null","array"],"items":{"type":"string"}}},"additionalProperties":false}`,
			fast:   true,
			admitted: []string{
				`{"path":"a"}`, ` {"path":"a","limit":100,"tags":null} `, `{"path":"é","tags":["x","y"]}`,
			},
			declined: []string{
				`{}`, `{"path":1}`, `{"path":"a","other":1}`, `{"path":"a","limit":0}`, `{"path":"a","limit":101}`,
				`{"path":"a","limit":1.0}`, `{"p\u0061th":"a"}`, `{"path":"a","tags":[1]}`, `[]`,
			},
		},
		{
			// As zod-to-json-schema writes one, for TypeScript servers.
			name:     "zod draft-07",
			schema:   `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"mode":{"type":"string","enum":["fast","slow"]},"n":{"type":"number","exclusiveMinimum":0},"name":{"type":"string","minLength":2,"maxLength":3}},"required":["mode"],"additionalProperties":false}`,
			fast:     true,
			admitted: []string{`{"mode":"fast"}`, `{"mode":"slow","n":1,"name":"ab"}`, `{"mode":"slow","name":"été"}`},
			declined: []string{`{"mode":"medium"}`, `{"mode":"fast","n":0}`, `{"mode":"fast","n":0.5}`, `{"mode":"fast","name":"a"}`, `{"mode":"fast","name":"abcd"}`, `{"mode":"f\u0061st"}`},
		},
		{
			// As pydantic (Python's FastMCP) writes an optional field.
			name:     "pydantic",
			schema:   `{"properties":{"q":{"title":"Q","type":"string"},"page":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null,"title":"Page"}},"required":["q"],"title":"searchArguments","type":"object"}`,
			fast:     true,
			admitted: []string{`{"q":"x"}`, `{"q":"x","page":null}`, `{"q":"x","page":3,"extra":[1,{"a":2}]}`},
			declined: []string{`{"q":"x","page":"3"}`, `{"page":1}`},
		},
		{name: "empty", schema: `{}`, fast: true, admitted: []string{`{}`, `[1]`, `"x"`}},
		{name: "draft-07 format", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string","format":"uri"}`},
		{name: "format, no draft", schema: `{"type":"string","format":"uri"}`},
		{name: "2020-12 format", schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"string","format":"uri"}`, fast: true, admitted: []string{`"not a uri"`}},
		{name: "pattern", schema: `{"type":"object","properties":{"id":{"type":"string","pattern":"^a"}}}`},
		{name: "ref", schema: `{"$defs":{"n":{"type":"integer"}},"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}`},
		{name: "oneOf", schema: `{"oneOf":[{"type":"string"},{"type":"integer"}]}`},
		{name: "draft-04", schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`},
		{name: "tuple", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`},
		{name: "false", schema: `{"properties":{"x":false}}`, fast: true, admitted: []string{`{}`}, declined: []string{`{"x":1}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := CompileSchema([]byte(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			if (s.fast != nil) != c.fast {
				t.Fatalf("fast path: %v, want %v", s.fast != nil, c.fast)
			}
			for _, args := range append(append([]string(nil), c.admitted...), c.declined...) {
				_, _, shape := checkLimits([]byte(args))
				admitted := s.fast != nil && s.fast.admits(s.fastNodes, []byte(args), shape)
				want := false
				for _, a := range c.admitted {
					want = want || a == args
				}
				if admitted != want {
					t.Errorf("%s: admitted %v, want %v", args, admitted, want)
				}
				vs, _, err := s.violations([]byte(args), shape)
				if admitted && (err != nil || len(vs) > 0) {
					t.Errorf("%s: admitted, but the validator says %v %v", args, vs, err)
				}
			}
		})
	}
}

// TestFastSchemaBudget checks that the fast path leaves to the validator
// the arguments whose validation the validator might stop over its
// budget, which the fast path does not count.
func TestFastSchemaBudget(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"integer"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	small := []byte(`[1,"a",2]`)
	_, _, shape := checkLimits(small)
	if !s.fast.admits(s.fastNodes, small, shape) {
		t.Fatal("small arguments not admitted")
	}
	large := make([]byte, 0, 60000)
	large = append(large, '[')
	for i := range 10000 {
		if i > 0 {
			large = append(large, ',')
		}
		large = append(large, '1')
	}
	large = append(large, ']')
	_, _, shape = checkLimits(large)
	if s.fast.admits(s.fastNodes, large, shape) {
		t.Fatalf("%d values under a schema of %d subschemas admitted", shape.values, s.fastNodes)
	}
	if err := s.Validate(large); err != nil {
		t.Fatal(err) // and the validator accepts them
	}
}

// FuzzFastSchema holds the fast path of validation to the validator:
// arguments it admits against a schema of its subset (made from the
// fuzzer's bytes), the validator accepts.
func FuzzFastSchema(f *testing.F) {
	for _, seed := range []struct{ schema, args string }{
		{"\x01\x02\x03\x04", `{"a":"x","b":1}`},
		{"\x05\x00\x07\x01\x02", `{"a":[1,2],"c":null}`},
		{"\x10\x20\x30\x40\x50\x60", `["x",1,true]`},
		{"\xff\xfe\xfd", `{"b":{"a":"é"},"a b":-3}`},
		{"\x03\x03\x03\x03\x03\x03\x03", `{"a":"ab","b":{"c":[{"a":1}]}}`},
	} {
		f.Add([]byte(seed.schema), []byte(seed.args))
	}
	f.Fuzz(func(t *testing.T, seed, args []byte) {
		g := &schemaGen{b: seed}
		schema, err := json.Marshal(g.schema(0, true))
		if err != nil {
			t.Fatal(err)
		}
		s, err := CompileSchema(schema)
		if err != nil || s.fast == nil {
			return
		}
		// The fuzzer's arguments, and arguments made from the rest of
		// its seed, which name the schema's properties.
		made, err := json.Marshal(g.value(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]byte{args, made} {
			if jsontext.Valid(args) != nil {
				continue
			}
			limitVs, _, shape := checkLimits(args)
			if len(limitVs) > 0 || !s.fast.admits(s.fastNodes, args, shape) {
				continue
			}
			vs, _, err := s.violations(args, shape)
			if err != nil || len(vs) > 0 {
				t.Fatalf("schema %s admits %s, which the validator refuses: %v %v", schema, args, vs, err)
			}
		}
	})
}

// value makes a JSON value from the generator's bytes: objects keyed by
// the names its schemas use.
func (g *schemaGen) value(depth int) any {
	switch k := g.next(9); {
	case k == 0 && depth < 3:
		m := map[string]any{}
		for range g.next(4) {
			m[genNames[g.next(len(genNames))]] = g.value(depth + 1)
		}
		return m
	case k == 1 && depth < 3:
		var a []any
		for range g.next(4) {
			a = append(a, g.value(depth+1))
		}
		return a
	case k == 2:
		return []string{"x", "ab", "é", "1", "abcd", ""}[g.next(6)]
	case k == 3:
		return json.Number([]string{"0", "-3", "2", "1.0", "2.5", "1e1", "-0"}[g.next(7)])
	case k == 4:
		return g.next(2) == 0
	case k == 5:
		return nil
	default:
		return g.next(7) - 3
	}
}

// A schemaGen makes a schema of the fast path's subset (and now and then
// a keyword outside it) from bytes.
type schemaGen struct {
	b []byte
	i int
}

func (g *schemaGen) next(n int) int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1]) % n
}

var genNames = []string{"a", "b", "c", "a b", "é"}

func (g *schemaGen) schema(depth int, root bool) any {
	switch g.next(12) {
	case 0:
		return true
	case 1:
		if depth > 0 {
			return false
		}
	}
	m := map[string]any{}
	if root {
		m["$schema"] = []any{nil, "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema"}[g.next(4)]
		if m["$schema"] == nil {
			delete(m, "$schema")
		}
	}
	for range 1 + g.next(4) {
		switch g.next(16) {
		case 0, 1:
			types := []string{"object", "array", "string", "number", "integer", "boolean", "null"}
			if g.next(3) == 0 {
				m["type"] = []string{types[g.next(7)], types[g.next(7)]}
			} else {
				m["type"] = types[g.next(7)]
			}
		case 2, 3:
			if depth < 3 {
				props := map[string]any{}
				for range 1 + g.next(3) {
					props[genNames[g.next(len(genNames))]] = g.schema(depth+1, false)
				}
				m["properties"] = props
			}
		case 4:
			var req []string
			for range 1 + g.next(2) {
				req = append(req, genNames[g.next(len(genNames))])
			}
			m["required"] = req
		case 5:
			if g.next(2) == 0 || depth >= 3 {
				m["additionalProperties"] = g.next(2) == 0
			} else {
				m["additionalProperties"] = g.schema(depth+1, false)
			}
		case 6:
			if depth < 3 {
				m["items"] = g.schema(depth+1, false)
			}
		case 7:
			var enum []any
			for range 1 + g.next(3) {
				enum = append(enum, []string{"x", "ab", "é", "1"}[g.next(4)])
			}
			m["enum"] = enum
		case 8:
			m[[]string{"minLength", "maxLength", "minItems", "maxItems"}[g.next(4)]] = g.next(4)
		case 9:
			m[[]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}[g.next(4)]] = g.next(7) - 3
		case 10:
			if depth < 3 {
				var list []any
				for range 1 + g.next(3) {
					list = append(list, g.schema(depth+1, false))
				}
				m[[]string{"anyOf", "allOf"}[g.next(2)]] = list
			}
		case 11:
			m["const"] = []string{"x", "ab"}[g.next(2)]
		case 12:
			m["format"] = []string{"uri", "date-time", "email"}[g.next(3)]
		case 13:
			m["description"] = fmt.Sprint("d", g.next(9))
		case 14:
			m["pattern"] = "^a" // outside the subset
		case 15:
			m["default"] = g.next(3)
		}
	}
	return m
}

// BenchmarkValidateArgs validates the arguments of a typical call
// against a schema as the go-sdk infers one: through the fast path
// (Schema.Validate), and through the validator alone, its baseline.
//
//	go test -run='^$' -bench=ValidateArgs .
func BenchmarkValidateArgs(b *testing.B) {
	s, err := CompileSchema([]byte(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100},"recursive":{"type":"boolean"}},"additionalProperties":false}`))
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"path":"/var/log/app","limit":50,"recursive":true}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validator", func(b *testing.B) {
		_, _, shape := checkLimits(args)
		b.ReportAllocs()
		for b.Loop() {
			if vs, _, err := s.violations(args, shape); err != nil || vs != nil {
				b.Fatal(vs, err)
			}
		}
	})
}
