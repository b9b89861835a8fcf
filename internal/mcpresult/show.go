package mcpresult

import (
	"strings"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
)

// MetaHandle is the key, in a tool result's _meta, of the handle under
// which the result is stored ("r3").
const MetaHandle = "agentvalues/handle"

// MetaContentHandle is the key, in a tool result's _meta, of the handle
// under which the result's content blocks are stored when it also has
// structured content that they do not merely repeat (see Store).
const MetaContentHandle = "agentvalues/content-handle"

// Whole reports whether a result is shown whole, rather than as the
// preview and hint of what is stored: when its stored value is not
// binary and what it would add to the transcript is at most threshold
// bytes (never when threshold is negative). What it would add is its
// structured content and the blocks' size (see Sizer); image and audio
// blocks are not counted: a client shows them as what they are, and they
// are passed on either way.
func Whole(threshold int, stored values.Value, structured []byte, c Sizer) bool {
	return threshold >= 0 && stored.Kind() != values.KindBinary && len(structured)+c.Size() <= threshold
}

// A Sizer measures content blocks as a transcript shows them.
type Sizer interface {
	// Size returns the bytes the blocks add to a transcript shown whole:
	// the text of the text blocks, and the JSON of the blocks that are
	// neither text nor media (IsMedia), as the caller encodes them.
	Size() int
}

// IsMedia reports whether a content block of type typ is an image or
// audio, which a result shown as a preview passes on.
func IsMedia(typ string) bool { return typ == "image" || typ == "audio" }

// Size implements Sizer for a Result: its blocks as they came.
func (res *Result) Size() int {
	if res.content == nil {
		return 0
	}
	n := 0
	jsontext.EachChild(res.content, func(_, blk []byte) bool {
		text, kind := blockText(blk)
		switch {
		case kind == kindText:
			l, _ := jsontext.StringStats(text)
			n += l
		case !IsMedia(blockType(blk)):
			n += len(blk)
		}
		return true
	})
	return n
}

// blockType returns the type of the content block blk, "" when it has
// none that is a string.
func blockType(blk []byte) string {
	if blk[0] != '{' {
		return ""
	}
	v, ok := jsontext.Member(blk, "type")
	if !ok || v[0] != '"' {
		return ""
	}
	return string(jsontext.AppendUnquoted(nil, v))
}

// Preview returns the text a result shown as a preview has in place of
// its content: the preview and hint of the value under h, and, when ch is
// not "", of the content blocks stored apart under it.
func Preview(vals *values.SessionValues, h, ch string) string {
	text := preview(vals, h)
	if ch != "" {
		text += "\n\nThe content blocks, stored apart:\n" + preview(vals, ch)
	}
	return text
}

// preview is the preview and hint of the value under h, whatever its size.
func preview(vals *values.SessionValues, h string) string {
	v, _ := vals.Get(h)
	return values.RenderPreview(h, v) + values.ReferenceHintFor(h, v)
}

// HandleLine is the text block appended to a result shown whole: what
// [values.SessionValues.Observe] says below a value it shows whole
// ([values.StoredLine]: the handle, what the value is, and the reference
// forms that fit it), naming the content blocks' handle ch when they are
// stored apart.
func HandleLine(vals *values.SessionValues, h, ch string) string {
	v, _ := vals.Get(h)
	line := values.StoredLine(h, v)
	if ch == "" {
		return line
	}
	return strings.TrimSuffix(line, "]") + "; the content blocks are stored apart as " + ch + "]"
}

// WithHandle returns the structured content of a result shown whole with
// its handle as one more member, first: some clients (Claude Code, Cursor)
// give the model only the structured content when there is any, and the
// model must see the handle to pass the value on. The stored value is the
// server's, without it. A member of that name already there (a proxy
// behind the proxy put it) gets this handle, the one the agent can use,
// in its place. Structured content that is not a valid object is returned
// as it is.
func WithHandle(structured []byte, h string) []byte {
	i := jsontext.SkipSpace(structured, 0)
	if i >= len(structured) || structured[i] != '{' || jsontext.Valid(structured) != nil {
		return structured
	}
	if v, taken := jsontext.Member(structured[i:], MetaHandle); taken {
		at := i + offsetIn(structured[i:], v)
		out := append([]byte(nil), structured[:at]...)
		out = jsontext.AppendQuote(out, []byte(h))
		return append(out, structured[at+len(v):]...)
	}
	out := make([]byte, 0, len(structured)+len(MetaHandle)+len(h)+8)
	out = append(out, '{')
	out = jsontext.AppendQuote(out, []byte(MetaHandle))
	out = append(out, ':')
	out = jsontext.AppendQuote(out, []byte(h))
	if rest := jsontext.SkipSpace(structured, i+1); structured[rest] != '}' {
		out = append(out, ',')
	}
	return append(out, structured[i+1:]...)
}
