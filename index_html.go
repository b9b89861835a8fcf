package values

import (
	"bytes"

	"github.com/agentvalues/values/internal/jsontext"
	"golang.org/x/net/html"
)

// This file recognizes HTML documents in text with the HTML5 tokenizer of
// golang.org/x/net/html (encoding/xml cannot read HTML: raw text in
// scripts, unquoted attributes, tags left open), which builds no tree and
// loads nothing. Put tokenizes at most markupRead bytes and records the
// title, the outline of headings, and counts of tables and links.

// What Put records of an HTML document.
const (
	htmlHeadingsHead = 16  // first headings recorded
	htmlHeadingsTail = 2   // last headings recorded
	htmlTextMax      = 120 // bytes of a title or heading recorded
)

// htmlHeading is a heading of an HTML or Markdown document: its level (1
// for h1 or #) and its text, white space collapsed.
type htmlHeading struct {
	level int
	text  string
}

// headings is the outline of a document: how many headings, the first
// ones and the last ones.
type headings struct {
	n          int
	head, tail []htmlHeading
}

// add records a heading.
func (h *headings) add(level int, text []byte) {
	h.n++
	e := htmlHeading{level, jsontext.ClipStringTo(string(text), htmlTextMax)}
	if len(h.head) < htmlHeadingsHead {
		h.head = append(h.head, e)
		return
	}
	h.tail = keepLast(h.tail, e, htmlHeadingsTail)
}

// htmlDoc is an HTML text.
type htmlDoc struct {
	title    string
	headings headings
	tables   int
	links    int // a elements with an href
	images   int
	forms    int
	body     int  // the offset after the body's start tag, or 0
	read     int  // bytes tokenized
	partial  bool // the text is longer than markupRead
}

// detectHTML returns the HTML document the text b holds, or nil: b starts,
// after white space, comments and an XML declaration, with an HTML
// DOCTYPE or an html, head or body element.
func detectHTML(b []byte) *htmlDoc {
	i := markupStart(b)
	if i < 0 || !htmlStart(b[i:]) {
		return nil
	}
	n := min(len(b), markupRead)
	z := html.NewTokenizer(bytes.NewReader(b[:n]))
	d := &htmlDoc{read: n, partial: n < len(b)}
	var (
		text    []byte // the text of the title or heading being read
		inTitle bool
		level   int // of the heading being read, or 0
	)
	at := 0 // the offset of the token after the current one
	for {
		tt := z.Next()
		at += len(z.Raw())
		switch tt {
		case html.ErrorToken:
			return d
		case html.TextToken:
			if inTitle || level > 0 {
				if len(text) < 4*htmlTextMax {
					text = append(text, z.Text()...)
				}
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, hasAttr := z.TagName()
			end := tt == html.EndTagToken
			switch {
			case len(name) == 2 && name[0] == 'h' && '1' <= name[1] && name[1] <= '6':
				if !end && !inTitle {
					if level > 0 { // a heading that a new one ends
						d.headings.add(level, collapseSpace(text))
					}
					level, text = int(name[1]-'0'), text[:0]
				} else if end && level > 0 {
					d.headings.add(level, collapseSpace(text))
					level = 0
				}
			case string(name) == "title":
				if !end && d.title == "" && level == 0 {
					inTitle, text = true, text[:0]
				} else if end && inTitle {
					d.title = jsontext.ClipStringTo(string(collapseSpace(text)), htmlTextMax)
					inTitle = false
				}
			case end:
			case string(name) == "body":
				if d.body == 0 {
					d.body = at
				}
			case string(name) == "table":
				d.tables++
			case string(name) == "img":
				d.images++
			case string(name) == "form":
				d.forms++
			case string(name) == "a" && hasAttr:
				for more := true; more; {
					var key []byte
					key, _, more = z.TagAttr()
					if string(key) == "href" {
						d.links++
						break
					}
				}
			}
		}
	}
}

// collapseSpace returns s with its runs of white space made one space,
// trimmed, in place.
func collapseSpace(s []byte) []byte {
	out := s[:0]
	space := false
	for _, c := range s {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			space = len(out) > 0
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, c)
	}
	return out
}
