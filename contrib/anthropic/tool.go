package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	values "github.com/agentvalues/values"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// ReferenceNote is the sentence [Tool] appends to a tool's description, so
// the model knows it may pass a stored result by reference.
const ReferenceNote = values.ReferenceNote

// Tools returns the tools to give client.Beta.Messages.NewToolRunner for one
// run over vals: each of tools wrapped by [Tool], followed by read_value
// ([ReadValueTool]) and query_value ([QueryValueTool]). None of tools may be
// called read_value or query_value: the runner keeps the last tool of a name,
// and the API refuses two definitions of one. With no tools it returns the
// two value tools alone.
func Tools(vals *values.SessionValues, tools ...sdk.BetaTool) []sdk.BetaTool {
	out := make([]sdk.BetaTool, 0, len(tools)+2)
	for _, t := range tools {
		out = append(out, Tool(vals, t))
	}
	return append(out, ReadValueTool(vals), QueryValueTool(vals))
}

// Tool returns t wrapped so that every call the runner makes of it goes
// through vals:
//
//   - the input is resolved and validated against t's input schema
//     ([values.SessionValues.Prepare]) before t sees it. A reference that
//     does not resolve, a malformed one, arguments that do not match the
//     schema, and arguments past the store's resolve bound
//     ([values.WithMaxResolved]) are an error "NAME was not called: <why>",
//     which the runner sends to the model as a tool_result with is_error;
//     t is not called. A schema that [values.CompileSchema] refuses (a remote
//     $ref, say) is not checked: the input is then only resolved, and a
//     reference that does not resolve still fails the call;
//   - the text blocks of t's result, joined by newlines, are stored as one
//     value ([values.SessionValues.Observe]: JSON text becomes a JSON value a
//     reference can index into) and replaced, where the first of them was,
//     by one text block: the whole text and a line naming its handle when it
//     is within the store's inline limit, else a bounded preview and a hint.
//     Other blocks (images, documents, search results) are passed on as they
//     are and not stored; a result without a text block stores nothing;
//   - an error of t is passed on as it is, and nothing is stored.
//
// The wrapper's name is t's; its description is t's followed by
// [ReferenceNote]; its input schema is t's with a reference string admitted
// beside every field and item ([values.AdmitReferences]), so that a model
// bound to the schema (strict tool use) may still write "$r3" where an
// array is asked for, or t's own when it cannot be rewritten (a $ref into
// its own fields, say). The schema is read, compiled and rewritten once,
// here.
// The wrapper is safe for concurrent use when t is; it never modifies the
// blocks t returns.
func Tool(vals *values.SessionValues, t sdk.BetaTool) sdk.BetaTool {
	w := &tool{vals: vals, inner: t, advertised: t.InputSchema()}
	if raw, err := json.Marshal(t.InputSchema()); err == nil {
		w.schema, _ = values.CompileSchema(raw) // nil: resolve only
		if a, err := values.AdmitReferences(raw); err == nil && w.schema != nil {
			var p sdk.BetaToolInputSchemaParam
			if json.Unmarshal(a, &p) == nil {
				w.advertised = p
			}
		}
	}
	return w
}

// tool is a BetaTool wrapped by Tool.
type tool struct {
	vals   *values.SessionValues
	inner  sdk.BetaTool
	schema *values.Schema // nil when the tool's schema did not compile

	advertised sdk.BetaToolInputSchemaParam // the schema the model is shown
}

func (t *tool) Name() string { return t.inner.Name() }

func (t *tool) Description() string {
	if d := t.inner.Description(); d != "" {
		return d + "\n\n" + ReferenceNote
	}
	return ReferenceNote
}

func (t *tool) InputSchema() sdk.BetaToolInputSchemaParam { return t.advertised }

func (t *tool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	args, _, err := t.vals.Prepare(t.schema, input)
	if err != nil {
		return nil, fmt.Errorf("%s was not called: %w", t.inner.Name(), err)
	}
	content, err := t.inner.Execute(ctx, args)
	if err != nil {
		return nil, err
	}
	return observe(t.vals, content), nil
}

// observe stores the text of content in vals and returns content with its
// text blocks replaced by what the transcript gets; see Tool.
func observe(vals *values.SessionValues, content []sdk.BetaToolResultBlockParamContentUnion) []sdk.BetaToolResultBlockParamContentUnion {
	first, texts := -1, 0
	var b strings.Builder
	for i, c := range content {
		if c.OfText == nil {
			continue
		}
		if first < 0 {
			first = i
		} else {
			b.WriteByte('\n')
		}
		b.WriteString(c.OfText.Text)
		texts++
	}
	if first < 0 {
		return content
	}
	obs := vals.Observe([]byte(b.String()))
	text := &sdk.BetaTextBlockParam{Text: obs.Text, CacheControl: content[first].OfText.CacheControl}
	out := make([]sdk.BetaToolResultBlockParamContentUnion, 0, len(content)-texts+1)
	for i, c := range content {
		switch {
		case i == first:
			out = append(out, sdk.BetaToolResultBlockParamContentUnion{OfText: text})
		case c.OfText == nil:
			out = append(out, c)
		}
	}
	return out
}
