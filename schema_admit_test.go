package values

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decodeSchema(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAdmitReferences(t *testing.T) {
	ref := refString()
	or := func(s any) map[string]any { return map[string]any{"anyOf": []any{s, ref}} }
	got := admitChildren(decodeSchema(t, `{"type":"object","properties":{
		"ids":{"type":"array","items":{"type":"integer"},"description":"which"},
		"name":{"type":"string"},
		"mode":{"type":"string","enum":["a","b"]},
		"any":{},
		"either":{"type":["string","null"]},
		"opts":{"type":"object","properties":{"depth":{"type":"integer"}},"additionalProperties":{"type":"boolean"}},
		"def":{"$ref":"#/$defs/d"}
	},"$defs":{"d":{"type":"object","properties":{"x":{"type":"integer"}}}},"additionalProperties":false}`))
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"ids":    map[string]any{"anyOf": []any{map[string]any{"type": "array", "items": or(map[string]any{"type": "integer"}), "description": "which"}, ref}, "description": "which"},
			"name":   map[string]any{"type": "string"},
			"mode":   or(map[string]any{"type": "string", "enum": []any{"a", "b"}}),
			"any":    map[string]any{},
			"either": map[string]any{"type": []any{"string", "null"}},
			"opts": or(map[string]any{"type": "object",
				"properties":           map[string]any{"depth": or(map[string]any{"type": "integer"})},
				"additionalProperties": or(map[string]any{"type": "boolean"})}),
			"def": or(map[string]any{"$ref": "#/$defs/d"}),
		},
		"$defs":                map[string]any{"d": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}}},
		"additionalProperties": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("admitReferences (-want +got):\n%s", diff)
	}
}

// TestAdmitReferencesDrafts rewrites a schema written for each draft the
// validator knows: the rewritten one compiles, admits references in every
// field and item, and still refuses what the original refuses when it is
// not a reference; the original is untouched.
func TestAdmitReferencesDrafts(t *testing.T) {
	for _, tc := range []struct{ draft, tuple string }{
		{"http://json-schema.org/draft-04/schema#", `"items":[{"type":"integer"},{"type":"boolean"}],"additionalItems":false`},
		{"http://json-schema.org/draft-06/schema#", `"items":[{"type":"integer"},{"type":"boolean"}],"additionalItems":false`},
		{"http://json-schema.org/draft-07/schema#", `"items":[{"type":"integer"},{"type":"boolean"}],"additionalItems":false`},
		{"https://json-schema.org/draft/2019-09/schema", `"items":[{"type":"integer"},{"type":"boolean"}],"additionalItems":false`},
		{"https://json-schema.org/draft/2020-12/schema", `"prefixItems":[{"type":"integer"},{"type":"boolean"}],"items":false`},
	} {
		t.Run(tc.draft, func(t *testing.T) {
			src := `{"$schema":"` + tc.draft + `","type":"object","properties":{
				"xs":{"type":"array","items":{"type":"integer"}},
				"pair":{"type":"array",` + tc.tuple + `},
				"deep":{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}
			},"required":["xs"],"additionalProperties":false}`
			orig := decodeSchema(t, src)
			rewritten, err := json.Marshal(admitChildren(orig))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decodeSchema(t, src), orig); diff != "" {
				t.Fatalf("the original was changed:\n%s", diff)
			}
			advertised, err := CompileSchema(rewritten)
			if err != nil {
				t.Fatalf("the rewritten schema does not compile: %v\n%s", err, rewritten)
			}
			original, err := CompileSchema([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range []string{
				`{"xs":"$r1"}`, `{"xs":["$r1.0",2]}`, `{"xs":[],"pair":"$r2.rows"}`, `{"xs":[],"pair":[1,"$r3"]}`,
				`{"xs":[],"deep":"$r1"}`, `{"xs":[],"deep":{"n":"$r4.count"}}`, `{"xs":[1],"pair":[1,true],"deep":{"n":2}}`,
			} {
				if err := advertised.Validate([]byte(args)); err != nil {
					t.Errorf("advertised schema refuses %s: %v", args, err)
				}
			}
			for _, args := range []string{`{"xs":"r1"}`, `{"xs":"$x1"}`, `{"xs":[1.5]}`, `{"xs":[],"deep":{"n":0}}`, `{"xs":[],"pair":[1,true,3]}`, `{"ys":[]}`, `{}`} {
				if advertised.Validate([]byte(args)) == nil {
					t.Errorf("advertised schema admits %s", args)
				}
				if original.Validate([]byte(args)) == nil {
					t.Errorf("original schema admits %s", args)
				}
			}
		})
	}
}

// TestAdmitReferencesErrors gives AdmitReferences schemas it leaves as
// they are, and checks it keeps numbers as written.
func TestAdmitReferencesErrors(t *testing.T) {
	for _, raw := range []string{`[1]`, `null`, `{`, `{"type":"object","properties":{"a":{"type":"array"},"b":{"$ref":"#/properties/a"}}}`} {
		if out, err := AdmitReferences([]byte(raw)); !errors.Is(err, ErrNotRewritten) || out != nil {
			t.Errorf("AdmitReferences(%s) = %s, %v", raw, out, err)
		}
	}
	out, err := AdmitReferences([]byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"maximum":12345678901234567890`; !json.Valid(out) || !strings.Contains(string(out), want) {
		t.Errorf("AdmitReferences lost a number: %s", out)
	}
}
