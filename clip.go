package values

import (
	"strings"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the rules by which the parts of a preview are cut to
// their budgets, over the UTF-8-safe cutters of internal/jsontext
// (cut.go): how much of a handle, a key, a literal, an array item and a
// long text's ends a preview shows, and how each is marked as clipped.

// Preview budgets. Each is the most a part of a preview may take; all of
// them shrink when the store's preview bound is smaller than the default,
// and the bound itself is never exceeded.
const (
	elementBudget  = 120 // bytes for one array item
	keyBudget      = 64  // bytes for one key
	handleBudget   = 32  // bytes for the handle that starts a preview
	textHeadBudget = 400 // bytes for the head of a long text, quotes included
	textTailBudget = 200 // bytes for the tail of a long text, quotes included
)

// textEnds returns the budgets of the head and the tail of a long text
// shown in avail bytes: two thirds for the head, at most textHeadBudget,
// and what is left for the tail, at most textTailBudget.
func textEnds(avail int) (head, tail int) {
	head = min(textHeadBudget, avail*2/3)
	return head, min(textTailBudget, avail-head)
}

// minElement is the smallest budget an array item is shown in; below it
// the items are elided.
const minElement = 12

// clipFrom clips what dst holds past from to budget bytes, in place.
func clipFrom(dst []byte, from, budget int) []byte {
	if len(dst)-from <= budget {
		return dst
	}
	return jsontext.AppendClipped(dst[:from], dst[from:], budget)
}

// appendHandle appends handle as valid UTF-8, clipped to handleBudget.
func appendHandle(dst []byte, handle string) []byte {
	if plainHandle(handle) {
		return append(dst, handle...)
	}
	if !utf8.ValidString(handle) {
		handle = strings.ToValidUTF8(handle, "\uFFFD")
	}
	return jsontext.AppendClipped(dst, []byte(handle), handleBudget)
}

// appendShownHandle appends handle as appendHandle does, and returns it as
// shown: handle itself unless it was clipped or mended.
func appendShownHandle(dst []byte, handle string) (_ []byte, shown string) {
	if plainHandle(handle) {
		return append(dst, handle...), handle
	}
	h := len(dst)
	dst = appendHandle(dst, handle)
	return dst, string(dst[h:])
}

// plainHandle reports whether appendHandle appends handle as it is: it is
// ASCII and fits handleBudget, as every handle the store makes does.
func plainHandle(handle string) bool {
	if len(handle) > handleBudget {
		return false
	}
	for i := range len(handle) {
		if handle[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendKey appends the quoted key raw as a bare word when it is a plain
// name, and quoted otherwise, clipped to keyBudget either way.
func appendKey(dst, raw []byte) []byte {
	body := raw[1 : len(raw)-1]
	bare := len(body) > 0
	for _, c := range body {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/' || c == '$' || c == '@') {
			bare = false
			break
		}
	}
	if bare {
		return jsontext.AppendClipped(dst, body, keyBudget)
	}
	return jsontext.AppendClippedString(dst, raw, keyBudget)
}

// appendLiteral appends a child's JSON: strings of at most literalBudget
// decoded bytes, numbers, booleans and null, clipped to budget.
func appendLiteral(dst, raw []byte, budget int) []byte {
	if raw[0] == '"' {
		return jsontext.AppendClippedString(dst, raw, budget)
	}
	return jsontext.AppendClipped(dst, raw, budget)
}

// shownKey returns the key raw (a valid JSON string, quotes included), or,
// when it is too long to be shown whole, its first characters as a JSON
// string appended to buf, more than appendKey shows of a key: so that
// showing a key reads no more of it than that. (A key that holds a
// character a key is shown quoted for only past those is shown unquoted.)
func shownKey(buf, raw []byte) []byte {
	if len(raw) <= 2*keyBudget {
		return raw
	}
	i := 1
	for i <= keyBudget+1 { // a body longer than keyBudget, so that appendKey clips it
		switch {
		case raw[i] == '\\' && raw[i+1] == 'u':
			i += 6
		case raw[i] == '\\':
			i += 2
		default:
			i++
		}
	}
	for !utf8.RuneStart(raw[i]) {
		i++
	}
	return append(append(buf, raw[:i]...), '"')
}

// appendName appends s, a name read from a text (a path, a key, an element
// name; valid UTF-8), bare when it is made of plain name characters and
// fits budget bytes, and otherwise as a JSON string of at most budget
// bytes (budget ≥ minElement): its head clipped with "…", or with tail its
// end (the end of a path names it best).
func appendName(dst, s []byte, budget int, tail bool) []byte {
	bare := len(s) > 0 && len(s) <= budget
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-./@+:~$%", c) >= 0) {
			bare = false
			break
		}
	}
	if bare {
		return append(dst, s...)
	}
	if tail {
		dst, _ = jsontext.AppendQuotedTail(dst, s, budget)
		return dst
	}
	dst, _ = jsontext.AppendQuotedHead(dst, s, budget)
	return dst
}
