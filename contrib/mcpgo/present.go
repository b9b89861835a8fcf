package mcpgo

import (
	"encoding/json"
	"unicode/utf8"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/mark3labs/mcp-go/mcp"
)

// present stores a handler's result in vals and builds the result the
// client gets, by the proxy's rule (mcpresult), which it reads from the
// result's bytes as mcp-go writes them for the client, each byte of a
// string that is not UTF-8 read as U+FFFD: what the proxy would read in
// front of this server. Over the threshold the client gets a preview and
// a hint of each stored value, the image and audio blocks, and no
// structured content; otherwise the result as it came with one more text
// block naming the handles, and the handle as the first member of
// structured content that is an object (unless the tool declares an
// output schema, which the extra member could violate). _meta carries the
// handles.
func (v *Values) present(vals *values.SessionValues, res *mcp.CallToolResult, outputSchema bool) *mcp.CallToolResult {
	r, structured, h, ch := store(vals, res)

	meta := &mcp.Meta{AdditionalFields: map[string]any{}}
	if res.Meta != nil {
		meta.ProgressToken = res.Meta.ProgressToken
		for k, x := range res.Meta.AdditionalFields {
			meta.AdditionalFields[k] = x
		}
	}
	meta.AdditionalFields[MetaHandle] = h
	if ch != "" {
		meta.AdditionalFields[MetaContentHandle] = ch
	}

	out := &mcp.CallToolResult{IsError: res.IsError}
	out.Meta = meta
	stored, _ := vals.Get(h)
	if r == nil || !mcpresult.Whole(v.threshold, stored, structured, r) {
		out.Content = []mcp.Content{mcp.NewTextContent(mcpresult.Preview(vals, h, ch))}
		for _, c := range res.Content {
			if isMedia(c) {
				out.Content = append(out.Content, c)
			}
		}
		return out
	}
	out.Content = append(res.Content[:len(res.Content):len(res.Content)], mcp.NewTextContent(mcpresult.HandleLine(vals, h, ch)))
	switch {
	case structured == nil:
	case outputSchema:
		out.StructuredContent, out.RawStructuredContent = res.StructuredContent, res.RawStructuredContent
	default:
		out.StructuredContent = json.RawMessage(mcpresult.WithHandle(structured, h))
	}
	return out
}

// store stores res in vals by the rule, read from its bytes, and returns
// them as the rule read them (nil when they cannot be read so, which
// mcp-go's encoding never makes: the whole JSON of the result is then
// stored), its structured content, and the handles.
func store(vals *values.SessionValues, res *mcp.CallToolResult) (r *mcpresult.Result, structured []byte, h, ch string) {
	b, err := json.Marshal(res)
	if err != nil {
		// Structured content that is not JSON, which mcp-go cannot send
		// either: the result is stored without it.
		without := *res
		without.StructuredContent, without.RawStructuredContent = nil, nil
		if b, err = json.Marshal(&without); err != nil {
			return nil, nil, vals.PutOutput([]byte(err.Error())), ""
		}
	}
	if !utf8.Valid(b) {
		b = jsontext.AppendValidUTF8(nil, b) // as the proxy's connection reads it
	}
	if jsontext.Valid(b) == nil {
		if r, ok := mcpresult.Parse(b, nil); ok {
			h, ch = mcpresult.Store(vals, r.Structured(), r)
			return r, r.Structured(), h, ch
		}
	}
	return nil, nil, vals.PutOutput(b), ""
}

// isMedia reports whether a content block is an image or audio
// (mcpresult.IsMedia), which the client gets even with a preview.
func isMedia(c mcp.Content) bool {
	switch c.(type) {
	case mcp.ImageContent, *mcp.ImageContent, mcp.AudioContent, *mcp.AudioContent:
		return true
	}
	return false
}
