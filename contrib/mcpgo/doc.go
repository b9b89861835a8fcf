// Package mcpgo puts agentvalues in a server built with mark3labs/mcp-go
// (github.com/mark3labs/mcp-go): every tool result is stored under a handle
// (r1, r2, …) in a store kept per client session, a large result reaches the
// client as a bounded preview and a hint instead of its bytes, a tool
// argument that is exactly a reference ("$r1", "$r1.rows.0.id") reaches the
// tool handler as the value it names, and the server offers read_value and
// query_value to page and query stored values.
//
//	av := mcpgo.New()
//	s := server.NewMCPServer("files", "1.0.0", av.ServerOption())
//	s.AddTool(listFiles, handleListFiles) // tools are added as before
//
// [Values.ServerOption] installs the parts one by one: [Values.Middleware]
// as a tool handler middleware, [Values.FilterTools] as a tool filter (it
// rewrites what tools/list advertises), the read_value and query_value
// tools, and [Values.EndSession] as an OnUnregisterSession hook. Pass it
// before the server's other options: the middleware added first is the
// outermost, so the others then see resolved arguments (and the tool's own
// result, before it is stored and previewed).
//
// # What a client sees
//
// The same as through `agentvalues proxy`. A result whose text blocks and
// structured content together exceed the threshold ([WithThreshold], 8 KiB
// by default) comes back as one text block holding the preview of the stored
// value and the hint line, with image and audio blocks passed on and no
// structuredContent; a smaller one comes back whole, with one more text
// block naming its handle and, when the tool declares no output schema, the
// handle as the first member of its structured content. Either way _meta
// carries the handle under [MetaHandle] (and under [MetaContentHandle] the
// handle of content blocks stored apart from the structured content). What
// is stored is what agentvalues proxy in front of this server would store,
// by construction: the adapter reads the result as mcp-go writes it for
// the client, and stores it by the proxy's own rule (structured content
// byte for byte when there is some, with the content blocks under a second
// handle unless their text is its JSON again; else the text of the content
// blocks joined by newlines, JSON text becoming a JSON value; else the
// JSON of the blocks as written).
//
// tools/list advertises every tool (except read_value and query_value) with
// a note on references at the end of its description, with an input
// schema in which every field also admits a reference string, and without
// its output schema, since a preview cannot conform to it.
//
// # References and validation
//
// The middleware resolves the call's arguments in the session's store and
// validates the result against the tool's input schema as registered
// ([values.SessionValues.Prepare]), then hands the handler a request whose
// Params.Arguments (a map, as mcp-go decodes it) and Params.RawArguments
// hold the resolved arguments. A reference that names nothing, a malformed
// one, or resolved arguments that violate the schema never reach the
// handler: the client gets a tool result with isError set, "TOOL was not
// called: " and the reason, naming the reference.
//
// mcp-go cannot express resolution before its own schema validation:
// [server.WithInputSchemaValidation] validates the raw arguments against the
// registered schema before any tool handler middleware runs, so with it a
// reference in a field whose schema refuses a string ("$r1.ids" for an
// array) is refused by mcp-go and never reaches the middleware. Do not
// combine the two: the middleware's own validation replaces it, and its
// errors name the reference behind each offending value. References in
// string fields pass either way.
//
// # Sessions
//
// Each client session (keyed by its session ID) gets its own store at its
// first tool call, numbered past every handle handed out before, so a
// handle of an ended session names nothing in a new one. The store is
// dropped when mcp-go unregisters the session (stdio: when the connection
// ends; in-process: when the client is closed; Streamable HTTP: on DELETE,
// when [server.WithSessionIdleTTL] is set and the session idles past it, or
// when a GET stream that registered the session ends. A client that
// vanishes without DELETE keeps its store until then, with no idle TTL for
// as long as the server runs). Calls without a session, or with
// an empty session ID (stateless Streamable HTTP, protocol version
// 2026-07-28, which has no sessions), share one store that lives as long as
// the Values.
//
// # Limits
//
// Tools added with AddTaskTool (task-only handlers) do not run through tool
// handler middlewares, so their arguments are not resolved and their
// results are not stored; ordinary tools called as tasks are. A handler
// that returns an error (a JSON-RPC error to the client) has nothing
// stored. A result that asks the client for more input (SEP-2322) is passed
// on as it is; the retried call is resolved again. A tool the server
// registers under the name read_value or query_value replaces the
// adapter's: the middleware passes its calls through untouched.
// [server.WithHooks] given after [Values.ServerOption] replaces the hooks
// the option added to, and sessions' stores are then never dropped: give
// it before, or add [Values.EndSession] to those hooks yourself.
package mcpgo
