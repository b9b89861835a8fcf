package anthropic

import (
	"context"
	"encoding/json"

	values "github.com/agentvalues/values"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// ReadValueTool returns the read_value tool for the runner, served by vals:
// its name, description and input schema are [values.ReadValueTool]'s, and a
// call returns one page of a stored value as one text block
// ([values.SessionValues.HandleReadValue]; pages are at most 32 KiB by
// default, 128 KiB at most). Its input is never resolved: its ref is a
// reference. Bad arguments, an unknown handle, a missing path or a bad offset
// are an error the runner sends to the model as a tool_result with is_error.
// A page is not stored. Safe for concurrent use.
func ReadValueTool(vals *values.SessionValues) sdk.BetaTool {
	return newValueTool(values.ReadValueTool(), func(_ context.Context, args []byte) (string, error) {
		return vals.HandleReadValue(args)
	})
}

// QueryValueTool returns the query_value tool for the runner, served by vals:
// its name, description and input schema are [values.QueryValueTool]'s, and a
// call runs a jq program over a stored value, stores its result under a new
// handle and returns, as one text block, what [values.SessionValues.Observe]
// would show for it ([values.SessionValues.HandleQueryValue], bounded in time
// by the call's context and [values.WithQueryLimits]). Its input is never
// resolved. A program that fails or times out, or bad arguments, are an error
// the runner sends to the model as a tool_result with is_error, and store
// nothing. Safe for concurrent use.
func QueryValueTool(vals *values.SessionValues) sdk.BetaTool {
	return newValueTool(values.QueryValueTool(), func(ctx context.Context, args []byte) (string, error) {
		obs, err := vals.HandleQueryValue(ctx, args)
		return obs.Text, err
	})
}

// valueTool is a BetaTool defined by a values.Tool and served by a function
// of the store.
type valueTool struct {
	def    values.Tool
	schema sdk.BetaToolInputSchemaParam
	serve  func(ctx context.Context, args []byte) (string, error)
}

func newValueTool(def values.Tool, serve func(context.Context, []byte) (string, error)) *valueTool {
	t := &valueTool{def: def, serve: serve}
	if err := json.Unmarshal(def.InputSchema, &t.schema); err != nil {
		// The schemas of the values package are constants: this is a defect there.
		panic("anthropic: the input schema of " + def.Name + " does not decode: " + err.Error())
	}
	return t
}

func (t *valueTool) Name() string                              { return t.def.Name }
func (t *valueTool) Description() string                       { return t.def.Description }
func (t *valueTool) InputSchema() sdk.BetaToolInputSchemaParam { return t.schema }

func (t *valueTool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	text, err := t.serve(ctx, input)
	if err != nil {
		return nil, err
	}
	return []sdk.BetaToolResultBlockParamContentUnion{{OfText: &sdk.BetaTextBlockParam{Text: text}}}, nil
}
