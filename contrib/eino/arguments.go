package eino

import (
	"context"
	"strings"
)

// notCalled starts the arguments ResolveArguments hands on for a call it
// refuses; the explanation for the model follows it. No JSON starts with a
// NUL byte, so resolved arguments never look like it, and the middleware
// answers such a call without running the tool.
const notCalled = "\x00agentvalues: not called\x00"

// ResolveArguments is a compose.ToolsNodeConfig.ToolArgumentsHandler: it
// replaces the references in the arguments of a call of the tool name with
// the values they name, then validates the result against the tool's
// parameter schema (when Configure saw the tool), with
// values.SessionValues.Prepare over the store of ctx (see Values).
//
// It never returns an error, because Eino stops the whole run on one. When
// the arguments cannot be prepared (a reference names no stored value or is
// malformed, the resolved arguments break the schema or the store's size
// bound, the arguments are not JSON) it returns, in place of arguments,
// a marker carrying the explanation, which Middleware turns into the tool
// message "TOOL was not called: <why>" without running the tool. Without
// Middleware a tool would receive that marker: install both (Configure does).
//
// The arguments of read_value and query_value are passed on as they are
// (their ref is a reference), and so are empty arguments and "null", which
// models send for tools without parameters.
func (a *Adapter) ResolveArguments(ctx context.Context, name, arguments string) (string, error) {
	if a.own(name) {
		return arguments, nil
	}
	if trimmed := strings.TrimSpace(arguments); trimmed == "" || trimmed == "null" {
		return arguments, nil
	}
	out, _, err := a.Values(ctx).Prepare(a.schema(name), []byte(arguments))
	if err != nil {
		return notCalled + err.Error(), nil
	}
	return string(out), nil
}

// refusal returns the explanation a refused call's arguments carry, and
// whether they are such.
func refusal(arguments string) (string, bool) {
	return strings.CutPrefix(arguments, notCalled)
}

// refused reports whether ResolveArguments refused the call whose arguments
// it returned.
func refused(arguments string) bool {
	return strings.HasPrefix(arguments, notCalled)
}
