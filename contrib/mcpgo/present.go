package mcpgo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	values "github.com/agentvalues/values"
	"github.com/mark3labs/mcp-go/mcp"
)

// present stores a handler's result in vals and builds the result the
// client gets, as the proxy does. Whether it comes whole is judged on the
// size of what would be sent: the text of the content blocks plus the
// structured content. Over the threshold the client gets a preview and a
// hint of each stored value, the image and audio blocks, and no structured
// content; otherwise the result as it came with one more text block naming
// the handles, and the handle as the first member of structured content
// that is an object (unless the tool declares an output schema, which the
// extra member could violate). _meta carries the handles.
func (v *Values) present(vals *values.SessionValues, res *mcp.CallToolResult, outputSchema bool) *mcp.CallToolResult {
	structured := structuredOf(res)
	h, ch := store(vals, res.Content, structured)

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
	if v.threshold < 0 || stored.Kind() == values.KindBinary || wholeSize(res.Content, structured) > v.threshold {
		text := preview(vals, h)
		if ch != "" {
			text += "\n\nThe content blocks, stored apart:\n" + preview(vals, ch)
		}
		out.Content = []mcp.Content{mcp.NewTextContent(text)}
		for _, c := range res.Content {
			if isMedia(c) {
				out.Content = append(out.Content, c)
			}
		}
		return out
	}
	out.Content = append(res.Content[:len(res.Content):len(res.Content)], mcp.NewTextContent(handleLine(h, ch)))
	switch {
	case structured == nil:
	case outputSchema:
		out.StructuredContent, out.RawStructuredContent = res.StructuredContent, res.RawStructuredContent
	default:
		out.StructuredContent = withHandle(structured, h)
	}
	return out
}

// structuredOf returns the structured content of a result as JSON, or nil
// when it has none (null counts as none) or it cannot be encoded.
func structuredOf(res *mcp.CallToolResult) json.RawMessage {
	var b []byte
	switch {
	case len(res.RawStructuredContent) > 0:
		b = res.RawStructuredContent
	case res.StructuredContent != nil:
		var err error
		if b, err = json.Marshal(res.StructuredContent); err != nil {
			return nil
		}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" || !json.Valid(b) {
		return nil
	}
	return b
}

// store puts a result in vals and returns its handle, and the handle of
// its content blocks when they are stored apart (else ""): the structured
// content when there is some (the text instead when the structured content
// is only an object holding that text), with the content blocks stored
// apart unless they are its JSON again; otherwise the content blocks.
func store(vals *values.SessionValues, content []mcp.Content, structured json.RawMessage) (h, contentHandle string) {
	if structured == nil {
		return storeContent(vals, content), ""
	}
	text, allText := joinText(content)
	if allText && mirrorsText(structured, text) {
		return vals.PutOutput([]byte(text)), ""
	}
	h, err := vals.Put(structured)
	if err != nil {
		h = vals.PutOutput(structured)
	}
	if len(content) > 0 && !(allText && sameJSON(structured, text)) {
		contentHandle = storeContent(vals, content)
	}
	return h, contentHandle
}

// storeContent stores content blocks: their text when all are text, else
// the JSON array of the blocks, so nothing is lost.
func storeContent(vals *values.SessionValues, content []mcp.Content) string {
	text, allText := joinText(content)
	if allText {
		return vals.PutOutput([]byte(text))
	}
	blocks, err := json.Marshal(content)
	if err != nil {
		return vals.PutOutput([]byte(text))
	}
	if h, err := vals.Put(json.RawMessage(blocks)); err == nil {
		return h
	}
	return vals.PutOutput(blocks)
}

// textOf returns the text of a text block, and whether c is one.
func textOf(c mcp.Content) (string, bool) {
	switch c := c.(type) {
	case mcp.TextContent:
		return c.Text, true
	case *mcp.TextContent:
		return c.Text, c != nil
	}
	return "", false
}

// isMedia reports whether a content block is an image or audio, which the
// client gets even with a preview.
func isMedia(c mcp.Content) bool {
	switch c.(type) {
	case mcp.ImageContent, *mcp.ImageContent, mcp.AudioContent, *mcp.AudioContent:
		return true
	}
	return false
}

// joinText returns the text of the content blocks joined by newlines, and
// whether every block is text.
func joinText(content []mcp.Content) (string, bool) {
	if len(content) == 1 {
		if t, ok := textOf(content[0]); ok {
			return t, true
		}
	}
	var b strings.Builder
	allText, first := true, true
	for _, c := range content {
		t, ok := textOf(c)
		if !ok {
			allText = false
			continue
		}
		if !first {
			b.WriteByte('\n')
		}
		first = false
		b.WriteString(t)
	}
	return b.String(), allText
}

// wholeSize is the number of bytes a result shown whole would add to the
// transcript: its text blocks, other non-media blocks as JSON, and the
// structured content.
func wholeSize(content []mcp.Content, structured json.RawMessage) int {
	n := len(structured)
	for _, c := range content {
		if t, ok := textOf(c); ok {
			n += len(t)
		} else if !isMedia(c) {
			b, _ := json.Marshal(c)
			n += len(b)
		}
	}
	return n
}

// sameJSON reports whether text is the JSON of structured again, as servers
// send it beside structured content for older clients (white space and
// member order aside).
func sameJSON(structured json.RawMessage, text string) bool {
	t := bytes.TrimSpace([]byte(text))
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') || !json.Valid(t) {
		return false
	}
	var a, b any
	if json.Unmarshal(structured, &a) != nil || json.Unmarshal(t, &b) != nil {
		return false
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// mirrorsText reports whether structured content is only the text again:
// an object with a single string member equal to text.
func mirrorsText(structured json.RawMessage, text string) bool {
	if structured[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(structured, &m) != nil || len(m) != 1 {
		return false
	}
	for _, x := range m {
		var s string
		return json.Unmarshal(x, &s) == nil && s == text
	}
	return false
}

// withHandle returns the structured content of a result shown whole with
// its handle as one more member, first: some clients give the model only
// the structured content when there is any, and the model must see the
// handle to pass the value on. A member of that name already there gets
// this handle. Structured content that is not an object is returned as it
// is. It decodes the object, which is small: results over the threshold
// are not shown whole.
func withHandle(structured json.RawMessage, h string) json.RawMessage {
	if structured[0] != '{' {
		return structured
	}
	key, _ := json.Marshal(MetaHandle)
	val, _ := json.Marshal(h)
	var m map[string]json.RawMessage
	if json.Unmarshal(structured, &m) != nil {
		return structured
	}
	if _, taken := m[MetaHandle]; taken {
		m[MetaHandle] = val
		out, err := json.Marshal(m)
		if err != nil {
			return structured
		}
		return out
	}
	out := make([]byte, 0, len(structured)+len(key)+len(val)+2)
	out = append(out, '{')
	out = append(out, key...)
	out = append(out, ':')
	out = append(out, val...)
	if len(m) > 0 {
		out = append(out, ',')
	}
	return append(out, bytes.TrimSpace(structured[1:])...)
}

// preview is the preview and hint of the value under h, whatever its size.
func preview(vals *values.SessionValues, h string) string {
	v, _ := vals.Get(h)
	return values.RenderPreview(h, v) + values.ReferenceHint(h)
}

// handleLine is the text block appended to a result shown whole; it names
// the handle, and the content blocks' handle ch when they are stored apart.
func handleLine(h, ch string) string {
	if ch != "" {
		return fmt.Sprintf(`[stored as %s, the content blocks as %s: pass "$%s" or "$%s.<field>" as a tool argument to reuse it]`, h, ch, h, h)
	}
	return fmt.Sprintf(`[stored as %s: pass "$%s" or "$%s.<field>" as a tool argument to reuse it]`, h, h, h)
}
