package mcpgo

import (
	"context"
	"encoding/json"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/mark3labs/mcp-go/mcp"
)

// referenceNote ends the description of every tool tools/list advertises,
// as the proxy's does.
const referenceNote = values.ReferenceNote

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
	if a, err := values.AdmitReferences(raw); err == nil {
		s.advertised = a
	}
	return s
}
