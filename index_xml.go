package values

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes XML documents (SVG, Maven POMs, feeds, …) in text
// with encoding/xml's tokenizer, which expands no entity but the five XML
// defines (a DOCTYPE's internal subset is read as one directive, never
// applied) and keeps no tree. Put tokenizes at most markupRead bytes, and
// counts what lies past them as unread.

// What Put reads and records of an XML or HTML text.
const (
	markupRead   = 512 << 10 // bytes tokenized (encoding/xml reads about 20 MB/s)
	xmlNamesKept = 8         // element names of the root's children counted by name
	xmlAttrsKept = 6         // attributes recorded of an element
	xmlValueMax  = 120       // bytes of an attribute value recorded
)

// xmlElem is an element as a preview shows it: its name and first
// attributes, each clipped.
type xmlElem struct {
	name  string
	attrs []xml.Attr
}

// xmlNameCount is an element name and how many of the root's children
// have it.
type xmlNameCount struct {
	name  string
	count int
}

// xmlLevel is what an element holds one level down: its child elements,
// by name, and its first and last.
type xmlLevel struct {
	children    int
	names       []xmlNameCount // the first xmlNamesKept names, first seen first
	others      int            // children with other names
	first, last xmlElem
}

// count counts the child element e.
func (l *xmlLevel) count(e xml.StartElement) {
	l.children++
	name := xmlName(e.Name)
	if l.children == 1 {
		l.first = newXMLElem(e)
	} else {
		l.last = newXMLElem(e)
	}
	for k := range l.names {
		if l.names[k].name == name {
			l.names[k].count++
			return
		}
	}
	if len(l.names) < xmlNamesKept {
		l.names = append(l.names, xmlNameCount{name, 1})
		return
	}
	l.others++
}

// xmlDoc is an XML text: its root element and what the root holds, and
// one level further when the root has a single child (an RSS channel).
type xmlDoc struct {
	root    xmlElem
	top     xmlLevel // the root's children
	inner   xmlLevel // the children of the root's first child, when it is its only one
	read    int      // bytes tokenized
	partial bool     // the text is longer than markupRead
}

// detectXML returns the XML document the text b holds, or nil: b starts,
// after white space, with "<?xml", a comment, a DOCTYPE or an element, and
// its first markupRead bytes tokenize as one root element, with nothing
// but comments, processing instructions and white space around it. A
// document whose root is html is HTML (detectHTML); so is one that opens
// with an HTML DOCTYPE.
func detectXML(b []byte) *xmlDoc {
	i := markupStart(b)
	if i < 0 {
		return nil
	}
	if htmlStart(b[i:]) {
		return nil
	}
	n := min(len(b), markupRead)
	dec := xml.NewDecoder(bytes.NewReader(b[:n]))
	dec.Strict = false                                                                   // an undefined entity is kept as text, not an error
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // the text is UTF-8 already
	var d xmlDoc
	var open []xml.Name // the elements open, each to be closed by its own end tag
	roots := 0
	for {
		tok, err := dec.RawToken()
		if err != nil {
			// The end of the text, or of what is read of it; any other
			// error: not XML.
			var se *xml.SyntaxError
			if err != io.EOF && !(n < len(b) && errors.As(err, &se) && se.Msg == "unexpected EOF") {
				return nil
			}
			d.read, d.partial = int(dec.InputOffset()), n < len(b)
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch len(open) {
			case 0:
				roots++
				if roots > 1 {
					return nil
				}
				d.root = newXMLElem(t)
				if strings.EqualFold(t.Name.Local, "html") {
					return nil
				}
			case 1:
				d.top.count(t)
			case 2:
				if d.top.children == 1 {
					d.inner.count(t)
				}
			}
			open = append(open, t.Name)
		case xml.EndElement:
			if len(open) == 0 || open[len(open)-1] != t.Name {
				return nil // an end tag that closes another element: not XML
			}
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) == 0 && len(bytes.TrimSpace(t)) > 0 {
				return nil // text outside the root: not XML
			}
		}
	}
	if roots == 0 {
		return nil
	}
	if d.top.children != 1 {
		d.inner = xmlLevel{}
	}
	return &d
}

// markupStart returns the offset of the '<' that starts the text b after
// a byte order mark and white space, or -1.
func markupStart(b []byte) int {
	i := 0
	if bytes.HasPrefix(b, []byte("\uFEFF")) {
		i = 3
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	if i < len(b)-1 && b[i] == '<' {
		return i
	}
	return -1
}

// htmlStart reports whether the markup b starts as HTML does: with an HTML
// DOCTYPE or an html, head or body element, after comments and an XML
// declaration.
func htmlStart(b []byte) bool {
	for len(b) > 0 {
		switch {
		case bytes.HasPrefix(b, []byte("<!--")):
			k := bytes.Index(b, []byte("-->"))
			if k < 0 {
				return false
			}
			b = bytes.TrimLeft(b[k+3:], " \t\r\n")
		case bytes.HasPrefix(b, []byte("<?")):
			k := bytes.Index(b, []byte("?>"))
			if k < 0 {
				return false
			}
			b = bytes.TrimLeft(b[k+2:], " \t\r\n")
		default:
			for _, p := range []string{"<!doctype html", "<html", "<head", "<body"} {
				if len(b) >= len(p) && strings.EqualFold(string(b[:len(p)]), p) && (len(b) == len(p) || !isNameByte(b[len(p)])) {
					return true
				}
			}
			return false
		}
	}
	return false
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == ':' || c == '.'
}

// xmlName returns a name as written: prefix:local.
func xmlName(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

// newXMLElem records e: its name, and its first xmlAttrsKept attributes
// but name space declarations, values clipped to xmlValueMax bytes.
func newXMLElem(e xml.StartElement) xmlElem {
	x := xmlElem{name: jsontext.ClipStringTo(xmlName(e.Name), keyBudget)}
	for _, a := range e.Attr {
		if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
			continue
		}
		if len(x.attrs) == xmlAttrsKept {
			break
		}
		x.attrs = append(x.attrs, xml.Attr{Name: xml.Name{Local: jsontext.ClipStringTo(xmlName(a.Name), keyBudget)}, Value: jsontext.ClipStringTo(a.Value, xmlValueMax)})
	}
	return x
}
