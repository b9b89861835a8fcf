package values

import (
	"bytes"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file reads the lines of a YAML document one at a time, for
// index_yaml.go: what a line at column 0 is (yamlTop), a key line's key
// and value, node properties, quoted scalars and flow collections that go
// on below their line (yamlFlow), and the lines of the documents after
// the first (yamlRest).

// yamlLine is what a line at column 0 of a YAML document is.
type yamlLine uint8

const (
	yamlBad       yamlLine = iota // not YAML in a block document
	yamlComment                   // a comment, or blank
	yamlDocStart                  // "---"
	yamlDocEnd                    // "..."
	yamlDirective                 // "%YAML 1.2"
	yamlProps                     // an anchor or tag alone: "&a", "!tag"
	yamlItem                      // "- …"
	yamlKey                       // "key: …"
)

// yamlTop classifies a line of a block document at column 0 (not blank,
// not indented): for a key line, it returns the key as written and the
// value after it (comment cut, trimmed); for an item, what follows "- ".
func yamlTop(line []byte) (kind yamlLine, key, val []byte) {
	switch c := line[0]; {
	case c == '#':
		return yamlComment, nil, nil
	case yamlMarker(line, "---"):
		rest := bytes.TrimSpace(line[3:])
		if len(rest) > 0 && rest[0] != '#' && rest[0] != '!' && rest[0] != '&' {
			return yamlBad, nil, nil // a document on the marker's line: a scalar, or flow
		}
		return yamlDocStart, nil, nil
	case yamlMarker(line, "..."):
		return yamlDocEnd, nil, nil
	case c == '%':
		return yamlDirective, nil, nil
	case c == '-' && (len(line) == 1 || line[1] == ' '):
		return yamlItem, nil, bytes.TrimSpace(line[1:])
	case c == '&' || c == '!':
		if rest := skipProps(line); len(rest) == 0 || rest[0] == '#' {
			return yamlProps, nil, nil
		}
		return yamlBad, nil, nil
	}
	key, rest, ok := yamlKeyOf(line)
	if !ok {
		return yamlBad, nil, nil
	}
	val = yamlValue(rest)
	if val == nil && len(bytes.TrimSpace(rest)) > 0 && bytes.TrimSpace(rest)[0] != '#' {
		return yamlBad, nil, nil
	}
	return yamlKey, key, val
}

// yamlMarker reports whether line is the document marker m ("---" or
// "..."), alone or followed by a space.
func yamlMarker(line []byte, m string) bool {
	return bytes.HasPrefix(line, []byte(m)) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

// skipProps returns s after its node properties (anchor "&a", tag "!t")
// and the spaces after them. A node has at most one of each: a second
// anchor or tag is left at the start of what it returns, which no caller
// reads as a value or a key; so is an anchor whose name holds anything
// but letters, digits, '-' and '_', where the parser ends the name ("&0,"
// is the anchor "0" on an empty node, and whatever follows, another).
func skipProps(s []byte) []byte {
	var anchor, tag bool
	for len(s) > 0 && (s[0] == '&' && !anchor || s[0] == '!' && !tag) {
		k := bytes.IndexAny(s, " \t")
		end := k
		if end < 0 {
			end = len(s)
		}
		if s[0] == '&' && !anchorName(s[1:end]) {
			return s
		}
		anchor, tag = anchor || s[0] == '&', tag || s[0] == '!'
		if k < 0 {
			return nil
		}
		s = bytes.TrimLeft(s[k:], " \t")
	}
	return s
}

// anchorName reports whether name is one the parser reads whole as an
// anchor's: letters, digits, '-' and '_', at least one.
func anchorName(name []byte) bool {
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return len(name) > 0
}

// yamlKeyOf splits a key line: a plain or quoted key, then ':' and a
// space, a tab or the line's end. A plain key does not start with an
// indicator and holds no ": " and no " #".
func yamlKeyOf(line []byte) (key, rest []byte, ok bool) {
	if len(line) == 0 {
		return nil, nil, false
	}
	k := 0
	switch line[0] {
	case '"', '\'':
		k = quotedEnd(line, 0)
		if k < 0 {
			return nil, nil, false
		}
		for k < len(line) && line[k] == ' ' {
			k++
		}
		if k >= len(line) || line[k] != ':' || k+1 < len(line) && line[k+1] != ' ' && line[k+1] != '\t' {
			return nil, nil, false // "'k':v" is a scalar in a block document, as a plain "k:v" is
		}
	case '-', '?', ':':
		if len(line) < 2 || line[1] == ' ' {
			return nil, nil, false
		}
		fallthrough
	default:
		if bytes.IndexByte([]byte(",[]{}#&*!|>%@`"), line[0]) >= 0 {
			return nil, nil, false
		}
		for k = 0; k < len(line); k++ {
			if line[k] == ':' && (k+1 == len(line) || line[k+1] == ' ' || line[k+1] == '\t') {
				break
			}
			if line[k] == '#' && k > 0 && (line[k-1] == ' ' || line[k-1] == '\t') {
				return nil, nil, false
			}
		}
		if k == len(line) {
			return nil, nil, false
		}
	}
	key = bytes.TrimRight(line[:k], " \t")
	if len(key) == 0 {
		return nil, nil, false
	}
	return key, line[k+1:], true
}

// quotedEnd returns the offset after the quoted scalar that starts at
// line[i], or -1 when it does not end on the line.
func quotedEnd(line []byte, i int) int {
	q := line[i]
	for k := i + 1; k < len(line); k++ {
		switch {
		case q == '"' && line[k] == '\\':
			k++
		case line[k] == q && q == '\'' && k+1 < len(line) && line[k+1] == '\'':
			k++
		case line[k] == q:
			return k + 1
		}
	}
	return -1
}

// yamlValue returns the value of a key line or an item from its rest: the
// scalar without its comment, trimmed, or empty; nil when the rest is not
// a valid value (a plain scalar holding ": ", which YAML refuses).
func yamlValue(rest []byte) []byte {
	v := bytes.TrimSpace(rest)
	if len(v) == 0 || v[0] == '#' {
		return v[:0]
	}
	switch v[0] {
	case '"', '\'':
		if k := quotedEnd(v, 0); k > 0 {
			return v[:k] // a comment may follow
		}
		return v // continued on the lines below
	case '[', '{', '|', '>':
		return v
	}
	for k := 0; k < len(v); k++ {
		switch {
		case v[k] == '#' && k > 0 && (v[k-1] == ' ' || v[k-1] == '\t'):
			return bytes.TrimRight(v[:k], " \t")
		case v[k] == ':' && (k+1 == len(v) || v[k+1] == ' ' || v[k+1] == '\t'):
			return nil
		}
	}
	return v
}

// yamlSpan returns the span of part, a subslice of line, which starts at
// offset i of the text.
func yamlSpan(i int, line, part []byte) jsontext.Span {
	if len(part) == 0 {
		return jsontext.Span{Start: i, End: i}
	}
	start := i + int(cap(line)-cap(part))
	return jsontext.Span{Start: start, End: start + len(part)}
}

// yamlFeed reads the value of t, a line without its indentation ind (a
// key line, an item, or a scalar), into f. It returns ind when that value
// starts a block scalar (| or >), else -1; and when the value is a plain
// scalar, the column the lines below it must be indented past to go on
// with it (their text, a quote in it too, is the scalar's), else -1: the
// column of its key, of the innermost "- " before it, or, for a scalar
// alone on its line, the column before it.
func yamlFeed(f *yamlFlow, t []byte, ind int) (block, plain int) {
	col := func(s []byte) int { return ind + cap(t) - cap(s) }
	v, parent := t, ind-1
	for len(v) > 1 && v[0] == '-' && v[1] == ' ' {
		parent = col(v) // "- - x": an item whose value is a sequence
		v = bytes.TrimLeft(v[1:], " ")
	}
	if _, rest, ok := yamlKeyOf(skipProps(v)); ok {
		parent = col(v)
		v = bytes.TrimSpace(rest)
	}
	v = skipProps(v)
	switch {
	case len(v) == 0:
		return -1, -1
	case v[0] == '|' || v[0] == '>':
		return ind, -1
	case yamlPlain(v):
		return -1, parent
	}
	f.feed(v)
	return -1, -1
}

// yamlPlain reports whether v, a value that is not empty, starts a plain
// scalar: not with an indicator, nor with '-', '?' or ':' and a space.
func yamlPlain(v []byte) bool {
	switch v[0] {
	case '-', '?', ':':
		return len(v) > 1 && v[1] != ' ' && v[1] != '\t'
	}
	return bytes.IndexByte([]byte(",[]{}#&*!|>'\"%@`"), v[0]) < 0
}

// yamlFlow follows a quoted scalar or flow collection over the lines it
// takes.
type yamlFlow struct {
	quote byte // the quote of a scalar not closed yet, or 0
	depth int  // brackets and braces not closed yet
}

func (f *yamlFlow) open() bool { return f.quote != 0 || f.depth > 0 }

// feed reads s, a value that starts a quoted scalar or a flow collection,
// or a line of one.
func (f *yamlFlow) feed(s []byte) {
	if !f.open() && (len(s) == 0 || bytes.IndexByte([]byte("\"'[{"), s[0]) < 0) {
		return // a plain scalar, a block scalar, or nothing
	}
	for k := 0; k < len(s); k++ {
		c := s[k]
		switch {
		case f.quote == '"' && c == '\\':
			k++
		case f.quote == '\'' && c == '\'' && k+1 < len(s) && s[k+1] == '\'':
			k++
		case f.quote != 0:
			if c == f.quote {
				f.quote = 0
			}
		case c == '"' || c == '\'':
			if k == 0 || bytes.IndexByte([]byte(" \t[{,:"), s[k-1]) >= 0 {
				f.quote = c
			}
		case c == '[' || c == '{':
			f.depth++
		case c == ']' || c == '}':
			f.depth = max(f.depth-1, 0)
		case c == '#' && k > 0 && (s[k-1] == ' ' || s[k-1] == '\t'):
			return
		}
	}
}

// yamlRest reads the documents after the first, b starting at the marker
// that ends it, and counts their "---" lines into docs; it reports false
// when a line at column 0 is not one of a block document or a line is
// indented with a tab.
func yamlRest(b []byte, docs *int) bool {
	for i := 0; i < len(b); {
		line, next := lineAt(b, i)
		switch {
		case bytes.IndexByte(line, '\r') >= 0:
			return false
		case len(line) == 0 || line[0] == ' ':
		case line[0] == '\t':
			if len(bytes.TrimSpace(line)) > 0 {
				return false
			}
		default:
			kind, _, _ := yamlTop(line)
			if kind == yamlBad {
				return false
			}
			if kind == yamlDocStart {
				*docs++
			}
		}
		i = next
	}
	return true
}
