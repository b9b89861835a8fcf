package mcpproxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	values "github.com/agentvalues/values"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	got := admitReferences(decodeSchema(t, `{"type":"object","properties":{
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
			rewritten, err := json.Marshal(admitReferences(orig))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decodeSchema(t, src), orig); diff != "" {
				t.Fatalf("the original was changed:\n%s", diff)
			}
			advertised, err := values.CompileSchema(rewritten)
			if err != nil {
				t.Fatalf("the rewritten schema does not compile: %v\n%s", err, rewritten)
			}
			original, err := values.CompileSchema([]byte(src))
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

// TestStrictClientReference calls, through the proxy, a tool whose schema
// asks for an array of integers with "$r1": the advertised schema admits
// it, and the stored value is checked against the original after
// resolution.
func TestStrictClientReference(t *testing.T) {
	for _, original := range []bool{false, true} {
		f := newFixture(t, nil, &Options{OriginalSchemas: original})
		f.server.AddTool(&mcp.Tool{Name: "sum", InputSchema: json.RawMessage(`{"type":"object","properties":{"xs":{"type":"array","items":{"type":"integer"}}},"required":["xs"],"additionalProperties":false}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var in struct{ Xs []int }
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
				sum := 0
				for _, x := range in.Xs {
					sum += x
				}
				b, _ := json.Marshal(sum)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
			})
		f.waitTools(t, func(names []string) bool { return slices.Contains(names, "sum") })
		up, err := f.client.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(up.Tools, func(tool *mcp.Tool) bool { return tool.Name == "sum" })
		raw, _ := json.Marshal(up.Tools[i].InputSchema)
		advertised, err := values.CompileSchema(raw)
		if err != nil {
			t.Fatal(err)
		}
		if admits := advertised.Validate([]byte(`{"xs":"$r1"}`)) == nil; admits == original {
			t.Errorf("OriginalSchemas %v: the advertised schema admits \"$r1\" for an array: %v", original, admits)
		}

		words, _ := f.proxy.Values().Put([]string{"a", "b"})
		nums, _ := f.proxy.Values().Put([]int{1, 2, 3})
		bad := f.call(t, "sum", `{"xs":"$`+words+`"}`)
		if !bad.IsError || !strings.Contains(text(bad), "sum was not called") || !strings.Contains(text(bad), "$"+words) {
			t.Errorf("sum of strings: %s", text(bad))
		}
		if good := f.call(t, "sum", `{"xs":"$`+nums+`"}`); good.IsError || !strings.HasPrefix(text(good), "6") {
			t.Errorf("sum of $%s: %s", nums, text(good))
		}
	}
}

// TestLocalRefUnchanged offers a schema that points into its own fields
// (as zod-to-json-schema writes them) as it is, and says why.
func TestLocalRefUnchanged(t *testing.T) {
	src := `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}},"b":{"$ref":"#/properties/a/items"}}}`
	var why string
	def, _, err := mirror(&mcp.Tool{Name: "t", InputSchema: decodeSchema(t, src)}, "t", true, func(w string) { why = w })
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(def.InputSchema); string(got) != `{"properties":{"a":{"items":{"type":"integer"},"type":"array"},"b":{"$ref":"#/properties/a/items"}},"type":"object"}` {
		t.Errorf("offered %s", got)
	}
	if !strings.Contains(why, "#/properties/a/items") {
		t.Errorf("why: %q", why)
	}
	// A schema that refers to its definitions, or to itself, is rewritten.
	for _, src := range []string{
		`{"type":"object","properties":{"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}`,
		`{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}}}`,
	} {
		why = ""
		def, _, _ := mirror(&mcp.Tool{Name: "t", InputSchema: decodeSchema(t, src)}, "t", true, func(w string) { why = w })
		if got, _ := json.Marshal(def.InputSchema); why != "" || !strings.Contains(string(got), "anyOf") {
			t.Errorf("%s offered as %s (%s)", src, got, why)
		}
	}
}
