package genkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	values "github.com/agentvalues/values"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core/api"
	"github.com/firebase/genkit/go/genkit"
)

// stringSchema is the output schema of every tool of this package: the
// model is handed the transcript text.
func stringSchema() map[string]any { return map[string]any{"type": "string"} }

// Tools returns the tools of one run over vals, for [ai.WithTools]: each of
// tools wrapped by [Wrap], then [ReadValue] and [QueryValue]. vals should be
// the store of this run (or conversation) alone; see the package
// documentation.
//
// Tools panics when one of tools, or read_value or query_value, is registered
// in g under its name (as [genkit.DefineTool] does): Generate would run the
// registered tool instead of the wrapper. Create such a tool with [ai.NewTool]
// instead. Tools with no tools returns the two value tools alone.
func Tools(g *genkit.Genkit, vals *values.SessionValues, tools ...ai.Tool) []ai.ToolRef {
	out := make([]ai.ToolRef, 0, len(tools)+2)
	for _, t := range tools {
		out = append(out, Wrap(vals, t))
	}
	out = append(out, ReadValue(vals), QueryValue(vals))
	for _, t := range out {
		if genkit.LookupTool(g, t.Name()) != nil {
			panic(fmt.Sprintf("genkit: tool %q is registered in g (genkit.DefineTool?), so Generate would run it instead of its agentvalues wrapper; create it with ai.NewTool", t.Name()))
		}
	}
	return out
}

// Wrap returns tool wrapped to keep its results in vals and to resolve
// references in its input, as the package documentation says: the same
// name, description and input schema, and as output the text the model
// should see. The wrapper is a dynamic tool: pass it to [ai.WithTools], and
// do not register tool itself in the Genkit instance (see [Tools]).
//
// The input schema is read from tool's definition and compiled once, here;
// the model is shown it with a reference string admitted beside every field
// and item ([values.AdmitReferences]), so that a model held to the schema
// may write "$r3" where an array is asked for, while the input is validated
// against tool's own schema after resolution.
// The wrapper may be used by any number of runs at the same time; it holds
// nothing but vals and tool.
func Wrap(vals *values.SessionValues, tool ai.Tool) ai.Tool {
	def := tool.Definition()
	var schema *values.Schema
	shown := def.InputSchema // what the model is shown
	if def.InputSchema != nil {
		if raw, err := json.Marshal(def.InputSchema); err == nil {
			schema, _ = values.CompileSchema(raw) // nil: Genkit's own check alone
			if a, err := values.AdmitReferences(raw); err == nil && schema != nil {
				shown = schemaMap(a)
			}
		}
	}
	multipart, _ := def.Metadata["multipart"].(bool)
	w := &wrapped{inner: tool, vals: vals, schema: schema}
	w.valueTool = newValueTool(def.Name, def.Description, shown, multipart, w.call)
	w.valueTool.respond = tool.Respond
	w.valueTool.restart = tool.Restart
	return w
}

// wrapped is a tool of the run wrapped by Wrap.
type wrapped struct {
	*valueTool
	inner  ai.Tool
	vals   *values.SessionValues
	schema *values.Schema // nil when there is none, or it does not compile
}

// call serves one call of the wrapped tool: prepare the input, run the tool,
// store its output and return the transcript text as the output.
func (w *wrapped) call(ctx context.Context, input []byte) (*ai.MultipartToolResponse, error) {
	prepared, _, err := w.vals.Prepare(w.schema, input)
	if err != nil {
		return &ai.MultipartToolResponse{Output: fmt.Sprintf("%s was not called: %v", w.Name(), err)}, nil
	}
	resp, err := w.inner.RunRawMultipart(ctx, json.RawMessage(prepared))
	if err != nil {
		return nil, err // an interrupt or the tool's own failure: Genkit's to handle
	}
	return &ai.MultipartToolResponse{Output: observe(w.vals, resp.Output), Content: resp.Content}, nil
}

// observe stores a tool's output in vals and returns its transcript text. A
// string is stored as the tool's printed output ([values.SessionValues.Observe]:
// text, or JSON when it holds an object or array); anything else as its JSON.
func observe(vals *values.SessionValues, output any) string {
	if s, ok := output.(string); ok {
		return vals.Observe([]byte(s)).Text
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(output); err != nil {
		// Not from Genkit, which hands over decoded JSON; say so rather than fail the run.
		return vals.Observe(fmt.Appendf(nil, "the tool's output could not be encoded as JSON: %v", err)).Text
	}
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	h, err := vals.Put(json.RawMessage(raw))
	if err != nil {
		return vals.Observe(raw).Text
	}
	obs, _ := vals.Transcript(h)
	return obs.Text
}

// valueTool is an [ai.Tool] whose action is its call function, called with
// the raw JSON input before any schema check. Genkit looks a tool up by name
// in the run's registry and runs the action registered there, so the action
// is what runs; the ai.Tool methods serve callers that hold the tool itself.
type valueTool struct {
	def     ai.ToolDefinition
	act     *action
	respond func(toolReq *ai.Part, output any, opts *ai.RespondOptions) *ai.Part
	restart func(toolReq *ai.Part, opts *ai.RestartOptions) *ai.Part
}

func newValueTool(name, description string, inputSchema map[string]any, multipart bool, call func(context.Context, []byte) (*ai.MultipartToolResponse, error)) *valueTool {
	t := &valueTool{
		def: ai.ToolDefinition{
			Name:         name,
			Description:  description,
			InputSchema:  inputSchema,
			OutputSchema: stringSchema(),
			Metadata:     map[string]any{"multipart": multipart},
		},
	}
	t.act = &action{
		desc: api.ActionDesc{
			Type:         api.ActionTypeToolV2,
			Key:          api.KeyFromName(api.ActionTypeToolV2, name),
			Name:         name,
			Description:  description,
			InputSchema:  inputSchema,
			OutputSchema: stringSchema(),
			Metadata: map[string]any{
				"type":        api.ActionTypeToolV2,
				"name":        name,
				"description": description,
				"tool":        map[string]any{"multipart": multipart},
			},
		},
		call: call,
	}
	return t
}

// Name returns the tool's name.
func (t *valueTool) Name() string { return t.def.Name }

// Definition returns the definition the model is given: the wrapped tool's
// name, description and input schema, and a string output.
func (t *valueTool) Definition() *ai.ToolDefinition {
	d := t.def
	return &d
}

// RunRaw runs the tool as Genkit would and returns the output the model
// would be given.
func (t *valueTool) RunRaw(ctx context.Context, input any) (any, error) {
	resp, err := t.RunRawMultipart(ctx, input)
	if err != nil {
		return nil, err
	}
	return resp.Output, nil
}

// RunRawMultipart runs the tool as Genkit would and returns the response the
// model would be given.
func (t *valueTool) RunRawMultipart(ctx context.Context, input any) (*ai.MultipartToolResponse, error) {
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("genkit: tool %s: input is not JSON: %w", t.Name(), err)
	}
	return t.act.call(ctx, raw)
}

// Respond builds the response part to an interrupted call, as the wrapped
// tool's Respond does; the output is not stored.
func (t *valueTool) Respond(toolReq *ai.Part, output any, opts *ai.RespondOptions) *ai.Part {
	if t.respond != nil {
		return t.respond(toolReq, output, opts)
	}
	if toolReq == nil || !toolReq.IsToolRequest() {
		return nil
	}
	return ai.NewResponseForToolRequest(toolReq, output)
}

// Restart builds the request part that runs an interrupted call again, as the
// wrapped tool's Restart does; the restarted call is prepared and stored as
// any other.
func (t *valueTool) Restart(toolReq *ai.Part, opts *ai.RestartOptions) *ai.Part {
	if t.restart != nil {
		return t.restart(toolReq, opts)
	}
	return nil
}

// Register registers the tool's action in r, under the keys Genkit looks
// tools up by. Generate calls it with the registry of the run.
func (t *valueTool) Register(r api.Registry) {
	r.RegisterAction(t.act.desc.Key, t.act)
	if multipart, _ := t.def.Metadata["multipart"].(bool); !multipart {
		r.RegisterAction(api.KeyFromName(api.ActionTypeTool, t.def.Name), t.act)
	}
}

// action is the [api.Action] of a valueTool. It runs call on the raw input,
// with no schema check of Genkit's: call does its own.
type action struct {
	desc api.ActionDesc
	call func(context.Context, []byte) (*ai.MultipartToolResponse, error)
}

func (a *action) Register(r api.Registry) { r.RegisterAction(a.desc.Key, a) }
func (a *action) Name() string            { return a.desc.Name }
func (a *action) Desc() api.ActionDesc    { return a.desc }

func (a *action) RunJSON(ctx context.Context, input json.RawMessage, _ func(context.Context, json.RawMessage) error) (json.RawMessage, error) {
	resp, err := a.call(ctx, input)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

func (a *action) RunJSONWithTelemetry(ctx context.Context, input json.RawMessage, cb func(context.Context, json.RawMessage) error) (*api.ActionRunResult[json.RawMessage], error) {
	out, err := a.RunJSON(ctx, input, cb)
	if err != nil {
		return nil, err
	}
	return &api.ActionRunResult[json.RawMessage]{Result: out}, nil
}
