// Package mcpproxy puts agentvalues in front of any MCP server: handles,
// previews, $r references and paging for every tool, with no code in the
// client or the server.
//
// A [Proxy] is an MCP client of one downstream server and an MCP server for
// the upstream client (the agent). It mirrors the downstream tools, prompts
// and resources and adds read_value and query_value. Every tool result (and
// resource read) is stored in a [values.SessionValues] under a handle (r1,
// r2, …); a result larger than the threshold reaches the agent as a bounded
// preview and a hint, a smaller one whole with a line naming its handle. The
// handle also travels in the result's _meta under [MetaHandle], and in its
// structuredContent. The agentvalues/ keys of every _meta the proxy relays
// (results, their content blocks, resource contents, prompts, log
// messages) are the proxy's own: a downstream server's are dropped, so
// that no server can name another's value (the stored value keeps them). Input schemas are offered with a reference string
// admitted beside every field (Options.OriginalSchemas turns that off);
// arguments are validated against the original. A [Gateway] does the same
// for several servers at once, with one store for all of them (or one per
// upstream session), and restarts a server that died.
//
//	p, err := mcpproxy.Connect(ctx, &mcpproxy.CommandTransport{
//		Command: exec.Command("npx", "-y", "@modelcontextprotocol/server-filesystem", dir),
//	}, nil)
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	return p.Run(ctx, &mcpproxy.LineTransport{Reader: os.Stdin, Writer: os.Stdout})
//
// # References
//
// Any string argument of a mirrored tool that is exactly a reference
// ("$r3", "$r3.rows.0.id") is replaced by the stored value before the call,
// then the arguments are validated against the tool's input schema
// ([values.SessionValues.Prepare]). A reference that does not resolve, or
// arguments that do not validate, never reach the downstream server: the
// agent gets a tool result with isError set and an explanation it can act on.
//
// # What is stored
//
// A result's structuredContent when it has one (a null one counts as none),
// byte for byte as the server sent it; otherwise the text of its content
// blocks, joined with newlines ([values.SessionValues.PutOutput]: JSON text
// becomes a JSON value). Refinements: structured content that is only the
// text again (an object with a single string member equal to the text, as
// servers built on the TypeScript SDK send) stores the text, so JSON inside
// it can be referenced; content blocks beside structured content that are
// not its JSON again are stored too, under a second handle named in the
// result and in _meta under [MetaContentHandle]; and content with non-text
// blocks (images, audio, resources) stores the JSON array of the blocks as
// the server sent them, so nothing is lost.
//
// Invalid UTF-8: JSON text is UTF-8, and a string can carry anything else
// only as stray bytes (which encoding/json and the SDK take) or as a lone
// surrogate escape ("\ud800"). Both read as U+FFFD, as encoding/json
// reads them: one U+FFFD for each byte that begins no valid sequence (a
// message from the server holding one is read so before anything else
// reads it), and one for each lone surrogate. So a text block stays text
// and structured content stays JSON, stored the same on either path; a
// value is never binary for a bad byte in a string.
//
// Whether a result comes whole is judged on what would reach the
// transcript: the text of its content blocks plus its structured content.
// Image and audio blocks are passed on to the agent in either case.
//
// # Limits
//
// Mirrored tools drop outputSchema, and previewed results drop
// structuredContent: a preview cannot conform to an output schema.
// [CommandTransport] and [LineTransport] read messages of up to
// [DefaultMaxMessage] (256 MiB) by default; a longer one is read through
// without being held, and the call it answers fails with an error that
// states both sizes. A result the SDK decodes (one with an image, or one
// shown whole) may have at most 100,000 content blocks: the SDK holds an
// object per block, and one with more is refused with an isError result
// saying so; a previewed result of text blocks alone may have any number,
// read from its line in memory that does not grow with them. If the
// downstream server goes away, the proxy writes
// one line to its log and every later call of a mirrored tool returns an
// isError result saying so; read_value keeps working on what is stored.
//
// # Sessions
//
// Each upstream session has a queue of its own for the notifications sent
// to it (a downstream server's log messages, list changes): a client that
// does not read them loses its own past a bound, is told how many once it
// reads again, and holds up no other session (session.go). A call's
// progress comes on the call's own stream. A downstream server's
// notifications are handled as they are read, so one that floods them
// costs the proxy one at a time, and log messages no session asked for
// are dropped unread (intake.go). Over Streamable HTTP
// ([Proxy.StreamableHTTPHandler]), ending a session, by its DELETE or its
// idle timeout, cancels its calls, downstream too (httpsession.go).
//
// # Bad input
//
// Nothing a client or a server sends stops the proxy. On [LineTransport], a
// malformed line from the client is answered with the JSON-RPC error the
// specification names (-32700, -32600, -32602) and the proxy reads on. A
// line from the downstream server that is not JSON-RPC (a log line on its
// standard output) is skipped with a line in the log, as is a response
// whose id names no call in flight: ids match by type and value, so the
// string "8" or the number 8.5 does not answer call 8, which goes on
// waiting for its own response. A result the SDK
// cannot decode, or that is not a CallToolResult object, becomes an isError
// result saying so, at once. A result whose structuredContent nests deeper
// than the SDK decodes is stored whole. A downstream tool whose definition
// nests more than 512 levels deep is left out, with a line in the log. A
// downstream error message longer than 2 KiB (or the threshold) is stored
// like a result and shown as its preview and hint.
package mcpproxy
