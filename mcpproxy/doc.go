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
// upstream session), and restarts a server that died. A gateway offers a
// tool or prompt under its own name, and as SERVER__NAME only where two
// servers offer the same name (or when asked to: Options.PrefixNames,
// Downstream.PrefixNames), deciding again as the servers' lists change
// (gateway_names.go); calls are routed by those names. A gateway answers
// the agent at once and starts its servers in the background, each under a
// deadline of its own, offering each one's tools as it is ready
// (gateway_start.go; [Gateway.Wait] waits for them).
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
// # How a call travels
//
// A tools/call of a mirrored tool takes one of three routes; each step
// names the file that holds it. All end in the same rule of what is
// stored and what is shown (internal/mcpresult), so a result stores the
// same values and reaches the agent as the same bytes whichever it takes;
// tests hold the routes to that.
//
//	agent ─► upstream ─┬─► SDK server ─► callTool ─► SDK client ──┐   SDK route
//	                   └─► rawUpstream.take ─► callToolRaw ───────┤   raw call route
//	                                                              ▼
//	downstream server ◄─► wire.Conn, or rawConn ─► Fix hook: fixResult
//	    ├─ raw result route: presentRaw stores it from the line's bytes
//	    └─ otherwise: wrapStructured, keepContent; the SDK decodes it
//	─► finishCall, present: mcpresult.Store, Whole, Preview ─► agent
//
// The SDK route, over any transport:
//
//  1. The SDK server decodes the request and runs the mirrored tool's
//     handler, callTool (call_sdk.go): the arguments are resolved and
//     validated ([values.SessionValues.Prepare]); large ones are held
//     apart as a placeholder (wire.Splices), never encoded again.
//  2. The SDK client writes the downstream request. The proxy's own line
//     connection (internal/wire: conn.go) numbers it on the wire, in one
//     sequence with the raw call route's, and writes the arguments in
//     place of their placeholder; another transport's connection is
//     wrapped by rawConn (downstream.go), which puts them back first.
//  3. The response line is read, into memory mapped for it alone when it
//     is long (internal/wire: line.go, longline.go), and taken apart from
//     one scan of its bytes (message.go); a response the SDK could not
//     take ends its call with an error saying why (malformed.go).
//  4. Its result goes through the Fix hook, Proxy.fixResult
//     (downstream.go), before the SDK decodes it: a result of text blocks
//     alone that will be previewed takes the raw result route; any other
//     has its structured content, and its blocks when they are not all
//     text, kept as the server sent them across the SDK's decoding
//     (wrapStructured, keepContent).
//  5. The SDK client decodes it, and finishCall and present (call.go)
//     store it with mcpresult.Store and build what the agent gets, which
//     the SDK server encodes; finishCall notes the result (notes.go: its
//     tool, server, time and whether it was previewed, and the bytes
//     returned and shown, per store and overall), which [Proxy.Sessions],
//     [Proxy.Notes] and [Proxy.Totals] read for the value browser
//     (mcpproxy/browse).
//
// The raw result route (call_rawresult.go), a step of the other two: the
// result is read and stored from the bytes of its line (mcpresult.Parse,
// mcpresult.Store), each text decoded once, straight into the buffer the
// store keeps, and the line's memory given back behind it; the SDK decodes
// only a stand-in that names the handles, which present previews.
//
// The raw call route (call_rawcall.go), for [Proxy.Run] and [Gateway.Run]
// over a [LineTransport], and over Streamable HTTP for the calls the
// session layer's fast path takes (httpfast.go: there the session layer,
// not a Take hook, hands the call to callToolRaw, and writes the response
// as one JSON object): through the SDK a small call costs the proxy
// more in decoding, dispatch, encoding and goroutine hand-offs on both
// sides than in anything it does itself, so the nominal call of a
// mirrored tool is answered without them.
//
//  1. The upstream wire.Conn shows each request to its Take hook,
//     rawUpstream.take, before the SDK sees it. It follows the session's
//     initialization, cancels a call the client cancels (and the server is
//     sent notifications/cancelled naming the call's id, as the SDK client
//     sends it), drops a request whose id is in flight on either route (as
//     the SDK drops one), and takes a nominal tools/call. A raw call is
//     cancelled with no context watching another: the one cancelling
//     (take for the client, readEnded for the client's end, Close through
//     rawCalls) cancels the call's context and its wire.Cancel itself.
//  2. callToolRaw prepares the arguments and starts the downstream call by
//     bytes (wire.Conn.Start), on the goroutine that read the request when
//     its arguments are small and hold no reference (rawLight), else on a
//     worker. Its response comes back to the call, not to the SDK client,
//     through the same Fix hook, on the goroutine that read it when the
//     store is the proxy's own in memory (no I/O), else on one of its own.
//  3. decodeResult reads the result as the SDK client would, and
//     finishCall and present store it and build what the agent gets, as
//     on the SDK route; rawLine writes the response line as the SDK
//     server would. The requests a goroutine reading the client sends
//     from lines it read at once, and the responses one reading the server
//     writes, are held and written together when it has no whole line
//     left (wire.Batch): one write and one wake-up of the peer for what a
//     relay copying bytes would pass in one. sdkbytes.go is the one file that must match the SDK
//     byte for byte: the request, the response line, the result's
//     encoding, and the errors worded as the SDK words them.
//
// Nominal means: the request's params are a name, at most an arguments
// object, and a _meta only as below, with no progress token (the SDK route
// gives the downstream call a token of the proxy's own); the session is
// initialized, either (before protocol 2026-07-28) by an initialize the SDK
// answered and notifications/initialized, with the request carrying no
// _meta, or (2026-07-28) by a server/discover the SDK answered, with the
// request's _meta byte for byte that of the discover request, whose
// validation by the SDK is then known to pass (the route adds to the
// result what the SDK adds at that version: resultType, and the serverInfo
// the discover response carried); the tool is a mirrored one; the proxy
// has one store (not Options.PerSession); and the downstream server is up,
// reached over the proxy's own line connection ([CommandTransport]), and
// (at 2026-07-28) was sent a server/discover by the SDK client, whose
// _meta the route's requests carry too; a client at 2026-07-28 with a
// server before it takes the SDK route, which bridges their requests for
// input (bridge.go). Anything else takes the SDK route,
// untouched; once taken, every outcome is the SDK route's, errors
// included. When the client's side of the connection ends, the calls in
// flight are cancelled, downstream too, and their responses not written,
// as the SDK does. Middleware added to the SDK server ([Proxy.Server]) does
// not see the calls the raw call route answers.
//
// # Limits
//
// Mirrored tools drop outputSchema, and previewed results drop
// structuredContent: a preview cannot conform to an output schema.
// [CommandTransport] and [LineTransport] read messages of up to
// [DefaultMaxMessage] (256 MiB) by default; a longer one is read through
// without being held, and the call it answers fails with an error that
// states both sizes. [BoundedRoundTripper] does the same for a
// Streamable HTTP server, as the HTTP client's transport. A result the SDK
// decodes (one with an image, or one shown whole) may have at most
// 100,000 content blocks: the SDK holds an object per block, and one with
// more is refused with an isError result saying so; a previewed result of
// text blocks alone may have any number, read from its line in memory
// that does not grow with them. If the downstream server goes away, the
// proxy writes one line to its log and every later call of a mirrored
// tool returns an isError result saying so; read_value keeps working on
// what is stored.
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
// are dropped unread (intake.go).
//
// # Protocol versions
//
// A proxy connects to its servers before any client connects to it, so
// it cannot negotiate the client's version with a server: it asks each
// server for Options.ProtocolVersion ([DefaultProtocolVersion],
// 2025-11-25, when empty), and the server may answer with another it
// supports (protocol.go). The version matters: from 2026-07-28 on, every
// request carries a per-request _meta (about 250 bytes a small call, which
// costs a go-sdk server 1.4–1.6 times its CPU per call), and a server asks
// for input within a call's result instead of by requests of its own. The
// agentvalues command speaks each server the client's own version when it
// serves one client on stdin/stdout, read from the client's first message
// ([ClientProtocolVersion]) before the servers are started, and
// 2025-11-25 with -listen, where clients of any version share each server;
// -protocol-version sets it either way. Whatever the pair, a client newer
// or older than its server works on every route: a call's _meta, its
// result's resultType and serverInfo, and requests for input are each
// given as the receiving side's version has them (see below).
//
// # The rest of the protocol
//
// What is not a tool, prompt or resource passes through in both
// directions (passthrough_*.go), the server's answer or error returned as
// it gave it:
//
//   - completion/complete goes to the server that offers the prompt
//     (SERVER__NAME in a gateway) or the resource or template URI its ref
//     names; a server without the completions capability gives no values
//     (passthrough.go).
//   - resources/subscribe and unsubscribe go to the server that offers the
//     URI, and its notifications/resources/updated to the sessions
//     subscribed to it. The proxy holds one subscription per URI for all
//     its sessions: the server is unsubscribed when the last session
//     unsubscribes (or an update finds none left), and subscribed again
//     when it is restarted (passthrough_subscribe.go).
//   - sampling/createMessage, elicitation/create and roots/list from a
//     server go to an upstream session, and its answer back
//     (passthrough_client.go). The proxy declares sampling, elicitation and
//     roots to every server, since it connects before any client does; a
//     request no session can answer gets a JSON-RPC error saying why (no
//     client connected, the client did not declare the capability, or
//     several clients and nothing to tell which). Which session: the one
//     whose call to that server (tools/call, prompts/get, resources/read,
//     completion, subscription) is in flight, the request going on that
//     call's own stream; with calls of several sessions in flight (before
//     protocol 2026-07-28 a request names no call), the session of the
//     call that started last. Outside any call, roots/list goes to the
//     session whose roots were last announced, anything else to the only
//     client connected. A session's initialization (when it declares roots
//     with listChanged) and its notifications/roots/list_changed send
//     notifications/roots/list_changed to every server, so that each asks
//     again. A server's notifications/elicitation/complete goes to the
//     session its URL elicitation went to (at most maxURLElicitations
//     remembered per server).
//   - At protocol 2026-07-28 a server asks for input within its result
//     (multi round-trip requests, inputRequests), and is called again with
//     the answers. Such a result is passed up as it is, nothing stored: a
//     client at 2026-07-28 answers it and calls again, the call going down
//     with the answers; for a client before it, the SDK server asks the
//     client itself and calls again (once), and the raw call route does the
//     same through the handlers above (up to maxInputRounds rounds).
//     A server before 2026-07-28 that asks by a request of its own within
//     a call of a client at 2026-07-28 or later (which takes no request
//     within a call) is bridged: the client's call ends with an
//     input-required result holding the request, and its next call, with
//     the answer and the result's requestState, hands the answer to the
//     server's request and waits for the call's result or the server's
//     next request (bridge.go; such calls take the SDK route; at most
//     maxParked calls wait for their client's answer, each for at most
//     parkTimeout).
//   - ping is answered by each side itself.
//   - A request the client cancels (notifications/cancelled) is not
//     answered, on a [LineTransport] served by [Proxy.Run] or
//     [Gateway.Run] and over Streamable HTTP, on either route, and the
//     call is cancelled downstream, with the client's reason on the raw
//     call route (call_rawcall.go, httpfast.go); the SDK route gives the
//     server the SDK's reason ("context canceled"). Over Streamable HTTP
//     the POST that carried the request is answered with an event stream
//     that ends without a message (httpfast.go).
//
// # Streamable HTTP
//
// [Proxy.HTTPHandler] and [Gateway.HTTPHandler] serve the proxy over
// Streamable HTTP, and [ServeHTTP] serves such a handler on a listener,
// all configured by [HTTPOptions]. A request passes three floors, each of
// which only sees what the one above let through:
//
//  1. The bounds layer (httpserve.go, httpauth.go, httporigin.go,
//     httpbody.go): with HTTPOptions.Token, the bearer token is checked
//     (401 with WWW-Authenticate without it); a POST without a session
//     id must be an initialize (400 otherwise); the Origin is checked (403 for a browser page of another origin, such
//     as a DNS-rebound one); requests in flight (MaxRequests), open
//     sessions (MaxSessions) and the bytes of the request bodies held at
//     once (MaxBodyBytes) are bounded (503 with Retry-After past each); a
//     body is read once, within MaxMessage (413) and ReadTimeout then
//     MinBodyRate (408), and a tools/call's large arguments are held
//     apart from what the SDK decodes, as a stand-in that the outermost
//     receiving middleware puts back. Every refusal is a JSON-RPC error
//     saying which bound and how to raise it.
//  2. The session layer (httpsession.go) ends sessions: by its DELETE, or
//     after SessionTimeout without a request, a session's calls are
//     cancelled first, downstream too (each server is sent
//     notifications/cancelled), what is being written to it is cut off,
//     and it is closed, its store dropped; its place under MaxSessions is
//     free once the DELETE is answered. One write of a response waits for
//     a client that does not read at most 30 s plus 1 s per 64 KiB it
//     carries (writeStall, writeRate), then the response is broken off.
//     The session layer answers the nominal tools/call of an initialized
//     session itself, on the raw call route, as one JSON object (its fast
//     path, httpfast.go: the conditions are there), and handles a
//     cancellation: a cancelled request is not answered.
//  3. The SDK's handler: a server session (and with Options.PerSession a
//     store) per HTTP session. It is made in one place, with its own idle
//     timeout and body bound off: the layers above keep both.
//
// With Options.SessionStore durable, a session that a client names after
// the process restarted (or that another process sharing the store began)
// is continued from its store, its handles naming the same values
// (httpresume.go).
//
// [ServeHTTP] adds the bounds of the connections (httpconn.go): at most
// MaxConns open (one more is answered 503 and closed), headers within
// ReadTimeout, an idle keep-alive connection closed after IdleTimeout.
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
//
// # Telemetry
//
// Options.Telemetry, a [Telemetry], is told of every tool call and
// resource read forwarded downstream, on every route (telemetry.go): as it
// begins (with the request's _meta, for the client's trace context), as
// its request is sent downstream (with the _meta that request carries, to
// add trace context to) and as it ends, with the facts of a [Request]:
// server, tool, handles, bytes returned and shown, references resolved,
// validation and error class. Nil, the default, costs a nil check at each
// point. Package mcpproxy/telemetry implements it with OpenTelemetry, and
// [RequireToken] puts another route of the listener (its /metrics) behind
// the MCP endpoint's token.
package mcpproxy
