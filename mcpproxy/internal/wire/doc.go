// Package wire is the floor of the MCP proxy that deals in bytes: the
// line transport of newline-delimited JSON-RPC, and a call API over it by
// bytes, with hooks through which the layers above see and change what
// it reads and writes. It imports neither the agentvalues library nor the
// SDK's mcp package (a test holds it to that), only the SDK's jsonrpc
// message types; what it knows of MCP is what a JSON-RPC transport must
// (a message nests at most 1000 levels, as the SDK decodes it).
//
// The concepts, and the file that holds each:
//
//   - [Conn], a connection that survives bad input: it answers or logs a
//     malformed line and reads on (conn.go, malformed.go). On the client
//     side it numbers every call on the wire in one sequence and gives
//     each response its call's own id back; ids match by type and value
//     (id.go).
//   - Reading lines: a line is read into blocks, or on Linux into memory
//     mapped for it alone that is given back as it is read; a line over
//     the bound is read through, keeping its ends to find its id (line.go,
//     longline.go).
//   - Taking a message from its bytes: a plain envelope is read from one
//     scan of the line, which also outlines a large result as the Fix
//     hook asks ([Outline], [ResultLine]); anything else is left to the
//     SDK's decoding (message.go).
//   - [Hooks]: Fix rewrites a response's result before it is delivered,
//     given the tag of its call ([WithTag]); Take sees each request of a
//     client before it is delivered, and may answer it itself.
//   - The call API: [Conn.Start] writes a request the caller framed and
//     hands its response to the caller, never to Read; a [Cancel], which
//     the one cancelling calls directly, ends it first (call.go).
//   - [Splices]: large arguments written in place of a placeholder, never
//     re-encoded (splice.go).
//   - [Pipe]: a pipe the process opened itself, read and written with raw
//     system calls, which keep the runtime's monitor thread asleep
//     through small calls; [Kick] wakes it where long work begins
//     (pipe_linux.go).
//
// Errors are worded as mcpproxy's: they reach its users as its own.
package wire
