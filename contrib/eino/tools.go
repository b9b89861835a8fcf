package eino

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	values "github.com/agentvalues/values"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
)

// valueTool is read_value or query_value as a tool.InvokableTool, over the
// store of each call's context.
type valueTool struct {
	a   *Adapter
	def values.Tool
	run func(ctx context.Context, vals *values.SessionValues, args []byte) string
}

var _ tool.InvokableTool = (*valueTool)(nil)

// Info returns the tool's name, description and input schema, as the
// library defines them.
func (t *valueTool) Info(context.Context) (*schema.ToolInfo, error) {
	js := new(jsonschema.Schema)
	if err := json.Unmarshal(t.def.InputSchema, js); err != nil {
		return nil, fmt.Errorf("eino: %s input schema: %w", t.def.Name, err)
	}
	return &schema.ToolInfo{Name: t.def.Name, Desc: t.def.Description, ParamsOneOf: schema.NewParamsOneOfByJSONSchema(js)}, nil
}

// InvokableRun serves one call. Its error is always nil: a failure (bad
// arguments, unknown ref, a jq error) is the returned text, so the model
// reads it, since an error would stop Eino's run.
func (t *valueTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	args := strings.TrimSpace(argumentsInJSON)
	if args == "" || args == "null" {
		args = "{}"
	}
	return t.run(ctx, t.a.Values(ctx), []byte(args)), nil
}

// readValue serves read_value: a page, or the error's message.
func readValue(_ context.Context, vals *values.SessionValues, args []byte) string {
	page, err := vals.HandleReadValue(args)
	if err != nil {
		return err.Error()
	}
	return page
}

// queryValue serves query_value: the transcript text of the stored result,
// or the error's message.
func queryValue(ctx context.Context, vals *values.SessionValues, args []byte) string {
	obs, err := vals.HandleQueryValue(ctx, args)
	if err != nil {
		return err.Error()
	}
	return obs.Text
}
