// Package jsontext is the JSON toolkit every layer of agentvalues shares,
// working on raw bytes and never building a tree:
//
//   - [Scan] validates a document in one pass and records the spans of the
//     first and last children of a top-level container (scan.go), and on
//     request sparse indexes of it, [Marks] of an array's items and
//     [KeyBlocks] of an object's keys, so that a lookup starts near what
//     it names (offsets.go); [Tally] gives what it records of a small
//     document with no Limits (the number of children, the largest) in
//     one tight pass, and Scan itself passes so what lies deeper than
//     anything it records; a long string's body is validated 64 bytes at a
//     time with vector instructions where the machine has them (AVX2 or
//     AVX-512 on amd64; strscan.go, strscan_amd64.s; not with the purego
//     build tag), with the same result, error and offset as without, and
//     decoded so by [AppendUnquoted];
//   - [Walker] walks a document, validating it, calling a [Visitor] for
//     every scalar and keeping the JSON pointer of the value at hand
//     (walk.go);
//   - [SkipValue], [EachChild], [Member] and friends move over JSON that
//     is already valid, without checking it again (skip.go);
//   - [AppendQuote], [QuotedLen], [AppendUnquoted] and [StringStats] are the
//     string codec, with one table of the bytes that need no escape, and
//     [AppendValidUTF8] reads invalid UTF-8 as encoding/json reads it
//     (str.go);
//   - [HeadCut], [TailCut], [AppendClipped], [ClipStringTo] and
//     [ClipString] cut UTF-8 text to a byte budget without splitting a
//     character (cut.go): every clipper in the module calls them;
//   - [ParseUint] is the one decimal integer parser (uint.go).
//
// Nothing here recurses: nesting depth is bounded only by memory. Nothing
// keeps state between calls, and every function is safe for concurrent
// use. The functions documented as taking valid JSON trust their input and
// may return nonsense or panic on anything else: give them only what Scan
// or a Walker accepted.
package jsontext
