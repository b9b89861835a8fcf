// Package mcpresult is the rule of what of an MCP tool result is stored
// and what is shown, once, over the result's bytes: the proxy's three
// routes (the SDK route, the raw result route and the raw call route, see
// mcpproxy) and the mcp-go adapter (contrib/mcpgo) all call it, so that a
// result stores the same values whichever of them takes it.
//
// The concepts, and the file that holds each:
//
//   - [Store]: what is stored, and under how many handles (store.go).
//   - [Content]: the blocks as the rule reads them, either a [Result] read
//     from a result's bytes by [Parse] (parse.go), whose text is decoded
//     once, straight into the buffer the store keeps, giving the memory
//     of the bytes behind it back as it goes (text.go), or a caller's
//     decoded blocks.
//   - What is shown: [Whole] decides between the result whole and a
//     preview; [Preview], [HandleLine] and [WithHandle] make what the
//     client reads; [MetaHandle] and [MetaContentHandle] name the handles
//     in its _meta (show.go).
//
// Text is valid UTF-8 wherever the rule reads it: a caller reads stray
// bytes in a JSON string as U+FFFD, as encoding/json does, before it
// calls the rule.
package mcpresult
