// Package anthropic brings agentvalues to the tool runner of the Anthropic Go
// SDK (github.com/anthropics/anthropic-sdk-go/v2, the runner of
// client.Beta.Messages.NewToolRunner): every tool result is kept in a
// [values.SessionValues] under a handle (r1, r2, …), a large one reaches the
// model as a bounded preview and a hint, and a tool argument that is exactly
// "$r1" or "$r1.rows.0.id" reaches the tool as the value it names.
//
// Import it under a name of your own beside the SDK's package, which is also
// called anthropic:
//
//	vals := values.New() // one store per run
//	tools := avanthropic.Tools(vals, searchTool, sendTool)
//	runner := client.Beta.Messages.NewToolRunner(tools, params)
//	msg, err := runner.RunToCompletion(ctx)
//
// [Tools] wraps each tool with [Tool] and adds read_value ([ReadValueTool])
// and query_value ([QueryValueTool]), which page and query a stored value.
//
// # What happens to a call
//
// The runner calls the Execute method of a BetaTool with the model's input. A wrapped
// tool resolves the references in it and validates the result against the
// tool's own input schema ([values.SessionValues.Prepare]) before the wrapped
// tool sees it, so the wrapped tool's unmarshal (and any check of its own)
// runs on the real values. A reference that names nothing, a malformed one,
// or arguments that do not match the schema never reach the tool: the call
// fails with "TOOL was not called: <why>", which the runner sends to the model
// as a tool_result with is_error set. The text blocks of the tool's result are
// stored as one value and replaced by what [values.SessionValues.Observe]
// gives: the whole result and a line naming its handle when it is small, else
// a preview and a hint.
//
// # Concurrency
//
// The runner executes the tool calls of one turn in parallel. A wrapped tool
// keeps no state of its own besides the store, and a SessionValues is safe
// for concurrent use, so one store serves every tool of a run. Handles are
// given in the order results are stored, which for parallel calls is the
// order they finish.
//
// # What the runner's hooks cannot express
//
//   - The runner prefixes a tool's error with "Error: ", so the model reads
//     "Error: send was not called: …" where the agentvalues proxy says
//     "send was not called: …". A tool's error text is never stored or
//     previewed: the runner sends it as it is.
//   - The SDK itself validates no tool input against its schema (its typed
//     tools only unmarshal), so the validation here, against the tool's own
//     schema, is the only one. The schema offered to the model is widened to
//     admit a reference string beside every field and item
//     ([values.AdmitReferences]), as the proxy's is; it uses anyOf and
//     pattern, and whether a tool defined with strict accepts it is the
//     API's to say.
//   - Only the tools wrapped are seen: wrap a tool given later to the
//     runner's AddTools with [Tool] too. Tool definitions in Params.Tools that the runner does not execute (server
//     tools, MCP toolsets run by the API) are not wrapped: their results never
//     reach the client as tool calls the runner answers.
//   - A tool the SDK's MCP helper made is traced by the runner as
//     anthropic.mcp_tool_use; wrapped, as anthropic.custom_tool_use (the
//     runner tells them apart by an interface internal to the SDK).
package anthropic
