package values

import (
	"strconv"
	"unicode/utf8"
)

// Ellipsis marks every elision in a preview.
const ellipsis = "…"

// headCut returns the largest n ≤ budget such that s[:n] does not end inside
// a UTF-8 sequence. Bytes that are not part of a valid sequence count as one
// character each, so invalid input is clipped without being split further.
func headCut(s []byte, budget int) int {
	if budget >= len(s) {
		return len(s)
	}
	if budget <= 0 {
		return 0
	}
	// Step back over at most three continuation bytes to a sequence start,
	// then keep that sequence only if it ends by budget.
	i := budget
	for k := 0; k < utf8.UTFMax-1 && i > 0 && !utf8.RuneStart(s[i]); k++ {
		i--
	}
	if _, size := utf8.DecodeRune(s[i:]); i+size <= budget {
		return i + size
	}
	return i
}

// tailCut returns the smallest n ≥ len(s)-budget such that s[n:] does not
// start inside a UTF-8 sequence.
func tailCut(s []byte, budget int) int {
	if budget >= len(s) {
		return 0
	}
	if budget <= 0 {
		return len(s)
	}
	i := len(s) - budget
	j := i
	for k := 0; k < utf8.UTFMax-1 && j > 0 && !utf8.RuneStart(s[j]); k++ {
		j--
	}
	if j < i {
		// s[i] continues a sequence that starts at j: drop it whole when it
		// is valid; a stray continuation byte is kept as one character.
		if _, size := utf8.DecodeRune(s[j:]); j+size > i {
			return j + size
		}
	}
	return i
}

// clip returns s unchanged when it fits budget bytes, and otherwise its
// longest UTF-8-safe prefix that leaves room for a trailing "…", followed
// by "…". The result never exceeds budget when budget ≥ len("…").
func clip(s []byte, budget int) []byte {
	if len(s) <= budget {
		return s
	}
	n := headCut(s, budget-len(ellipsis))
	out := make([]byte, 0, n+len(ellipsis))
	out = append(out, s[:n]...)
	return append(out, ellipsis...)
}

// appendClipped appends clip(s, budget) to dst.
func appendClipped(dst, s []byte, budget int) []byte {
	if len(s) <= budget {
		return append(dst, s...)
	}
	dst = append(dst, s[:headCut(s, budget-len(ellipsis))]...)
	return append(dst, ellipsis...)
}

// appendQuotedHead appends the start of the valid UTF-8 text s as a JSON
// string of at most budget bytes (quotes included). When s does not fit
// whole, the string ends in "…" inside the quotes. It reports whether s was
// cut. Cost is proportional to budget, not to len(s).
func appendQuotedHead(dst, s []byte, budget int) ([]byte, bool) {
	room := budget - 2 // the quotes
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRune(s[i:])
		w := charWidth(s[i : i+size])
		// Keep room for the ellipsis unless this is the last character.
		if need := w + len(ellipsis); need > room && !(i+size == len(s) && w <= room) {
			dst = append(dst, ellipsis...)
			return append(dst, '"'), true
		}
		dst = appendChar(dst, s[i:i+size])
		room -= w
		i += size
	}
	return append(dst, '"'), false
}

// appendQuotedTail appends the end of the valid UTF-8 text s as a JSON
// string of at most budget bytes, starting with "…" inside the quotes when
// s does not fit whole. It reports whether s was cut. Cost is proportional
// to budget.
func appendQuotedTail(dst, s []byte, budget int) ([]byte, bool) {
	room := budget - 2 - len(ellipsis)
	start := len(s)
	for start > 0 && room > 0 {
		_, size := utf8.DecodeLastRune(s[:start])
		w := charWidth(s[start-size : start])
		if w > room {
			break
		}
		room -= w
		start -= size
	}
	dst = append(dst, '"')
	cut := start > 0
	if cut {
		dst = append(dst, ellipsis...)
	}
	for i := start; i < len(s); {
		_, size := utf8.DecodeRune(s[i:])
		dst = appendChar(dst, s[i:i+size])
		i += size
	}
	return append(dst, '"'), cut
}

// charWidth is the number of bytes appendChar writes for c.
func charWidth(c []byte) int {
	if len(c) == 1 {
		if c[0] >= utf8.RuneSelf {
			return len("\uFFFD")
		}
		return escapedLen(c[0])
	}
	return len(c)
}

// appendChar appends one character of text, escaping it for a JSON string;
// a byte that is not valid UTF-8 becomes U+FFFD.
func appendChar(dst, c []byte) []byte {
	if len(c) == 1 {
		if c[0] >= utf8.RuneSelf {
			return append(dst, "\uFFFD"...)
		}
		if !quoteSafe[c[0]] {
			return appendEscape(dst, c[0])
		}
	}
	return append(dst, c...)
}

// appendRawString appends the validated JSON string raw (quotes included)
// as it is when it fits budget bytes, and otherwise clipped before its
// closing quote, never inside an escape or a UTF-8 sequence, and ending in
// "…" inside the quotes. Cost is proportional to budget.
func appendRawString(dst, raw []byte, budget int) []byte {
	if len(raw) <= budget {
		return append(dst, raw...)
	}
	room := budget - 1 - len(ellipsis) - 1 // opening quote, ellipsis, closing quote
	i := 1
	for i < len(raw)-1 {
		size := 1
		if raw[i] == '\\' {
			size = 2
			if raw[i+1] == 'u' {
				size = 6
			}
		} else if raw[i] >= utf8.RuneSelf {
			_, size = utf8.DecodeRune(raw[i:])
		}
		if i-1+size > room {
			break
		}
		i += size
	}
	dst = append(dst, raw[:i]...)
	dst = append(dst, ellipsis...)
	return append(dst, '"')
}

// shownMax is the number of bytes of a string from a model or a tool that
// an error message shows, so that a long argument cannot make the message
// long: a reference, a key, a path.
const shownMax = 80

// clipString returns s, or its head clipped to shownMax bytes with "…".
// Its cost does not depend on len(s).
func clipString(s string) string {
	if len(s) <= shownMax {
		return s
	}
	return string(clip([]byte(s[:min(len(s), shownMax+utf8.UTFMax)]), shownMax))
}

// quoteClipped returns clipString(s) quoted as a Go string.
func quoteClipped(s string) string {
	return strconv.Quote(clipString(s))
}

// quoteTail quotes s for a message, keeping its end when it is long ("…"
// and the last shownMax bytes): the end of a path is where it went wrong.
func quoteTail(s string) string {
	if len(s) <= shownMax {
		return strconv.Quote(s)
	}
	t := []byte(s[len(s)-shownMax-utf8.UTFMax:])
	return strconv.Quote(ellipsis + string(t[tailCut(t, shownMax):]))
}
