package mcpproxy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"strings"
	"unsafe"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw path: a tool result that will reach the agent as a preview is
// stored from the bytes of the response, before the SDK decodes it. The
// SDK would decode every text block into a Go string (a 100 MB
// JSON-escaped string decoded by encoding/json), and the proxy then copy
// and re-encode it; here each text block is decoded once, straight into
// the buffer the store keeps, and structured content is stored as the
// bytes the server sent. The SDK then decodes only a small stand-in: the
// result's isError and _meta, and under rawStoredKey the handles the
// values were stored under, which [Proxy.present] previews as it does a
// result stored through the SDK.
//
// The raw path takes the results whose content blocks are all text (the
// common case, and the large one); a result with an image, audio or a
// resource, a duplicate member, or anything the SDK would refuse takes the
// SDK path, which stores the same values: tests hold the two paths to
// byte-identical values and previews.

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

// rawResult is what the raw path reads of a tools/call result: the raw
// JSON of its members, and of the text of each content block. The texts
// of a result of a few blocks (whose outline has at most outlineMax
// parts) are kept in a slice; those of one of more blocks are read from
// its content array each time they are needed, so that the memory the
// raw path holds does not grow with the number of blocks (a result of
// millions of one-byte blocks would otherwise hold a slice header, and
// the parts of an outline, for each: many times its line).
type rawResult struct {
	texts      [][]byte // the JSON strings of the text blocks, in order; nil when blocks holds them
	blocks     []byte   // the content array, all of text blocks, when texts is nil and n > 0
	n          int      // the number of text blocks
	structured []byte   // nil when absent or null
	isError    []byte   // nil when absent
	meta       []byte   // nil when absent
	// release, when not nil, gives back memory of the line the result is
	// in once it has been read for the last time (see wire.ResultLine).
	release func([]byte)
}

// parseRaw reads the valid JSON result r as a CallToolResult whose content
// blocks are all text, and reports false for any other result: one the
// SDK path must take, to store it or to refuse it as it does. It reads
// the parts of r in its outline ol (see resultDescend), which the scan
// that validated the line made; without one (nil), it makes one, skipping
// the large values once each.
func parseRaw(r []byte, ol []jsontext.Part) (rawResult, bool) {
	var res rawResult
	if at := jsontext.SkipSpace(r, 0); at > 0 {
		r, ol = r[at:], nil // the outline's spans were of the value itself
	}
	if r[0] != '{' {
		return res, false
	}
	if ol == nil {
		if ol = jsontext.OutlineOf(r, outlineMax, resultDescend); ol == nil {
			return parseRawBlocks(r) // more parts than an outline keeps
		}
	}
	seen := 0
	for i := 0; i < len(ol); i++ {
		p := ol[i]
		if p.Depth != 1 {
			return res, false // unreachable: the blocks are read below
		}
		k, v := p.Key.Of(r), p.Val.Of(r)
		var bit int
		switch {
		case jsontext.KeyEquals(k, "content"):
			bit = 1
			switch v[0] {
			case 'n': // null is no content
			case '[':
				// Its blocks follow, each with its members.
				for i+1 < len(ol) && ol[i+1].Depth > 1 {
					i++
					text, n, ok := textBlock(r, ol[i:])
					if !ok {
						return res, false
					}
					res.texts = append(res.texts, text)
					res.n++
					i += n
				}
			default:
				return res, false
			}
		case jsontext.KeyEquals(k, "structuredContent"):
			bit = 2
			if v[0] != 'n' { // null is no structured content
				res.structured = v
			}
		case jsontext.KeyEquals(k, "isError"):
			if bit = 4; v[0] != 't' && v[0] != 'f' {
				return res, false
			}
			res.isError = v
		case jsontext.KeyEquals(k, "_meta"):
			if bit = 8; v[0] != '{' && v[0] != 'n' {
				return res, false
			}
			res.meta = v
		}
		// Other members are ignored, as the SDK's decoding ignores them
		// (it matches names exactly).
		if seen&bit != 0 { // a duplicate: which one wins is the SDK's to say
			return res, false
		}
		seen |= bit
	}
	return res, true
}

// parseRawBlocks is parseRaw for a result whose outline would have more
// than outlineMax parts: it reads the members of r and the blocks of its
// content in one walk, keeping no part of them but the content array.
func parseRawBlocks(r []byte) (rawResult, bool) {
	var res rawResult
	seen, ok := 0, true
	jsontext.EachChildAt(r, 0, func(k []byte, at int) int {
		end := jsontext.SkipValue(r, at)
		v := r[at:end]
		var bit int
		switch {
		case jsontext.KeyEquals(k, "content"):
			bit = 1
			switch v[0] {
			case 'n':
			case '[':
				jsontext.EachChild(v, func(_, blk []byte) bool {
					_, ok = blockText(blk)
					res.n++
					return ok
				})
				if res.n > 0 {
					res.blocks = v
				}
			default:
				ok = false
			}
		case jsontext.KeyEquals(k, "structuredContent"):
			bit = 2
			if v[0] != 'n' {
				res.structured = v
			}
		case jsontext.KeyEquals(k, "isError"):
			bit = 4
			ok = v[0] == 't' || v[0] == 'f'
			res.isError = v
		case jsontext.KeyEquals(k, "_meta"):
			bit = 8
			ok = v[0] == '{' || v[0] == 'n'
			res.meta = v
		}
		if ok && seen&bit != 0 {
			ok = false // a duplicate (see parseRaw)
		}
		seen |= bit
		if !ok {
			return -1
		}
		return end
	})
	return res, ok
}

// blockText is textBlock for a block read whole: the JSON string of the
// text of the text content block blk, and false for any other block.
func blockText(blk []byte) (text []byte, ok bool) {
	if blk[0] != '{' {
		return nil, false
	}
	isText := false
	ok = true
	jsontext.EachChild(blk, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "type"):
			isText = v[0] == '"' && jsontext.KeyEquals(v, "text")
			ok = isText
		case jsontext.KeyEquals(k, "text"):
			ok = v[0] == '"' && text == nil
			text = v
		}
		return ok
	})
	return text, ok && isText && text != nil
}

// eachText calls fn with the JSON string of each text block, in order.
func (res *rawResult) eachText(fn func(text []byte)) {
	if res.blocks == nil {
		for _, t := range res.texts {
			fn(t)
		}
		return
	}
	jsontext.EachChild(res.blocks, func(_, blk []byte) bool {
		t, _ := blockText(blk)
		fn(t)
		return true
	})
}

// maxDecodedBlocks bounds the content blocks of a tool result that the
// SDK decodes: one whose blocks are not all text (an image among them),
// or that is shown whole. The SDK holds an object of some hundreds of
// bytes for each block, many times a small block's JSON (a result of
// 500,000 one-byte text blocks and an image, a 12 MiB line, took 230 MiB);
// results of text blocks alone, however many, are read from their bytes
// when previewed (see parseRawBlocks). A result with more is refused: the
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

// resultDescend outlines what parseRaw reads of a result: the members of
// its content blocks. (key is nil for an array item: a result may be
// anything here.)
func resultDescend(depth int, key []byte) bool {
	return depth == 1 && key != nil && jsontext.KeyEquals(key, "content") || depth == 2
}

// outlineMax bounds the parts of an outline parseRaw reads: a result with
// more (over 80 content blocks or so) is read by parseRawBlocks.
const outlineMax = 256

// textBlock returns the JSON string of the text of the text content block
// whose part is blk[0], its members following it, and how many members it
// has; ok is false for any other block.
func textBlock(d []byte, blk []jsontext.Part) (text []byte, members int, ok bool) {
	if d[blk[0].Val.Start] != '{' {
		return nil, 0, false
	}
	isText := false
	for _, m := range blk[1:] {
		if m.Depth != blk[0].Depth+1 {
			break
		}
		members++
		k, v := m.Key.Of(d), m.Val.Of(d)
		switch {
		case jsontext.KeyEquals(k, "type"):
			if isText = v[0] == '"' && jsontext.KeyEquals(v, "text"); !isText {
				return nil, 0, false
			}
		case jsontext.KeyEquals(k, "text"):
			if v[0] != '"' || text != nil {
				return nil, 0, false
			}
			text = v
		}
		// annotations, _meta and the rest are not stored, and are dropped
		// from a preview, on either path.
	}
	return text, members, isText && text != nil
}

// textOver reports whether the text of the blocks joined by newlines, as
// joinText makes it, is longer than n bytes, decoding none of it when the
// JSON lengths decide: a string's text is at most its JSON less the quotes,
// and at least a sixth of that (every byte escaped as \u00XX).
func (res *rawResult) textOver(n int) bool {
	most, least := max(res.n-1, 0), max(res.n-1, 0)
	res.eachText(func(t []byte) {
		most += len(t) - 2
		least += (len(t) - 2) / 6
	})
	if most <= n || least > n {
		return least > n
	}
	l := max(res.n-1, 0)
	res.eachText(func(t []byte) {
		tl, _ := jsontext.StringStats(t)
		l += tl
	})
	return l > n
}

// text decodes the text of the blocks joined by newlines, into a buffer of
// its own.
func (res *rawResult) text() []byte {
	b := make([]byte, 0, res.textCap())
	first := true
	res.eachText(func(t []byte) {
		if !first {
			b = append(b, '\n')
		}
		first = false
		b = jsontext.AppendUnquoted(b, t)
	})
	return b
}

// textCap is room enough for the text of the blocks joined by newlines:
// a decoding is never longer than its JSON.
func (res *rawResult) textCap() int {
	n := 0
	res.eachText(func(t []byte) { n += len(t) + 1 })
	return n
}

// firstText returns the JSON string of the first text block.
func (res *rawResult) firstText() []byte {
	var first []byte
	res.eachText(func(t []byte) {
		if first == nil {
			first = t
		}
	})
	return first
}

// takeText is text for the last reader of the blocks. It decodes them a
// piece at a time into memory the runtime does not clear first (see
// valueBuf), and gives the memory of the line behind the decoding back
// (res.release) every releaseStep bytes: a 100 MB text costs the proxy
// the larger of its line and its value, not both.
func (res *rawResult) takeText() []byte {
	v := newValueBuf(res.textCap())
	buf := make([]byte, 0, decodePiece+16)
	first := true
	if res.blocks != nil {
		// Many blocks, most of them small: the content array is given
		// back behind the decoding as a whole.
		back := behind{b: res.blocks, release: res.release}
		res.eachText(func(t []byte) {
			if !first {
				v.b.WriteByte('\n')
			}
			first = false
			back.read(offsetIn(res.blocks, t) - back.n) // up to the text
			jsontext.EachUnquotedPiece(t, decodePiece, buf, func(dec, piece []byte) {
				v.b.Write(dec)
				back.read(len(piece))
			})
		})
		back.read(len(res.blocks) - back.n) // the rest, to the closing bracket
		return v.bytes()
	}
	for _, t := range res.texts {
		if !first {
			v.b.WriteByte('\n')
		}
		first = false
		back := behind{b: t, release: res.release}
		jsontext.EachUnquotedPiece(t, decodePiece, buf, func(dec, piece []byte) {
			v.b.Write(dec)
			back.read(len(piece))
		})
	}
	return v.bytes()
}

const (
	// decodePiece is how much of a long text is decoded at a time, into a
	// buffer that stays in the processor's cache.
	decodePiece = 256 << 10
	// releaseStep is how much of a line is read between releases.
	releaseStep = 4 << 20
)

// behind gives the memory of b back to the system behind a reader of it,
// releaseStep bytes at a time and at its end, when release is not nil.
type behind struct {
	b       []byte
	release func([]byte)
	n, done int // bytes of b read, and released
}

// read tells that the next n bytes of b have been read.
func (r *behind) read(n int) {
	r.n += n
	if r.release != nil && (r.n-r.done >= releaseStep || r.n == len(r.b)) {
		r.release(r.b[r.done:r.n])
		r.done = r.n
	}
}

// A valueBuf holds a large value being built, in memory the runtime does
// not clear first. make([]byte, n) of 100 MB clears every byte of it
// before one is written when the heap has been used before (it has): a
// pass over the whole value, which touches all its pages at once, so that
// it and the line it is decoded from are held whole together. The Grow of
// a strings.Builder takes its memory uncleared.
type valueBuf struct{ b strings.Builder }

// newValueBuf returns a valueBuf with room for n bytes.
func newValueBuf(n int) *valueBuf {
	v := &valueBuf{}
	v.b.Grow(n)
	return v
}

// bytes returns what was written, which nothing may write to: its memory
// is a string's (the store only reads the values it keeps).
func (v *valueBuf) bytes() []byte {
	s := v.b.String()
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// presentRaw stores the tools/call result r, valid JSON, from its bytes
// when the raw path can take it and the agent will get a preview, and
// returns the stand-in result for the SDK to decode. It reports false when
// the SDK path must take r: shown whole, or not a result of text blocks.
func (p *Proxy) presentRaw(vals *values.SessionValues, r []byte, line wire.ResultLine) (json.RawMessage, bool) {
	if p.threshold >= 0 && len(r) <= p.threshold {
		// Shown whole: its text and structured content, which textOver
		// measures, are parts of r, and none decodes longer than it is.
		return nil, false
	}
	res, ok := parseRaw(r, line.Outline)
	if !ok || p.threshold >= 0 && !res.textOver(p.threshold-len(res.structured)) {
		return nil, false
	}
	res.release = line.Release
	h, ch := storeRaw(vals, &res)
	out := make([]byte, 0, 160+len(res.meta))
	out = append(out, `{"content":[]`...)
	if res.isError != nil {
		out = append(out, `,"isError":`...)
		out = append(out, res.isError...)
	}
	// The server's _meta members are forwarded as present forwards them;
	// the mark comes last, so that it wins over one the server wrote.
	out = append(out, `,"_meta":{`...)
	if len(res.meta) > 0 && res.meta[0] == '{' {
		if inner := bytes.TrimSpace(res.meta[1 : len(res.meta)-1]); len(inner) > 0 {
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

// storeRaw stores a result of text blocks by the rules of [Proxy.store],
// decoding the text only when it is stored.
//
// It reads the text blocks and the structured content for the last time
// as it stores them, giving the memory of a mapped line back behind it
// (res.release): only the pages wholly inside them, so that the members
// around them (isError, _meta) can still be read.
func storeRaw(vals *values.SessionValues, res *rawResult) (h, contentHandle string) {
	if res.structured == nil {
		return vals.PutOutput(res.takeText()), ""
	}
	if mirrorsRawText(res) {
		return vals.PutOutput(res.takeText()), ""
	}
	// The frame holding structured is not kept: the store keeps a copy,
	// which the comparison reads.
	res.structured = cloneLarge(res.structured, res.release)
	// Whether the blocks' text is the structured content again is found
	// while the store scans the copy: for a large result, at once, on
	// another core (both only read; the blocks are decoded after).
	same := make(chan bool, 1)
	compare := func() { same <- res.n > 0 && sameRawJSON(res) }
	if len(res.structured) >= compareApart {
		go compare()
	} else {
		compare()
	}
	h, err := vals.Put(json.RawMessage(res.structured))
	if err != nil {
		h = vals.PutOutput(res.structured)
	}
	if res.n > 0 && !<-same {
		contentHandle = vals.PutOutput(res.takeText())
	}
	return h, contentHandle
}

// compareApart is the size of structured content from which storeRaw
// compares it with the blocks' text on a goroutine of its own.
const compareApart = 1 << 20

// mirrorsRawText is mirrorsText for a raw result: its structured content is
// an object with a single string member whose text is the blocks' text.
func mirrorsRawText(res *rawResult) bool {
	member, ok := onlyStringMember(res.structured)
	if !ok {
		return false
	}
	if res.n == 1 && bytes.Equal(member, res.firstText()) {
		return true
	}
	return bytes.Equal(jsontext.AppendUnquoted(nil, member), res.text())
}

// sameRawJSON is sameJSON for a raw result: whether the blocks' text is the
// structured content's JSON again. One block is compared without decoding
// it.
func sameRawJSON(res *rawResult) bool {
	if res.n == 1 {
		return jsontext.SameJSONString(res.structured, res.firstText())
	}
	return jsontext.SameJSON(res.structured, res.text())
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

// cloneLarge returns a copy of b, which it reads for the last time: the
// copy is made in memory the runtime does not clear first (valueBuf), and
// the memory of b given back behind it when release is not nil (see
// behind).
// The copy is made a block at a time so that the goroutine copying can be
// stopped between blocks: a single copy of 100 MB into fresh memory runs
// for a second or more, during which the collector, needing to stop the
// goroutine to scan its stack, signals it again and again and spins
// waiting (measured: a tenth of the proxy's CPU for a 100 MB structured
// result, and a slower copy under the signals).
func cloneLarge(b []byte, release func([]byte)) []byte {
	const block = 1 << 20
	if len(b) <= block {
		return bytes.Clone(b)
	}
	v := newValueBuf(len(b))
	back := behind{b: b, release: release}
	for i := 0; i < len(b); i += block {
		end := min(i+block, len(b))
		v.b.Write(b[i:end])
		back.read(end - i)
		runtime.Gosched()
	}
	return v.bytes()
}
