package values

import (
	"bytes"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes Markdown documents (READMEs, notes, what many
// tools print for a model) in text by their block structure, read line by
// line: headings, fenced code blocks and pipe tables.

// What Put reads and records of a Markdown document.
const (
	mdSniff     = 64 << 10 // a Markdown text shows it within its first 64 KiB
	mdLangsKept = 8        // languages of code blocks counted by name
)

// mdLang is a language named by fenced code blocks ("```go") and how many.
type mdLang struct {
	name  jsontext.Span
	count int
}

// mdDoc is a Markdown text.
type mdDoc struct {
	headings headings
	tables   int
	table    jsontext.Span // the first table's header line
	rows     int           // the first table's rows
	code     int           // fenced code blocks
	langs    []mdLang      // their languages, first seen first
	untagged int           // code blocks without a language, or with one past mdLangsKept
}

// mdEvidence is what the first mdSniff bytes of a text show of Markdown.
type mdEvidence struct {
	headings, setext, fences, tables, links, lists int
}

// detectMarkdown returns the Markdown document the text b holds, or nil.
// Its first mdSniff bytes must hold a heading (a "#" line between a line
// that is not one and a blank line, or a line underlined with = or -) and
// enough more of Markdown: with headings counting at most two each, a
// fenced code block or a pipe table two, two or more links or list items
// one, three in all. So a script whose comments stand alone is not
// Markdown, unless it also has code fences or tables.
func detectMarkdown(b []byte) *mdDoc {
	n := min(len(b), mdSniff)
	if bytes.IndexByte(b[:n], '#') < 0 && bytes.IndexByte(b[:n], '\n') < 0 {
		return nil // no "#" heading, and no line to underline below another
	}
	var ev mdEvidence
	var d mdDoc
	d.read(b[:n], &ev)
	if ev.headings+ev.setext == 0 || min(ev.headings, 2)+min(ev.setext, 2)+2*min(ev.fences, 1)+2*min(ev.tables, 1)+min(ev.links/2, 1)+min(ev.lists/2, 1) < 3 {
		return nil
	}
	if n < len(b) {
		d = mdDoc{}
		d.read(b, nil)
	}
	found := d // d stays on the stack: most texts are not Markdown
	return &found
}

// read reads the lines of b into d, and what they show of Markdown into
// ev when it is not nil.
func (d *mdDoc) read(b []byte, ev *mdEvidence) {
	var (
		fence    []byte // the fence of the code block being read, or nil
		prev     []byte // the line before, outside code
		prevPrev []byte
		inTable  bool
		first    = true // prev is the start of the text
	)
	i := 0
	if bytes.HasPrefix(b, []byte("---\n")) { // YAML front matter
		if k := bytes.Index(b[4:], []byte("\n---\n")); k >= 0 {
			i = 4 + k + 5
		}
	}
	for i < len(b) {
		line, next := lineAt(b, i)
		t := bytes.TrimLeft(line, " ")
		indent := len(line) - len(t)
		if fence != nil {
			if indent < 4 && bytes.HasPrefix(t, fence) && len(bytes.TrimSpace(bytes.TrimLeft(t, string(fence[:1])))) == 0 {
				fence, prev, prevPrev = nil, nil, nil
			}
			i = next
			continue
		}
		blank := len(bytes.TrimSpace(line)) == 0
		switch {
		case indent < 4 && (bytes.HasPrefix(t, []byte("```")) || bytes.HasPrefix(t, []byte("~~~"))):
			k := 3
			for k < len(t) && t[k] == t[0] {
				k++
			}
			fence = t[:k]
			d.code++
			d.countLang(b, i+indent, bytes.TrimSpace(t[k:]))
			if ev != nil {
				ev.fences++
			}
			inTable = false
		case indent < 4 && len(t) > 0 && t[0] == '#':
			level := 0
			for level < len(t) && t[level] == '#' {
				level++
			}
			if level <= 6 && (level == len(t) || t[level] == ' ' || t[level] == '\t') {
				text := bytes.TrimSpace(t[level:])
				text = bytes.TrimSpace(bytes.TrimRight(text, "#"))
				d.headings.add(level, text)
				if ev != nil && !isHashLine(prev) {
					if _, after := lineAt(b, next); next >= len(b) || len(bytes.TrimSpace(b[next:after])) == 0 {
						ev.headings++
					}
				}
			}
			inTable = false
		case !blank && indent < 4 && len(prev) > 0 && isUnderline(t) && !isHashLine(prev) && (first || len(bytes.TrimSpace(prevPrev)) == 0) && !inTable:
			level := 1
			if t[0] == '-' {
				level = 2
			}
			d.headings.add(level, bytes.TrimSpace(prev))
			if ev != nil {
				ev.setext++
			}
		case inTable && bytes.IndexByte(line, '|') >= 0:
			if d.tables == 1 {
				d.rows++
			}
		case isDelimiterRow(line) && bytes.IndexByte(prev, '|') >= 0 && !inTable:
			d.tables++
			if d.tables == 1 {
				d.table = jsontext.Span{Start: i - len(prev) - 1, End: i - 1}
				if i >= 2 && b[i-2] == '\r' {
					d.table.Start--
					d.table.End--
				}
			}
			inTable = true
			if ev != nil {
				ev.tables++
			}
		default:
			inTable = false
			if ev != nil {
				ev.links += bytes.Count(line, []byte("]("))
				if len(line) > 2 && (line[0] == '-' || line[0] == '*' || line[0] == '+') && line[1] == ' ' {
					ev.lists++
				}
			}
		}
		prevPrev, prev, first = prev, line, false
		if blank {
			prev = nil
		}
		i = next
	}
}

// countLang counts a fenced code block whose info string is info; at is
// the offset of its fence line.
func (d *mdDoc) countLang(b []byte, at int, info []byte) {
	if k := bytes.IndexAny(info, " \t{"); k >= 0 {
		info = info[:k]
	}
	if len(info) == 0 {
		d.untagged++
		return
	}
	for j := range d.langs {
		if bytes.Equal(d.langs[j].name.Of(b), info) {
			d.langs[j].count++
			return
		}
	}
	if len(d.langs) == mdLangsKept {
		d.untagged++
		return
	}
	start := at + bytes.Index(b[at:], info)
	d.langs = append(d.langs, mdLang{jsontext.Span{Start: start, End: start + len(info)}, 1})
}

// isHashLine reports whether line starts with '#' (a heading, or a
// comment of a script).
func isHashLine(line []byte) bool {
	t := bytes.TrimLeft(line, " ")
	return len(t) > 0 && t[0] == '#'
}

// isUnderline reports whether t is a setext underline: = or - alone.
func isUnderline(t []byte) bool {
	t = bytes.TrimRight(t, " \t")
	if len(t) == 0 || t[0] != '=' && t[0] != '-' {
		return false
	}
	for _, c := range t {
		if c != t[0] {
			return false
		}
	}
	return true
}

// isDelimiterRow reports whether line is the row under a pipe table's
// header: cells of dashes with optional colons, split by '|'.
func isDelimiterRow(line []byte) bool {
	t := bytes.TrimSpace(line)
	t = bytes.TrimPrefix(t, []byte("|"))
	t = bytes.TrimSuffix(t, []byte("|"))
	if len(t) == 0 {
		return false
	}
	cells := 0
	for cell := range bytes.SplitSeq(t, []byte("|")) {
		c := bytes.TrimSpace(cell)
		c = bytes.TrimPrefix(c, []byte(":"))
		c = bytes.TrimSuffix(c, []byte(":"))
		if len(c) == 0 || len(bytes.Trim(c, "-")) != 0 {
			return false
		}
		cells++
	}
	return cells > 1 || bytes.IndexByte(line, '|') >= 0
}
