// Package eino connects agentvalues to CloudWeGo Eino (github.com/cloudwego/eino):
// every tool result of an Eino tools node is kept under a handle (r1, r2, …),
// a large one reaches the model as a bounded preview and a hint, and a tool
// argument that is exactly "$r1" or "$r1.rows.57.email" reaches the tool as
// the value it names.
//
// Two lines on top of the compose.ToolsNodeConfig a ReAct agent or a graph
// already takes:
//
//	av := eino.New(values.New()) // one store per agent run
//	err := av.Configure(ctx, &conf)
//
// Configure adds the read_value and query_value tools, sets the config's
// ToolArgumentsHandler to [Adapter.ResolveArguments] and puts
// [Adapter.Middleware] first among its ToolCallMiddlewares.
//
// # What the model sees
//
//   - A tool's result is stored with values.SessionValues.Observe and the
//     model gets its Text: a small result whole with a line naming its handle,
//     a larger one (past the store's inline limit, values.WithInlineLimit,
//     2 KiB by default) as a preview and a hint naming read_value.
//   - Arguments are resolved, then validated against the tool's own parameter
//     schema (the one Eino gives the model), before the tool runs. A bad
//     reference, or resolved arguments the schema refuses, never reach the
//     tool: the model gets the tool message "TOOL was not called: <why>",
//     which names the reference, the wording of the agentvalues proxy.
//   - read_value pages any stored value; query_value runs a jq program over
//     one and stores its result under a new handle. Their errors come back
//     as their tool message (Eino has no error flag on a tool message).
//
// # What Eino's hooks cannot express
//
// A ReAct agent's ToolReturnDirectly hands its caller what the tools node
// returned: with the adapter, the transcript text (a large result's preview
// and hint, the whole value staying in the store under its handle), not the
// tool's raw output. Configure cannot see that map.
//
// Eino (v0.7.36) stops the whole graph run when a ToolArgumentsHandler
// returns an error: the model never sees it. So ResolveArguments never
// returns one: for arguments it cannot prepare it returns a marker that
// starts with a NUL byte (no JSON does) and carries the explanation, and the
// middleware, which sees each call's arguments after the handler, answers
// such a call with the explanation as the tool's message instead of running
// the tool. The two therefore go together: a handler without the middleware
// would hand a tool the marker. Configure installs both.
//
// Eino itself never validates arguments against a tool's schema; the
// handler does, with the schema Configure read from each tool's Info. A tool
// given to a run later (compose.WithToolList, react.WithToolList) is unknown
// to the adapter: its arguments are resolved and checked for references that
// did not resolve, not validated. A schema the validator cannot compile is
// likewise treated as none.
//
// Tool schemas are offered to the model as the tools declare them: a
// provider that enforces schemas strictly may refuse "$r1" where the schema
// asks for an array (the proxy rewrites schemas to admit references; this
// adapter does not touch a tool's Info).
//
// A streaming tool's result is read whole before it is stored, and reaches
// the model as one chunk. Results of enhanced (multimodal) tools are passed
// on as they are, not stored; their arguments are resolved like any other's.
// A tool that returns an error still stops the run, as Eino decides; the
// middleware does not turn tool errors into messages (Eino's interrupts are
// errors too).
//
// # Concurrency
//
// Eino runs the calls of one model message in parallel. An Adapter and the
// SessionValues behind it are safe for concurrent use; the handles of results
// stored at the same time are numbered in the order the results arrive.
package eino
