package mcpproxy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw result route: a tool result that will reach the agent as a
// preview is stored from the bytes of the response, before the SDK decodes
// it (presentRaw, called by fixResult). The SDK would decode every text
// block into a Go string (a 100 MB JSON-escaped string decoded by
// encoding/json), and the proxy then copy and re-encode it; here
// mcpresult.Store decodes each text block once, straight into the buffer
// the store keeps, and stores structured content as the bytes the server
// sent. The SDK then decodes only a small stand-in: the result's isError
// and _meta, and under rawStoredKey the handles the values were stored
// under, which [Proxy.present] previews as it does a result stored on the
// SDK route.
//
// The raw result route takes the results whose content blocks are all
// text (the common case, and the large one); a result with an image,
// audio or a resource, a duplicate member, or anything the SDK would
// refuse takes the SDK route, which stores the same values by the same
// rule: tests hold the two to byte-identical values and previews.

// rawStoredKey is the _meta key of a stand-in result. Its value holds
// rawNonce, so that a downstream server cannot forge a stand-in: an
// object under this key without it is dropped from the result.
const rawStoredKey = "agentvalues/raw-stored"

// rawNonce marks the stand-ins of this process.
var rawNonce = func() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}()

// maxDecodedBlocks bounds the content blocks of a tool result that the
// SDK decodes: one whose blocks are not all text (an image among them),
// or that is shown whole. The SDK holds an object of some hundreds of
// bytes for each block, many times a small block's JSON (a result of
// 500,000 one-byte text blocks and an image, a 12 MiB line, took 230 MiB);
// results of text blocks alone, however many, are read from their bytes
// when previewed (see mcpresult.Parse). A result with more is refused: the
// call answers with an isError result saying how many blocks it had.
const maxDecodedBlocks = 100_000

// minBlockJSON is the fewest bytes a content block and its comma take
// ({} and ,): a result shorter than maxDecodedBlocks of them has fewer
// blocks, and manyBlocks does not count them.
const minBlockJSON = 3

// manyBlocks returns the number of content blocks of the valid result r,
// an object, and whether there are more than maxDecodedBlocks, counting
// only when r is long enough to hold that many.
func manyBlocks(r []byte) (int, bool) {
	if len(r) <= maxDecodedBlocks*minBlockJSON {
		return 0, false
	}
	n := 0
	jsontext.EachChild(r, func(k, v []byte) bool {
		if jsontext.KeyEquals(k, "content") && v[0] == '[' {
			n = max(n, jsontext.CountChildren(v))
		}
		return true
	})
	return n, n > maxDecodedBlocks
}

// presentRaw stores the tools/call result r, valid JSON, from its bytes
// when the raw result route can take it and the agent will get a preview, and
// returns the stand-in result for the SDK to decode. It reports false when
// the SDK route must take r: shown whole, or not a result of text blocks.
func (p *Proxy) presentRaw(vals *values.SessionValues, r []byte, line wire.ResultLine) (json.RawMessage, bool) {
	if p.threshold >= 0 && len(r) <= p.threshold {
		// Shown whole: its text and structured content, which TextOver
		// measures, are parts of r, and none decodes longer than it is.
		return nil, false
	}
	res, ok := mcpresult.Parse(r, line.Outline)
	if !ok || !res.AllText() || p.threshold >= 0 && !res.TextOver(p.threshold-len(res.Structured())) || !sdkDecodes(r, res) {
		return nil, false
	}
	res.SetShape(r, line.Inner, line.InnerVal, line.InnerBase)
	res.SetRelease(line.Release)
	res.SetMove(line.Move)
	h, ch := mcpresult.Store(vals, res.Structured(), res)
	meta, isError := res.Meta(), res.IsError()
	out := make([]byte, 0, 160+len(meta))
	out = append(out, `{"content":[]`...)
	if isError != nil {
		out = append(out, `,"isError":`...)
		out = append(out, isError...)
	}
	// The server's _meta members are forwarded as present forwards them;
	// the mark comes last, so that it wins over one the server wrote.
	out = append(out, `,"_meta":{`...)
	if len(meta) > 0 && meta[0] == '{' {
		if inner := bytes.TrimSpace(meta[1 : len(meta)-1]); len(inner) > 0 {
			out = append(out, inner...)
			out = append(out, ',')
		}
	}
	out = append(out, `"`+rawStoredKey+`":{"nonce":"`+rawNonce+`","handle":`...)
	out = jsontext.AppendQuote(out, []byte(h))
	if ch != "" {
		out = append(out, `,"content":`...)
		out = jsontext.AppendQuote(out, []byte(ch))
	}
	return append(out, "}}}"...), true
}

// storedRaw returns the handles a stand-in result names, and removes its
// mark from the result's _meta; ok is false for a result stored through
// the SDK (a mark without this process's nonce is removed too).
func storedRaw(res *mcp.CallToolResult) (h, contentHandle string, ok bool) {
	mark, found := res.Meta[rawStoredKey]
	if !found {
		return "", "", false
	}
	delete(res.Meta, rawStoredKey)
	m, _ := mark.(map[string]any)
	if nonce, _ := m["nonce"].(string); nonce != rawNonce {
		return "", "", false
	}
	h, _ = m["handle"].(string)
	contentHandle, _ = m["content"].(string)
	return h, contentHandle, h != ""
}
