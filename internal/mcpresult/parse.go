package mcpresult

import (
	"github.com/agentvalues/values/internal/jsontext"
)

// A Result is a tools/call result read from its bytes: the raw JSON of
// its members, and of the text of each text content block. It is the
// [Content] of the rule read from bytes, as the proxy's raw routes and
// contrib/mcpgo have it.
//
// The texts of a result of a few blocks (whose outline has at most
// OutlineMax parts) are kept in a slice; those of one of more blocks are
// read from its content array each time they are needed, so that the
// memory a Result holds does not grow with the number of blocks (a result
// of millions of one-byte blocks would otherwise hold a slice header, and
// the parts of an outline, for each: many times its line).
type Result struct {
	texts   [][]byte // the JSON strings of the text blocks, in order; nil when blocks holds them
	blocks  []byte   // the content array, when texts is nil and the array has blocks
	content []byte   // the content array; nil when absent or null
	n       int      // the number of content blocks
	allText bool     // every block is a text block
	plain   bool     // nothing but what Parse reads: see Plain
	// plainBlocks: no text block has a member beside its type and text.
	plainBlocks bool
	// others holds the key and value of each member of the result that
	// Parse does not read, in pairs, when it read the result from an
	// outline (at most OutlineMax parts); othersKept says it did.
	others     [][]byte
	othersKept bool
	structured []byte // nil when absent or null
	isError    []byte // nil when absent
	meta       []byte // nil when absent
	// release, when not nil, gives back memory of the bytes the result
	// is in once they have been read for the last time (see SetRelease).
	release func([]byte)
	// move, when not nil, moves pages of those bytes into a value's
	// memory (see SetMove).
	move func(dst, src []byte) bool
	// shape, when not nil, is the Shape of structured that the scan of
	// the bytes it is in recorded, its offsets shapeBase more than
	// structured's (see SetShape).
	shape     *jsontext.Shape
	shapeBase int
}

// OutlineMax bounds the parts of an outline Parse reads: a result with
// more (over 80 content blocks or so) is read from its content array.
const OutlineMax = 256

// Descend says what of a result an outline for Parse holds: the members
// of the result, and of its content blocks. (key is nil for an array
// item: a result may be anything here.)
func Descend(depth int, key []byte) bool {
	return depth == 1 && key != nil && jsontext.KeyEquals(key, "content") || depth == 2
}

// Inner names, in an outline of a result as Descend says, the container
// whose Shape the scan of a large result should record as values.Put's
// scan would (jsontext.Limits.Inner, with hooks.ScanLimits): the
// structured content, which Store stores as it came (see SetShape).
func Inner(depth int, key []byte) bool {
	return depth == 1 && key != nil && jsontext.KeyEquals(key, "structuredContent")
}

// Parse reads r, a valid JSON value (jsontext.Valid), as a CallToolResult
// and reports false for what is not one the SDK would decode alike: a
// value other than an object, a content that is not an array (or null), a
// text block whose text is not one string, an isError that is not a
// boolean, a _meta that is not an object (or null), or one of those
// members twice (which one wins is the SDK's to say). Other members are
// ignored, as the SDK's decoding ignores them (it matches names exactly),
// and so are blocks of other types, which only make [Result.AllText]
// false.
//
// It reads the parts of r in its outline ol (of at most OutlineMax parts,
// as Descend says: see wire.Outline), which the scan that validated r
// made; without one (nil), it makes one, skipping the large values once
// each; a result of more parts is read from its content array.
func Parse(r []byte, ol []jsontext.Part) (*Result, bool) {
	res := &Result{allText: true, plain: true, plainBlocks: true, othersKept: true}
	if at := jsontext.SkipSpace(r, 0); at > 0 {
		r, ol = r[at:], nil // the outline's spans were of the value itself
	}
	if r[0] != '{' {
		return res, false
	}
	if ol == nil {
		if ol = jsontext.OutlineOf(r, OutlineMax, Descend); ol == nil {
			return parseBlocks(r) // more parts than an outline keeps
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
				res.content = v
				// Its blocks follow, each with its members.
				for i+1 < len(ol) && ol[i+1].Depth > 1 {
					i++
					text, n, kind := textBlock(r, ol[i:])
					switch kind {
					case kindBad:
						return res, false
					case kindText:
						res.texts = append(res.texts, text)
						res.plain = res.plain && n == 2
						res.plainBlocks = res.plainBlocks && n == 2
					default:
						res.allText = false
					}
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
		default:
			res.plain = false
			res.others = append(res.others, k, v)
		}
		if seen&bit != 0 { // a duplicate: which one wins is the SDK's to say
			return res, false
		}
		seen |= bit
	}
	if !res.allText {
		res.texts, res.blocks = nil, res.content
	}
	return res, true
}

// parseBlocks is Parse for a result whose outline would have more than
// OutlineMax parts: it reads the members of r and the blocks of its
// content in one walk, keeping no part of them but the content array.
func parseBlocks(r []byte) (*Result, bool) {
	res := &Result{allText: true, plain: true, plainBlocks: true}
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
				res.content = v
				jsontext.EachChild(v, func(_, blk []byte) bool {
					_, kind, plain := readBlock(blk)
					ok = kind != kindBad
					res.allText = res.allText && kind == kindText
					res.plain = res.plain && (kind != kindText || plain)
					res.plainBlocks = res.plainBlocks && (kind != kindText || plain)
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
		default:
			res.plain = false
		}
		if ok && seen&bit != 0 {
			ok = false // a duplicate (see Parse)
		}
		seen |= bit
		if !ok {
			return -1
		}
		return end
	})
	return res, ok
}

// The kinds of content block Parse tells apart.
const (
	kindText  = iota // a text block: every type "text", one text, a string
	kindOther        // a block of another type, or of none
	kindBad          // a text block the SDK would refuse
)

// A blockReader reads the members of one content block.
type blockReader struct {
	typed, text bool   // a type member was read; every one was "text"
	texts       int    // text members
	str         []byte // the text member, when it is a string
	members     int
}

// member reads the member k: v.
func (b *blockReader) member(k, v []byte) {
	b.members++
	switch {
	case jsontext.KeyEquals(k, "type"):
		b.text = (!b.typed || b.text) && v[0] == '"' && jsontext.KeyEquals(v, "text")
		b.typed = true
	case jsontext.KeyEquals(k, "text"):
		b.texts++
		if v[0] == '"' {
			b.str = v
		}
	}
	// annotations, _meta and the rest are not stored, and are dropped
	// from a preview, on either path.
}

// kind returns the kind of the block read, and its text's JSON string.
func (b *blockReader) kind() (text []byte, kind int) {
	switch {
	case !b.typed || !b.text:
		return nil, kindOther
	case b.texts == 1 && b.str != nil:
		return b.str, kindText
	}
	return nil, kindBad
}

// blockText is textBlock for a block read whole: the JSON string of the
// text of the block blk, and its kind.
func blockText(blk []byte) (text []byte, kind int) {
	text, kind, _ = readBlock(blk)
	return text, kind
}

// readBlock is blockText, and reports too whether blk has no member but
// its type and text.
func readBlock(blk []byte) (text []byte, kind int, plain bool) {
	if blk[0] != '{' {
		return nil, kindOther, false
	}
	var b blockReader
	jsontext.EachChild(blk, func(k, v []byte) bool {
		b.member(k, v)
		return true
	})
	text, kind = b.kind()
	return text, kind, b.members == 2
}

// textBlock returns the JSON string of the text of the content block
// whose part is blk[0], its members following it, how many members it
// has, and its kind.
func textBlock(d []byte, blk []jsontext.Part) (text []byte, members, kind int) {
	var b blockReader
	object := d[blk[0].Val.Start] == '{'
	for _, m := range blk[1:] {
		if m.Depth != blk[0].Depth+1 {
			break
		}
		members++
		if object {
			b.member(m.Key.Of(d), m.Val.Of(d))
		}
	}
	if !object {
		return nil, members, kindOther
	}
	text, kind = b.kind()
	return text, members, kind
}

// eachText calls fn with the JSON string of each text block, in order.
func (res *Result) eachText(fn func(text []byte)) {
	if res.blocks == nil {
		for _, t := range res.texts {
			fn(t)
		}
		return
	}
	jsontext.EachChild(res.blocks, func(_, blk []byte) bool {
		if t, kind := blockText(blk); kind == kindText {
			fn(t)
		}
		return true
	})
}

// Len returns the number of content blocks.
func (res *Result) Len() int { return res.n }

// AllText reports whether every content block is a text block (true for
// none).
func (res *Result) AllText() bool { return res.allText }

// Structured returns the structured content's JSON as it came, nil when
// there is none (absent or null).
func (res *Result) Structured() []byte { return res.structured }

// Plain reports whether the result holds nothing but what Parse reads: no
// member beside content, structuredContent, isError and _meta, and text
// blocks of a type and a text alone. Another member may be one that
// another decoder (the SDK's) reads into a type its value does not fit
// (a text block's "data" that is not base64, a "size" that is not a
// number), and refuses the whole result for.
func (res *Result) Plain() bool { return res.plain }

// Others calls fn with the key (quoted) and value of each member of the
// result that Parse does not read, in order, and reports whether the
// text blocks are plain (none has a member beside its type and text).
// It reports false, calling fn for none, when the result was read from
// its content array (more parts than OutlineMax), whose members Parse
// keeps none of: the caller reads them from the result's bytes. It spares
// a caller that decodes the other members (mcpproxy's sdkDecodes) a walk
// over the whole result, whose large text it would skip again.
func (res *Result) Others(fn func(k, v []byte)) (plainBlocks, ok bool) {
	if !res.othersKept {
		return false, false
	}
	for i := 0; i+1 < len(res.others); i += 2 {
		fn(res.others[i], res.others[i+1])
	}
	return res.plainBlocks, true
}

// IsError returns the isError member's JSON, nil when absent.
func (res *Result) IsError() []byte { return res.isError }

// Meta returns the _meta member's JSON, nil when absent.
func (res *Result) Meta() []byte { return res.meta }

// JSON returns the content array as it came ([] when there is none).
func (res *Result) JSON() ([]byte, error) {
	if res.content == nil {
		return []byte("[]"), nil
	}
	return res.content, nil
}

// SetShape gives the result sh, the Shape of the container at val in r
// (the result's bytes, which Parse read) that a scan of the bytes r is in
// recorded as Inner names it, its offsets base more than offsets in the
// container: when it is the result's structured content, Store stores
// that without scanning it again. Anything else is ignored.
func (res *Result) SetShape(r []byte, sh *jsontext.Shape, val jsontext.Span, base int) {
	s := res.structured
	if sh == nil || len(s) == 0 || val.Start < 0 || val.End > len(r) || val.End-val.Start != len(s) || &r[val.Start] != &s[0] {
		return
	}
	res.shape, res.shapeBase = sh, base
}

// SetRelease sets the function that gives back the memory of the bytes
// the result was read from (wire.ResultLine.Release): Store calls it on
// the parts it reads for the last time, once it has.
func (res *Result) SetRelease(release func([]byte)) { res.release = release }
