package values

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds paging reads of stored values ([SessionValues.Read]);
// tool_read.go offers them to a model as the read_value tool.

// Read limits. A page is what one read_value call puts in the transcript, so
// its whole rendered text is bounded, continuation line included.
const (
	// DefaultReadLimit is the page size in bytes when a read asks for none:
	// about 8k tokens, a useful amount of text that still leaves most of a
	// context window free.
	DefaultReadLimit = 32 << 10

	// MaxReadLimit caps the page size in bytes: a larger limit is lowered to
	// it. 128 KiB is about 32k tokens, a quarter of a 128k-token window, so
	// no single read can crowd out the rest of the conversation.
	MaxReadLimit = 128 << 10
)

// ErrReadArgs is wrapped by the errors of [SessionValues.Read] and
// [SessionValues.HandleReadValue] about their offset, limit or arguments:
// a negative offset, a limit too small to hold a page (the message names
// the smallest that works), read_value arguments that are not a JSON
// object with a string "ref" and integer "offset" and "limit". Errors about
// the reference itself wrap [ErrBadRef], [ErrUnknownHandle], [ErrNoPath],
// [ErrTooLarge] or [ErrUnavailable].
var ErrReadArgs = errors.New("bad read arguments")

// Page is one window of the bytes of a stored value, as returned by
// [SessionValues.Read]. Offsets count bytes of the paged text (see Read for
// what that text is), not characters.
type Page struct {
	// Ref is the reference that was read, in the form read_value accepts:
	// a handle ("r3") or a typed reference with a path ("$r3.content").
	Ref string
	// Content is the page's bytes: valid UTF-8, starting and ending on
	// character boundaries.
	Content string
	// Offset is the byte offset Content starts at. It is the requested
	// offset, moved forward to the next character boundary when it fell
	// inside a character.
	Offset int
	// Next is Offset+len(Content): the offset to read the next page at.
	Next int
	// Total is the byte size of the paged text.
	Total int
	// More reports whether bytes follow Next.
	More bool
	// Encoding is "base64" when the paged text is the standard base64
	// encoding of a binary value, and "" otherwise.
	Encoding string
}

// String returns the page as a model should see it. A page with More is its
// Content followed by one line (after a newline, unless Content already
// ends in one) that states the bytes shown and the exact read_value call
// for the next page:
//
//	[shown: bytes 0-32767 of 104857600; next page: read_value {"ref":"r3","offset":32768}]
//
// The last page is its Content alone. An empty last page (an offset at or
// past the end, or an empty value) is one line stating the size:
//
//	[end of "r3": 120 bytes in all, none at offset 500]
//
// The format is meant for models and people and may change between
// versions; do not parse it, use the fields.
func (p Page) String() string {
	if !p.More {
		if p.Content == "" {
			return string(appendEndLine(nil, p))
		}
		return p.Content
	}
	line := appendNextLine(make([]byte, 0, 128+len(p.Ref)), p)
	var b strings.Builder
	b.Grow(len(p.Content) + 1 + len(line))
	b.WriteString(p.Content)
	if p.Content != "" && p.Content[len(p.Content)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.Write(line)
	return b.String()
}

// appendNextLine appends the continuation line of a page with More.
func appendNextLine(dst []byte, p Page) []byte {
	dst = append(dst, "[shown: bytes "...)
	dst = strconv.AppendInt(dst, int64(p.Offset), 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, int64(p.Next-1), 10)
	dst = append(dst, " of "...)
	dst = strconv.AppendInt(dst, int64(p.Total), 10)
	if p.Encoding != "" {
		dst = append(dst, " ("...)
		dst = append(dst, p.Encoding...)
		dst = append(dst, ')')
	}
	dst = append(dst, `; next page: read_value {"ref":`...)
	dst = appendRefJSON(dst, p.Ref)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, int64(p.Next), 10)
	return append(dst, "}]"...)
}

// appendEndLine appends the line of an empty last page.
func appendEndLine(dst []byte, p Page) []byte {
	dst = append(dst, "[end of "...)
	dst = appendRefJSON(dst, p.Ref)
	dst = append(dst, ": "...)
	dst = strconv.AppendInt(dst, int64(p.Total), 10)
	dst = append(dst, " bytes"...)
	if p.Encoding != "" {
		dst = append(dst, " ("...)
		dst = append(dst, p.Encoding...)
		dst = append(dst, ')')
	}
	dst = append(dst, " in all, none at offset "...)
	dst = strconv.AppendInt(dst, int64(p.Offset), 10)
	return append(dst, ']')
}

// appendRefJSON appends ref as a JSON string on one line.
func appendRefJSON(dst []byte, ref string) []byte {
	if !utf8.ValidString(ref) {
		ref = strings.ToValidUTF8(ref, "\uFFFD")
	}
	return jsontext.AppendQuote(dst, []byte(ref))
}

// Read returns the page of the value ref names that starts at byte offset
// and whose rendered text, [Page.String], is at most limit bytes.
//
// ref is a handle or a reference with a path, with or without the leading
// '$': "r3", "$r3", "$r3.content", "$r3.rows.-1" (the grammar of references
// in tool arguments; see [SessionValues.Resolve]). The paged text is:
//   - a text value: the text itself;
//   - an array, object, number, bool or null: its stored JSON;
//   - a path to a JSON string: the decoded string, so "$r3.content" pages
//     the text of the content field and offsets count its decoded bytes;
//   - a path to any other part: that part's JSON as stored;
//   - a binary value: the standard base64 encoding of its bytes (so every
//     page is valid UTF-8), with Total its length and Page.Encoding
//     "base64"; pages end on a multiple of 4 characters where possible, so
//     each one decodes on its own.
//
// Paging forward from offset 0, each time at the previous page's Next,
// reassembles the paged text byte for byte.
//
// Limits: limit 0 selects [DefaultReadLimit]; a limit above [MaxReadLimit]
// is lowered to it. When the rest of the value fits the limit, the page is
// the rest, with no continuation line. Otherwise the continuation line and
// a newline are reserved from the limit, the page is the largest run of
// whole characters that fits what is left, and when a newline falls in the
// last quarter of that window the page ends just after the last such one,
// so lines are not cut needlessly; a line longer than a page is split.
// A negative limit, or one that cannot hold the continuation line plus
// utf8.UTFMax bytes (or an empty page's end line), is an error wrapping
// [ErrReadArgs] that names the smallest limit that works.
//
// Offsets: an offset inside a character moves forward to the next character
// boundary (Page.Offset says where the page starts). An offset at or past
// the end gives an empty last page whose String states the size; it is not
// an error. A negative offset is an error wrapping [ErrReadArgs].
//
// A malformed ref is an error wrapping [ErrBadRef], an unknown handle
// [ErrUnknownHandle], a path that does not exist [ErrNoPath], a value kept
// only in the durable store that cannot be read back [ErrUnavailable], and
// a path whose lookup would scan more than one [SessionValues.Resolve]
// call may (256 MiB of stored JSON, by default) [ErrTooLarge]. The package
// documentation's Cost section says what a page costs.
//
// Read is safe for concurrent use, as the store is.
func (s *SessionValues) Read(ref string, offset, limit int) (Page, error) {
	r, ok := parseRef(strings.TrimPrefix(ref, "$"))
	if !ok {
		return Page{}, fmt.Errorf("values: %s: %w; want a handle such as \"r3\" or a reference such as \"$r3.rows.0\"", jsontext.QuoteClipped(ref), ErrBadRef)
	}
	if offset < 0 {
		return Page{}, fmt.Errorf("values: %w: offset %d is negative; the first page is at offset 0", ErrReadArgs, offset)
	}
	switch {
	case limit == 0:
		limit = DefaultReadLimit
	case limit < 0:
		return Page{}, fmt.Errorf("values: %w: limit %d is negative; omit it or use 0 for the default (%d bytes)", ErrReadArgs, limit, DefaultReadLimit)
	case limit > MaxReadLimit:
		limit = MaxReadLimit
	}
	budget := scanBudget(s.maxResolved())
	whole, part, _, err := s.lookupPath(r, nil, budget)
	if errors.Is(err, errScanBudget) {
		return Page{}, fmt.Errorf("values: %w: looking up %s would scan more than %s of stored JSON", ErrTooLarge, r.quoted(), size(budget))
	}
	if err != nil {
		return Page{}, err
	}
	src := newReadSource(whole, part)
	p := Page{Ref: r.handle, Total: src.total}
	if len(r.segs) > 0 {
		p.Ref = r.String()
	}
	if src.mode == readBase64 {
		p.Encoding = "base64"
	}

	pos, at := src.seek(offset)
	p.Offset, p.Next = pos, pos
	if pos >= src.total {
		if need := len(appendEndLine(nil, p)); need > limit {
			return Page{}, tooSmall(limit, need, p.Ref)
		}
		return p, nil
	}
	var w []byte
	if rest := src.total - pos; rest <= limit {
		w = src.window(pos, at, rest)
	} else {
		// Every number in the line is at most Total, so formatting it with
		// Total everywhere gives its longest form.
		worst := Page{Ref: p.Ref, Offset: src.total, Next: src.total, Total: src.total, Encoding: p.Encoding}
		reserve := 1 + len(appendNextLine(nil, worst))
		budget := limit - reserve
		if budget < utf8.UTFMax {
			return Page{}, tooSmall(limit, reserve+utf8.UTFMax, p.Ref)
		}
		w = src.window(pos, at, budget)
		w = src.trimEnd(w, pos, budget)
		if len(w) == 0 { // unreachable for stored values, which are valid UTF-8
			return Page{}, tooSmall(limit, reserve+utf8.UTFMax, p.Ref)
		}
		p.More = pos+len(w) < src.total
	}
	p.Content = string(w)
	p.Next = pos + len(w)
	return p, nil
}

func tooSmall(limit, need int, ref string) error {
	return fmt.Errorf("values: %w: limit %d is too small to page %s; use at least %d", ErrReadArgs, limit, jsontext.QuoteClipped(ref), need)
}

// readMode is how a readSource's bytes map to the paged text.
type readMode uint8

const (
	readBytes  readMode = iota // the paged text is b itself
	readBase64                 // the paged text is the base64 encoding of b
	readString                 // the paged text is the decoding of the JSON string body b
)

// readSource is the paged text of a value or part, without a copy of it.
type readSource struct {
	b     []byte
	mode  readMode
	total int // byte length of the paged text
}

func newReadSource(whole Value, part []byte) readSource {
	x := whole.get()
	switch {
	case part == nil && x.kind == KindBinary:
		return readSource{b: x.raw, mode: readBase64, total: base64.StdEncoding.EncodedLen(len(x.raw))}
	case part == nil:
		return readSource{b: x.raw, total: len(x.raw)}
	case part[0] == '"':
		n, _ := jsontext.StringStats(part)
		return readSource{b: part[1 : len(part)-1], mode: readString, total: n}
	}
	return readSource{b: part, total: len(part)}
}

// seek returns the first character boundary pos ≥ off of the paged text and
// the matching index in b (for readString; pos itself otherwise). An off at
// or past the end is returned as it is.
func (src *readSource) seek(off int) (pos, at int) {
	if off >= src.total {
		return off, len(src.b)
	}
	switch src.mode {
	case readBytes:
		for k := 0; k < utf8.UTFMax-1 && off < len(src.b) && !utf8.RuneStart(src.b[off]); k++ {
			off++
		}
		return off, off
	case readString:
		return jsontext.StringSeek(src.b, off)
	}
	return off, off
}

// window returns the longest run of whole characters of the paged text
// that starts at pos (index at in b) and fits budget bytes. In readBytes
// mode it is a subslice of b, which must not be modified.
func (src *readSource) window(pos, at, budget int) []byte {
	switch src.mode {
	case readBase64:
		end := min(pos+budget, src.total)
		lo, hi := pos/4*3, min((end+3)/4*3, len(src.b))
		enc := base64.StdEncoding.AppendEncode(make([]byte, 0, base64.StdEncoding.EncodedLen(hi-lo)), src.b[lo:hi])
		return enc[pos%4 : pos%4+end-pos]
	case readString:
		return jsontext.AppendStringWindow(make([]byte, 0, min(budget, src.total-pos)), src.b, at, budget)
	}
	rest := src.b[at:]
	return rest[:jsontext.HeadCut(rest, budget)]
}

// trimEnd shortens the window w of a page that does not reach the end: to
// a multiple of 4 base64 characters, or to just after its last newline when
// that newline lies in the last quarter of the budget. It never empties w.
func (src *readSource) trimEnd(w []byte, pos, budget int) []byte {
	if pos+len(w) >= src.total {
		return w
	}
	if src.mode == readBase64 {
		if cut := (pos + len(w)) % 4; cut < len(w) {
			return w[:len(w)-cut]
		}
		return w
	}
	lo := max(0, len(w)-budget/4)
	if k := bytes.LastIndexByte(w[lo:], '\n'); k >= 0 {
		return w[:lo+k+1]
	}
	return w
}
