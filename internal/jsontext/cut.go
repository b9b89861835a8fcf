package jsontext

import (
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Ellipsis marks every elision.
const Ellipsis = "…"

// HeadCut returns the largest n ≤ budget such that s[:n] does not end
// inside a UTF-8 sequence. Bytes that are not part of a valid sequence
// count as one character each, so invalid input is cut without being
// split further.
func HeadCut(s []byte, budget int) int {
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

// HeadCutString is [HeadCut] of a string, at a cost that does not depend
// on len(s).
func HeadCutString(s string, budget int) int {
	if budget >= len(s) {
		return len(s)
	}
	if budget <= 0 {
		return 0
	}
	// The bytes HeadCut reads: up to the end of a sequence starting at or
	// before budget. HeadCut does not modify them.
	return HeadCut(unsafe.Slice(unsafe.StringData(s), min(len(s), budget+utf8.UTFMax)), budget)
}

// TailCut returns the smallest n ≥ len(s)-budget such that s[n:] does not
// start inside a UTF-8 sequence.
func TailCut(s []byte, budget int) int {
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

// AppendClipped appends s to dst when it fits budget bytes, and otherwise
// its longest prefix that does not split a UTF-8 sequence and leaves room
// for a trailing "…", then "…". What it appends never exceeds budget when
// budget ≥ len(Ellipsis).
func AppendClipped(dst, s []byte, budget int) []byte {
	if len(s) <= budget {
		return append(dst, s...)
	}
	dst = append(dst, s[:HeadCut(s, budget-len(Ellipsis))]...)
	return append(dst, Ellipsis...)
}

// ShownMax is the number of bytes of a string from a model or a tool that
// an error message or a log line shows ([ClipString]), so that a long
// argument cannot make the message long.
const ShownMax = 80

// ClipString returns s when it fits ShownMax bytes, and otherwise its head
// clipped to ShownMax bytes with "…". Its cost does not depend on len(s).
func ClipString(s string) string {
	return ClipStringTo(s, ShownMax)
}

// ClipStringTo is [AppendClipped] of a string: s when it fits budget
// bytes, and otherwise its longest head that does not split a UTF-8
// sequence and leaves room for a trailing "…", then "…". The result never
// exceeds budget bytes when budget ≥ len(Ellipsis). Its cost does not
// depend on len(s).
func ClipStringTo(s string, budget int) string {
	if len(s) <= budget {
		return s
	}
	return s[:HeadCutString(s, budget-len(Ellipsis))] + Ellipsis
}

// QuoteClipped returns ClipString(s) quoted as a Go string, for a message.
func QuoteClipped(s string) string {
	return strconv.Quote(ClipString(s))
}

// QuoteTail quotes s for a message keeping its end when it is long: "…"
// and the last ShownMax bytes at most (the end of a path is where it went
// wrong).
func QuoteTail(s string) string {
	if len(s) <= ShownMax {
		return strconv.Quote(s)
	}
	t := []byte(s[max(0, len(s)-ShownMax-utf8.UTFMax):])
	return strconv.Quote(Ellipsis + string(t[TailCut(t, ShownMax):]))
}

// AppendQuotedHead appends the start of the valid UTF-8 text s as a JSON
// string of at most budget bytes (quotes included). When s does not fit
// whole, the string ends in "…" inside the quotes. It reports whether s was
// cut. Cost is proportional to budget, not to len(s).
func AppendQuotedHead(dst, s []byte, budget int) ([]byte, bool) {
	room := budget - 2 // the quotes
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRune(s[i:])
		w := charWidth(s[i : i+size])
		// Keep room for the ellipsis unless this is the last character.
		if need := w + len(Ellipsis); need > room && !(i+size == len(s) && w <= room) {
			dst = append(dst, Ellipsis...)
			return append(dst, '"'), true
		}
		dst = appendChar(dst, s[i:i+size])
		room -= w
		i += size
	}
	return append(dst, '"'), false
}

// AppendQuotedTail appends the end of the valid UTF-8 text s as a JSON
// string of at most budget bytes, starting with "…" inside the quotes when
// s does not fit whole. It reports whether s was cut. Cost is proportional
// to budget.
func AppendQuotedTail(dst, s []byte, budget int) ([]byte, bool) {
	room := budget - 2 - len(Ellipsis)
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
		dst = append(dst, Ellipsis...)
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
		return EscapedLen(c[0])
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
		if escLen[c[0]] != 1 {
			return AppendEscape(dst, c[0])
		}
	}
	return append(dst, c...)
}

// AppendClippedString appends the valid JSON string raw (quotes included)
// as it is when it fits budget bytes, and otherwise clipped before its
// closing quote, never inside an escape or a UTF-8 sequence, and ending in
// "…" inside the quotes. Cost is proportional to budget.
func AppendClippedString(dst, raw []byte, budget int) []byte {
	if len(raw) <= budget {
		return append(dst, raw...)
	}
	room := budget - 1 - len(Ellipsis) - 1 // opening quote, ellipsis, closing quote
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
	dst = append(dst, Ellipsis...)
	return append(dst, '"')
}
