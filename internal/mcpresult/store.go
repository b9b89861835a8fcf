package mcpresult

import (
	"bytes"
	"encoding/json"
	"unsafe"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/hooks"
	"github.com/agentvalues/values/internal/jsontext"
)

// Content is a result's content blocks, as the rule reads them: [Result]
// from a result's bytes, or a caller's decoded blocks.
type Content interface {
	// Len returns the number of blocks.
	Len() int
	// AllText reports whether every block is a text block (true for none).
	AllText() bool
	// Text returns the text of the text blocks joined by newlines, valid
	// UTF-8. Store may call it more than once, and keeps what it returns
	// as a stored value: nothing may write to it after.
	Text() []byte
	// JSON returns the JSON array of the blocks as the server sent them
	// (a decoded block encoded again where there were no bytes), valid
	// UTF-8. Store asks for it only when AllText is false, keeps it, and
	// stores the text instead when it fails.
	JSON() ([]byte, error)
}

// Store puts a tool result in vals by the rule of what of a result is
// stored, and returns its handle, and the handle of its content blocks
// when they are stored apart (else ""). structured is the JSON of the
// result's structured content, valid UTF-8, nil when there is none
// (absent or null).
//
//   - With no structured content, the content is stored: the text of its
//     blocks when all are text (values.SessionValues.PutOutput: JSON text
//     becomes a JSON value), else the JSON array of the blocks, so that
//     nothing is lost.
//   - Structured content that is only the text again (an object with a
//     single string member equal to the text of the blocks, all text, as
//     servers built on the TypeScript SDK send) stores the text, so that
//     JSON inside it can be referenced.
//   - Otherwise the structured content is stored, byte for byte as it
//     came, and the content blocks beside it are stored too, under a
//     second handle, unless they are all text and their text is the
//     structured content's JSON again: the same bytes, white space outside
//     strings aside (member order, number spelling and duplicate members
//     count).
//
// A Result is read for the last time as it is stored, giving back the
// memory behind it as it goes (see Result.SetRelease); the structured
// content is then stored as a copy of its bytes, and compared with the
// text on another core while the store scans it when it is large.
func Store(vals *values.SessionValues, structured []byte, c Content) (h, contentHandle string) {
	res, _ := c.(*Result)
	if structured == nil {
		return storeContent(vals, c, res), ""
	}
	// A Result's structured content was validated with the bytes around it.
	valid := res != nil || jsontext.Valid(structured) == nil
	if valid && c.AllText() && mirrors(structured, c, res) {
		return putText(vals, c, res), ""
	}
	if res != nil {
		// The bytes holding structured are not kept: the store keeps a
		// copy, which the comparison reads.
		structured = res.cloneStructured(structured)
	}
	// Whether the blocks' text is the structured content again is found
	// while the store scans it: for a large result, at once, on another
	// core (both only read; the blocks are decoded after).
	same := make(chan bool, 1)
	compare := func() { same <- valid && c.Len() > 0 && c.AllText() && sameJSON(structured, c, res) }
	if res != nil && len(structured) >= compareApart {
		go compare()
	} else {
		compare()
	}
	if res != nil && res.shape != nil {
		// The line's scan recorded its Shape as Put's scan would (of a
		// container: SetShape takes none of anything else).
		h = hooks.PutScannedJSON(vals, structured, res.shape, res.shapeBase)
	} else {
		var err error
		if h, err = vals.Put(json.RawMessage(structured)); err != nil {
			h = vals.PutOutput(structured)
		}
	}
	if c.Len() > 0 && !<-same {
		contentHandle = storeContent(vals, c, res)
	}
	return h, contentHandle
}

// compareApart is the size of a Result's structured content from which
// Store compares it with the blocks' text on a goroutine of its own.
const compareApart = 1 << 20

// storeContent stores content blocks: their text when all are text, else
// the JSON array of the blocks. res is c when c is a Result.
func storeContent(vals *values.SessionValues, c Content, res *Result) string {
	if c.AllText() {
		return putText(vals, c, res)
	}
	blocks, err := c.JSON()
	if err != nil {
		return vals.PutOutput(c.Text())
	}
	if h, err := vals.Put(json.RawMessage(blocks)); err == nil {
		return h
	}
	return vals.PutOutput(blocks)
}

// putText stores the text of c, read for the last time: a Result's is
// decoded a piece at a time, giving back the memory behind it (see
// takeText), and is valid UTF-8 by its making (the JSON it is decoded
// from was validated), so the store does not check it again.
func putText(vals *values.SessionValues, c Content, res *Result) string {
	if res != nil {
		return hooks.PutUTF8Output(vals, res.takeText())
	}
	return vals.PutOutput(c.Text())
}

// mirrors reports whether the valid structured content is only the text
// of c again: an object with a single string member whose text is the
// blocks' text. A Result of one block is compared without decoding it
// when the two strings are the same JSON.
func mirrors(structured []byte, c Content, res *Result) bool {
	member, ok := onlyStringMember(structured[jsontext.SkipSpace(structured, 0):])
	if !ok {
		return false
	}
	if res != nil && res.n == 1 && bytes.Equal(member, res.firstText()) {
		return true
	}
	text := c.Text()
	return jsontext.KeyEquals(member, unsafe.String(unsafe.SliceData(text), len(text))) // only read
}

// sameJSON reports whether the blocks' text is the valid structured
// content's JSON again, as servers send it beside structured content for
// older clients (white space aside). A Result of one block is compared
// without decoding it.
func sameJSON(structured []byte, c Content, res *Result) bool {
	if res != nil && res.n == 1 {
		return jsontext.SameJSONString(structured, res.firstText())
	}
	return jsontext.SameJSON(structured, c.Text())
}

// onlyStringMember returns the JSON string that is the only member of the
// valid value v, when v is an object with one member and that member is a
// string. It reads the members only up to the first that rules this out,
// so that a large first member that is not a string is not read at all.
func onlyStringMember(v []byte) ([]byte, bool) {
	if v[0] != '{' {
		return nil, false
	}
	var member []byte
	whole := jsontext.EachChildAt(v, 0, func(_ []byte, at int) int {
		if member != nil || v[at] != '"' {
			return -1 // a second member, or one not a string
		}
		end := jsontext.SkipString(v, at)
		member = v[at:end]
		return end
	}) >= 0
	if !whole || member == nil {
		return nil, false
	}
	return member, true
}
