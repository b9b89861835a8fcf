package values

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the grammar of references: "$" handle *("." segment).

// ErrBadRef reports a string that is not a reference in the grammar
// "$" handle *("." segment): a ref given to [SessionValues.Read] or
// [SessionValues.Query], or a string in tool arguments that starts like a
// reference ("$r" and a digit 1-9) but breaks the grammar, such as
// "$r1..rows". The error says what breaks it, in words for the model.
var ErrBadRef = errors.New("malformed reference")

// ReferencePattern is a regular expression, in the ECMA-262 syntax of JSON
// Schema's "pattern" (and in Go's), that a string matches exactly when it
// is a reference: "$r3", "$r3.rows.0.id", a segment's '.' and '\' escaped
// with '\'. An MCP proxy advertises it beside a field's own schema so that
// a client that enforces schemas lets a model write a reference there.
const ReferencePattern = `^\$r[1-9][0-9]*(\.([^.\\]|\\[.\\])+)*$`

// refPath is a parsed reference: a handle and the path after it.
type refPath struct {
	text   string // the reference as parsed, without its '$': "r3.rows.0"
	handle string // "r3"
	index  int    // the handle's number; maxHandle when too large to store
	segs   string // the path as written after the handle, without its leading '.'; "" for none
}

// maxHandle stands for a handle number too large to have been handed out.
const maxHandle = math.MaxInt

// String returns the reference in its typed form, "$r3.rows.0".
func (r refPath) String() string {
	if r.segs == "" {
		return "$" + r.handle
	}
	return "$" + r.handle + "." + r.segs
}

// prefixShown returns the reference to the part named by the first
// segments of r, those before index i of its path, clipped for a message.
func (r refPath) prefixShown(i int) string {
	return jsontext.ClipString("$" + r.key(i)[:min(i+len(r.handle), jsontext.ShownMax+utf8.UTFMax)])
}

// quoted returns the reference quoted for a message, clipped.
func (r refPath) quoted() string {
	return jsontext.QuoteClipped("$" + r.text)
}

// key returns r.prefix(i) without its '$', as a substring of r.text: the
// key of the walk cache.
func (r refPath) key(i int) string {
	return r.text[:len(r.handle)+i]
}

// parseRef parses s, which must not include the leading '$', as
//
//	handle *("." segment)
//	handle  = "r" digit1-9 *digit
//	segment = 1*(char / "\." / "\\")
//
// where char is any character but '.' and '\'. It reports false for any
// other string. A handle number too large for an int parses, as one that
// names no stored value.
func parseRef(s string) (refPath, bool) {
	r, problem := parseRefProblem(s)
	return r, problem == ""
}

// parseRefProblem is parseRef, saying what breaks the grammar, in words
// for the model that wrote s, instead of reporting false.
func parseRefProblem(s string) (refPath, string) {
	end := strings.IndexByte(s, '.')
	if end < 0 {
		end = len(s)
	}
	h := s[:end]
	if len(h) < 2 || h[0] != 'r' || h[1] < '1' || h[1] > '9' {
		return refPath{}, fmt.Sprintf("%s is not a handle; handles are r1, r2, …", jsontext.QuoteClipped(h))
	}
	digits := h[1:]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		num := h[:1+i]
		return refPath{}, fmt.Sprintf("the handle %s is followed by %s; a path starts with a dot, as in %s", jsontext.ClipString(num), jsontext.QuoteClipped(h[1+i:]), jsontext.QuoteClipped("$"+num+"."+jsontext.ClipString(s[1+i:])))
	}
	n, ok := jsontext.ParseUint(digits, maxHandle)
	if !ok {
		n = maxHandle // too large to have been handed out
	}
	r := refPath{text: s, handle: h, index: n}
	if end == len(s) {
		return r, ""
	}
	r.segs = s[end+1:]
	segLen := 0
	for i := 0; i < len(r.segs); i++ {
		switch r.segs[i] {
		case '.':
			if segLen == 0 {
				return refPath{}, emptySegment(s[:end+1+i])
			}
			segLen = 0
			continue
		case '\\':
			if i+1 == len(r.segs) {
				return refPath{}, `the path ends with a lone backslash; write a backslash that is part of a key as "\\\\" and a dot as "\\."`
			}
			if r.segs[i+1] != '.' && r.segs[i+1] != '\\' {
				return refPath{}, fmt.Sprintf(`%q after %s is not an escape; in a path only "\\." (a dot in a key) and "\\\\" (a backslash) are`,
					r.segs[i:i+2], jsontext.QuoteTail("$"+s[:end+1+i]))
			}
			i++
		}
		segLen++
	}
	if r.segs == "" {
		return refPath{}, fmt.Sprintf("empty path after %s; write %s for the whole value, or a key or index after the dot", jsontext.QuoteClipped("$"+s), jsontext.QuoteClipped("$"+h))
	}
	if segLen == 0 {
		return refPath{}, emptySegment(s)
	}
	return r, ""
}

// emptySegment describes an empty path segment after the reference prefix
// p (without its '$'), which ends with a dot.
func emptySegment(p string) string {
	return fmt.Sprintf(`empty segment after %s; separate segments with one dot, and write a dot that is part of a key as "\\."`, jsontext.QuoteTail("$"+p))
}

// segmentEnd returns the index after the segment of the valid path p
// starting at i and its dot.
func segmentEnd(p string, i int) int {
	for i < len(p) && p[i] != '.' {
		if p[i] == '\\' {
			i++
		}
		i++
	}
	return i + 1
}

// nextSegment returns the segment of the valid path p starting at i,
// unescaped, and the index after it and its dot.
func nextSegment(p string, i int) (seg string, next int) {
	next = segmentEnd(p, i)
	seg = p[i : next-1]
	if strings.IndexByte(seg, '\\') >= 0 {
		b := make([]byte, 0, len(seg))
		for k := 0; k < len(seg); k++ {
			if seg[k] == '\\' {
				k++
			}
			b = append(b, seg[k])
		}
		seg = string(b)
	}
	return seg, next
}

// parseIndex parses an array index: a decimal without leading zeros, or a
// negative one counting from the end (-1 is the last item).
func parseIndex(s string) (int, bool) {
	d, neg := strings.CutPrefix(s, "-")
	if d == "" || d[0] == '0' && (len(d) > 1 || neg) {
		return 0, false
	}
	n, ok := jsontext.ParseUint(d, math.MaxInt)
	if neg {
		n = -n
	}
	return n, ok
}
