package mcpgo

import (
	"context"

	values "github.com/agentvalues/values"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// isOwnTool reports whether name is one of the tools the adapter adds,
// whose arguments are never resolved (their ref is itself
// reference-shaped) and whose results are not stored again.
func isOwnTool(name string) bool {
	return name == values.ReadValueTool().Name || name == values.QueryValueTool().Name
}

// Tools returns the read_value and query_value tools served by
// [Values.ReadValue] and [Values.QueryValue], as [Values.ServerOption]
// adds them; each call returns new copies.
func (v *Values) Tools() []server.ServerTool {
	rt, qt := values.ReadValueTool(), values.QueryValueTool()
	readOnly := true
	return []server.ServerTool{
		{Tool: mcp.Tool{Name: rt.Name, Description: rt.Description, RawInputSchema: rt.InputSchema,
			Annotations: mcp.ToolAnnotation{ReadOnlyHint: &readOnly}}, Handler: v.ReadValue},
		{Tool: mcp.Tool{Name: qt.Name, Description: qt.Description, RawInputSchema: qt.InputSchema}, Handler: v.QueryValue},
	}
}

// ReadValue serves read_value over the store of the call's session: one
// page of a stored value ([values.SessionValues.HandleReadValue]). A bad
// argument, a ref the session does not hold or a bad offset is an isError
// result saying so.
func (v *Values) ReadValue(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := argsOf(req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	page, err := v.Session(ctx).HandleReadValue(args)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(page), nil
}

// QueryValue serves query_value over the store of the call's session: a jq
// program run over a stored value ([values.SessionValues.HandleQueryValue]),
// its result stored under a new handle, named in _meta under [MetaHandle],
// and shown as a stored tool result is shown (whole when small, else
// preview and hint). A program that fails, times out or goes past a limit
// is an isError result saying so.
func (v *Values) QueryValue(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := argsOf(req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	obs, err := v.Session(ctx).HandleQueryValue(ctx, args)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	res := mcp.NewToolResultText(obs.Text)
	res.Meta = &mcp.Meta{AdditionalFields: map[string]any{MetaHandle: obs.Handle}}
	return res, nil
}
