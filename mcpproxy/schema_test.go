package mcpproxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	values "github.com/agentvalues/values"
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
