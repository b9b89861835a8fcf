package mcpgo

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/mark3labs/mcp-go/mcp"
)

// referenceNote ends the description of every tool tools/list advertises,
// as the proxy's does.
const referenceNote = `(Via agentvalues: any argument may be a stored-result reference such as "$r1" or "$r1.items.0.path"; the stored value is substituted before the call.)`

// FilterTools is the [server.ToolFilterFunc] that rewrites the tools mcp-go
// lists (and checks at call time) as a client should see them: every tool
// but read_value and query_value gets [referenceNote] at the end of its
// description, an input schema in which the schema of every property, item
// and additional property at any depth also admits a reference string
// (values.ReferencePattern), and no output schema. It drops no tool. An
// input schema that does not compile, points into its own fields ($ref
// "#/properties/…", which the rewriting would move), or no longer compiles
// rewritten is advertised as it is. The tools the server holds, and that
// the middleware validates against, are not changed.
func (v *Values) FilterTools(_ context.Context, tools []mcp.Tool) []mcp.Tool {
	out := make([]mcp.Tool, len(tools))
	for i, t := range tools {
		out[i] = v.advertise(t)
	}
	return out
}

// advertise returns the tool t as a client should see it.
func (v *Values) advertise(t mcp.Tool) mcp.Tool {
	if isOwnTool(t.Name) {
		return t
	}
	if t.Description == "" {
		t.Description = referenceNote
	} else {
		t.Description += "\n\n" + referenceNote
	}
	if s := v.schemas.of(t); s.advertised != nil {
		t.InputSchema, t.RawInputSchema = mcp.ToolInputSchema{}, s.advertised
	}
	t.OutputSchema, t.RawOutputSchema = mcp.ToolOutputSchema{}, nil
	return t
}

// maxCachedSchemas bounds the schemas a Values keeps compiled: past it the
// cache starts again empty (a server rarely has more distinct tool schemas;
// sessions' own tools may).
const maxCachedSchemas = 1024

// schemaCache keeps, per distinct input schema, its compiled form and the
// form tools/list advertises, so neither is redone per call.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*toolSchema // by the schema's JSON
}

// toolSchema is an input schema as the adapter uses it.
type toolSchema struct {
	compiled   *values.Schema  // nil when the tool has no schema or it does not compile
	advertised json.RawMessage // what tools/list shows; nil to leave the tool's as it is
}

// of returns the schemas of the tool t; the zero toolSchema when t has
// none.
func (c *schemaCache) of(t mcp.Tool) *toolSchema {
	raw, ok := inputSchemaJSON(t)
	if !ok {
		return &toolSchema{}
	}
	c.mu.Lock()
	s, ok := c.m[string(raw)]
	c.mu.Unlock()
	if ok {
		return s
	}
	s = newToolSchema(raw)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedSchemas {
		c.m = map[string]*toolSchema{}
	}
	c.m[string(raw)] = s
	c.mu.Unlock()
	return s
}

// inputSchemaJSON returns the JSON of a tool's input schema as mcp-go
// sends and validates it: RawInputSchema when set, else InputSchema
// encoded; false when there is none.
func inputSchemaJSON(t mcp.Tool) ([]byte, bool) {
	if len(t.RawInputSchema) > 0 {
		return t.RawInputSchema, true
	}
	s := t.InputSchema
	if s.Type == "" && len(s.Properties) == 0 && len(s.Required) == 0 && s.AdditionalProperties == nil {
		return nil, false
	}
	b, err := json.Marshal(s)
	return b, err == nil
}

// newToolSchema compiles raw and rewrites it to admit references.
func newToolSchema(raw []byte) *toolSchema {
	compiled, err := values.CompileSchema(raw)
	if err != nil {
		return &toolSchema{}
	}
	s := &toolSchema{compiled: compiled}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil || localRef(m) != "" {
		return s
	}
	a, err := json.Marshal(admitChildren(m))
	if err != nil {
		return s
	}
	if _, err := values.CompileSchema(a); err == nil {
		s.advertised = a
	}
	return s
}

// admitChildren returns a copy of the schema s whose subschemas of
// properties, pattern properties, additional properties and array items
// admit references, at every depth. The object itself does not (a call's
// arguments are an object), and definitions ($defs, definitions) are left
// as they are: a field whose schema is only a $ref admits a reference, the
// fields inside the definition do not.
func admitChildren(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, x := range s {
		switch k {
		case "properties", "patternProperties":
			if m, ok := x.(map[string]any); ok {
				props := make(map[string]any, len(m))
				for name, sub := range m {
					props[name] = admitValue(sub)
				}
				x = props
			}
		case "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems":
			x = admitValue(x)
		case "items", "prefixItems":
			if list, ok := x.([]any); ok { // a tuple
				subs := make([]any, len(list))
				for i, sub := range list {
					subs[i] = admitValue(sub)
				}
				x = subs
			} else {
				x = admitValue(x)
			}
		}
		out[k] = x
	}
	return out
}

// admitValue returns the schema s of a field or item, admitting a
// reference string beside whatever s admits: {"anyOf":[s, reference]},
// with s's title and description repeated beside the choice.
func admitValue(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s // true admits a reference already; false admits nothing, and stays so
	}
	inner := admitChildren(m)
	if admitsAnyString(m) {
		return inner
	}
	out := map[string]any{"anyOf": []any{inner, map[string]any{"type": "string", "pattern": values.ReferencePattern}}}
	for _, k := range []string{"title", "description"} {
		if x, ok := m[k]; ok {
			out[k] = x
		}
	}
	return out
}

// constrainsString lists the keywords under which a schema that admits
// strings may still refuse "$r3".
var constrainsString = []string{"enum", "const", "pattern", "format", "minLength", "maxLength", "not", "anyOf", "oneOf", "allOf", "$ref", "$dynamicRef", "$recursiveRef", "if", "contentEncoding", "contentMediaType"}

// admitsAnyString reports whether the schema s admits every string, so
// that it needs no alternative.
func admitsAnyString(s map[string]any) bool {
	switch t := s["type"].(type) {
	case nil:
	case string:
		if t != "string" {
			return false
		}
	case []any:
		found := false
		for _, x := range t {
			found = found || x == "string"
		}
		if !found {
			return false
		}
	default:
		return false
	}
	for _, k := range constrainsString {
		if _, ok := s[k]; ok {
			return false
		}
	}
	return true
}

// localRef returns a $ref of the schema s that points into s itself
// outside its definitions ("#/properties/a/items"), or "".
func localRef(s any) string {
	switch s := s.(type) {
	case map[string]any:
		for k, x := range s {
			if ref, ok := x.(string); ok && (k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef") &&
				strings.HasPrefix(ref, "#/") && !strings.HasPrefix(ref, "#/$defs/") && !strings.HasPrefix(ref, "#/definitions/") {
				return ref
			}
			if ref := localRef(x); ref != "" {
				return ref
			}
		}
	case []any:
		for _, x := range s {
			if ref := localRef(x); ref != "" {
				return ref
			}
		}
	}
	return ""
}
