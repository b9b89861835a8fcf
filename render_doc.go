package values

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file renders the previews of documents in a data format that Put
// recognized in a text (index_diff.go): each states the document's
// structure first, then, in what is left of its budget, the text whole or
// its head and tail, as a plain text's preview would.

// Of a document's budget, its structure takes at most this share (in
// fifths), so that its head and tail keep the rest.
const docStructureFifths = 3

// appendPreview appends "diff(files=N, +A -R, hunks=N, len=…, lines=…,
// [path +a -r, …], head=…, tail=…)" for the diff d of the text x, in at
// most budget bytes: as many of its first files as fit, and its last.
func (d *diffDoc) appendPreview(dst []byte, x *value, budget int) []byte {
	start := len(dst)
	dst = append(dst, "diff("...)
	if d.commits > 0 {
		dst = append(dst, "commits="...)
		dst = strconv.AppendInt(dst, int64(d.commits), 10)
		dst = append(dst, ", "...)
	}
	dst = append(dst, "files="...)
	dst = strconv.AppendInt(dst, int64(d.files), 10)
	dst = append(dst, ", +"...)
	dst = strconv.AppendInt(dst, int64(d.added), 10)
	dst = append(dst, " -"...)
	dst = strconv.AppendInt(dst, int64(d.removed), 10)
	dst = append(dst, ", hunks="...)
	dst = strconv.AppendInt(dst, int64(d.hunks), 10)
	dst = append(dst, ", "...)
	dst = appendTextSize(dst, x)
	if left := budget - (len(dst) - start) - len(", )"); left > 4*minElement {
		dst = append(dst, ", "...)
		file := func(dst []byte, f diffFile) []byte {
			dst = appendName(dst, f.name.Of(x.raw), 2*keyBudget, true)
			if f.note != "" {
				dst = append(dst, ' ')
				return append(dst, f.note...)
			}
			dst = append(dst, " +"...)
			dst = strconv.AppendInt(dst, int64(f.added), 10)
			dst = append(dst, " -"...)
			return strconv.AppendInt(dst, int64(f.removed), 10)
		}
		dst = appendList(dst, '[', ']', d.files, d.head, d.tail, file, left*docStructureFifths/5)
	}
	return appendTextEnds(dst, start, x.raw, budget)
}

// appendPreview appends, for the YAML text x, "yaml(keys=N, len=…,
// lines=…, {key: desc, …}, head=…, tail=…)" for a mapping, or
// "yaml(items=N, len=…, lines=…, items={k, k2?, …}, [item, …], …)" for a
// sequence (the keys of its mapping items over every item, "?" on a key
// some lack), with "documents=N, " first when the text holds more than
// one; in at most budget bytes.
func (d *yamlDoc) appendPreview(dst []byte, x *value, budget int) []byte {
	start := len(dst)
	dst = append(dst, "yaml("...)
	if d.docs > 1 {
		dst = append(dst, "documents="...)
		dst = strconv.AppendInt(dst, int64(d.docs), 10)
		dst = append(dst, ", "...)
	}
	if d.seq {
		dst = append(dst, "items="...)
	} else {
		dst = append(dst, "keys="...)
	}
	dst = strconv.AppendInt(dst, int64(d.n), 10)
	dst = append(dst, ", "...)
	dst = appendTextSize(dst, x)
	left := budget - (len(dst) - start) - len(", )")
	if left <= 4*minElement {
		return appendTextEnds(dst, start, x.raw, budget)
	}
	room := left * docStructureFifths / 5
	mark := len(dst)
	if d.seq && len(d.itemKeys) > 0 {
		dst = append(dst, ", items="...)
		dst = d.appendItemKeys(dst, x.raw, room*2/5)
	}
	room -= len(dst) - mark
	dst = append(dst, ", "...)
	if d.seq {
		item := func(dst []byte, e yamlNode) []byte { return appendYAMLItem(dst, x.raw, &e) }
		dst = appendList(dst, '[', ']', d.n, d.head, d.tail, item, room)
	} else {
		field := func(dst []byte, e yamlNode) []byte {
			dst = appendName(dst, yamlKeyText(e.key.Of(x.raw)), keyBudget, false)
			dst = append(dst, ": "...)
			return appendYAMLNode(dst, x.raw, &e)
		}
		dst = appendList(dst, '{', '}', d.n, d.head, d.tail, field, room)
	}
	return appendTextEnds(dst, start, x.raw, budget)
}

// appendItemKeys appends "{k, k2?, …}": the keys of the items of a
// top-level sequence, "?" on those some items lack, in at most budget
// bytes.
func (d *yamlDoc) appendItemKeys(dst, raw []byte, budget int) []byte {
	start := len(dst)
	dst = append(dst, '{')
	for i, k := range d.itemKeys {
		mark := len(dst)
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendName(dst, yamlKeyText(k.key.Of(raw)), keyBudget, false)
		if k.count < d.n {
			dst = append(dst, '?')
		}
		if len(dst)-start > budget-len(", …}") {
			dst = append(dst[:mark], ", …"[2*boolInt(i == 0):]...)
			return append(dst, '}')
		}
	}
	if d.moreKeys {
		dst = append(dst, ", …"...)
	}
	return append(dst, '}')
}

// yamlKeyText returns a key as written without its quotes, when it is a
// quoted scalar without escapes.
func yamlKeyText(k []byte) []byte {
	if len(k) >= 2 && (k[0] == '"' && bytes.IndexByte(k, '\\') < 0 || k[0] == '\'' && bytes.Count(k, []byte("'")) == 2) && k[len(k)-1] == k[0] {
		return k[1 : len(k)-1]
	}
	return k
}

// appendYAMLNode appends what a top-level entry e holds: its scalar,
// "text(lines=N)", "map(keys=N, lines=N, {k, …})", "list(len=N, lines=N,
// first={k, …})", or null.
func appendYAMLNode(dst, raw []byte, e *yamlNode) []byte {
	switch e.kind {
	case yamlScalar:
		return appendName(dst, yamlKeyText(e.val.Of(raw)), literalBudget/2, false)
	case yamlText:
		dst = append(dst, "text(lines="...)
		dst = strconv.AppendInt(dst, int64(max(e.lines-1, 0)), 10)
		return append(dst, ')')
	case yamlMap:
		dst = append(dst, "map(keys="...)
	case yamlList:
		dst = append(dst, "list(len="...)
	default:
		return append(dst, "null"...)
	}
	dst = strconv.AppendInt(dst, int64(e.n), 10)
	dst = append(dst, ", lines="...)
	dst = strconv.AppendInt(dst, int64(e.lines), 10)
	if len(e.keys) > 0 {
		dst = append(dst, ", "...)
		if e.kind == yamlList {
			dst = append(dst, "first="...)
		}
		dst = append(dst, '{')
		for i, k := range e.keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendName(dst, yamlKeyText(k.Of(raw)), keyBudget/2, false)
		}
		if e.kind == yamlMap && e.n > len(e.keys) || e.kind == yamlList && len(e.keys) == nestedKeys {
			dst = append(dst, ", …"...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ')')
}

// appendYAMLItem appends an item of a top-level sequence: a mapping as
// "{k: v, k2: …, …}" (a value below its key as "…"), anything else as
// appendYAMLNode does.
func appendYAMLItem(dst, raw []byte, e *yamlNode) []byte {
	if len(e.fields) == 0 {
		return appendYAMLNode(dst, raw, e)
	}
	start := len(dst)
	dst = append(dst, '{')
	for i, f := range e.fields {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendName(dst, yamlKeyText(f.key.Of(raw)), keyBudget/2, false)
		dst = append(dst, ": "...)
		if v := skipProps(f.val.Of(raw)); len(v) > 0 {
			dst = appendName(dst, yamlKeyText(v), literalBudget/4, false)
		} else {
			dst = append(dst, jsontext.Ellipsis...)
		}
		if len(dst)-start > elementBudget*2 {
			break
		}
	}
	if e.n > len(e.fields) {
		dst = append(dst, ", …"...)
	}
	return append(dst, '}')
}

// appendPreview appends "xml(len=…, lines=…, root=<name a="v">,
// children=N {name: N, …}, first=<name id="…">, last=<…>, head=…,
// tail=…)" for the XML text x, in at most budget bytes. When the root has
// one child, the level below it is described, as root=<a>/<b>. Counts of
// a text read in part (markupRead) end in "+", after "read=S".
func (d *xmlDoc) appendPreview(dst []byte, x *value, budget int) []byte {
	start := len(dst)
	dst = append(dst, "xml("...)
	dst = appendTextSize(dst, x)
	if d.partial {
		dst = append(dst, ", read="...)
		dst = appendSize(dst, d.read)
	}
	left := budget - (len(dst) - start) - len(", )")
	if left <= 4*minElement {
		return appendTextEnds(dst, start, x.raw, budget)
	}
	room := left * docStructureFifths / 5
	mark := len(dst)
	dst = append(dst, ", root="...)
	dst = appendXMLElem(dst, &d.root, elementBudget)
	level := &d.top
	if d.top.children == 1 && d.inner.children > 0 {
		dst = append(dst, '/')
		dst = appendXMLElem(dst, &d.top.first, elementBudget)
		level = &d.inner
	}
	plus := func(dst []byte) []byte {
		if d.partial {
			return append(dst, '+')
		}
		return dst
	}
	dst = append(dst, ", children="...)
	dst = plus(strconv.AppendInt(dst, int64(level.children), 10))
	if level.children > 0 {
		dst = append(dst, " {"...)
		for i, nc := range level.names {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendName(dst, []byte(nc.name), keyBudget/2, false)
			dst = append(dst, ": "...)
			dst = plus(strconv.AppendInt(dst, int64(nc.count), 10))
		}
		if level.others > 0 {
			dst = append(dst, ", … "...)
			dst = plus(strconv.AppendInt(dst, int64(level.others), 10))
			dst = append(dst, " more"...)
		}
		dst = append(dst, '}')
		per := (room - (len(dst) - mark) - len(", first=, last=")) / 2
		if per >= 2*minElement {
			dst = append(dst, ", first="...)
			dst = appendXMLElem(dst, &level.first, min(per, 2*elementBudget))
			if level.children > 1 {
				dst = append(dst, ", last="...)
				dst = appendXMLElem(dst, &level.last, min(per, 2*elementBudget))
			}
		}
	}
	dst = clipFrom(dst, mark, room)
	return appendTextEnds(dst, start, x.raw, budget)
}

// xmlKeyAttrs are the attributes that name an element, shown first.
var xmlKeyAttrs = [...]string{"id", "name", "key", "code", "title", "href", "src", "ref", "type"}

// appendXMLElem appends `<name a="v" …>` in at most budget bytes: the
// attributes that name it first, then the others as they fit.
func appendXMLElem(dst []byte, e *xmlElem, budget int) []byte {
	start := len(dst)
	dst = append(dst, '<')
	dst = appendName(dst, []byte(e.name), keyBudget, false)
	order := make([]int, 0, len(e.attrs))
	for _, k := range xmlKeyAttrs {
		for i, a := range e.attrs {
			if a.Name.Local == k {
				order = append(order, i)
			}
		}
	}
	for i, a := range e.attrs {
		if !slices.Contains(xmlKeyAttrs[:], a.Name.Local) {
			order = append(order, i)
		}
	}
	for _, i := range order {
		a := &e.attrs[i]
		mark := len(dst)
		dst = append(dst, ' ')
		dst = appendName(dst, []byte(a.Name.Local), keyBudget/2, false)
		dst = append(dst, '=')
		dst, _ = jsontext.AppendQuotedHead(dst, []byte(a.Value), max(budget/2, minElement))
		if len(dst)-start > budget-len(" …>") {
			dst = append(dst[:mark], " …"...)
			break
		}
	}
	return append(dst, '>')
}

// appendPreview appends "html(len=…, lines=…, title="…", headings=N ["#
// h1", "## h2", …], tables=N, links=N, body=…, tail=…)" for the HTML text
// x, in at most budget bytes: body is the head of its body (head, of the
// text, when it has no body tag). Images and forms are counted when there
// are any. Counts of a text read in part end in "+", after "read=S".
func (d *htmlDoc) appendPreview(dst []byte, x *value, budget int) []byte {
	start := len(dst)
	dst = append(dst, "html("...)
	dst = appendTextSize(dst, x)
	if d.partial {
		dst = append(dst, ", read="...)
		dst = appendSize(dst, d.read)
	}
	left := budget - (len(dst) - start) - len(", )")
	if left <= 4*minElement {
		return appendTextEnds(dst, start, x.raw, budget)
	}
	room := left * docStructureFifths / 5
	mark := len(dst)
	if d.title != "" {
		dst = append(dst, ", title="...)
		dst, _ = jsontext.AppendQuotedHead(dst, []byte(d.title), literalBudget)
	}
	var counts [96]byte
	c := counts[:0] // the counts, written after the headings
	for _, k := range []struct {
		name   string
		n      int
		always bool
	}{{"tables", d.tables, true}, {"links", d.links, true}, {"images", d.images, false}, {"forms", d.forms, false}} {
		if k.n > 0 || k.always {
			c = append(c, ", "...)
			c = append(c, k.name...)
			c = append(c, '=')
			c = strconv.AppendInt(c, int64(k.n), 10)
			if d.partial {
				c = append(c, '+')
			}
		}
	}
	dst = appendHeadings(dst, &d.headings, d.partial, room-(len(dst)-mark)-len(c))
	dst = append(dst, c...)
	dst = clipFrom(dst, mark, room)
	avail := budget - (len(dst) - start) - len(", body=, tail=)")
	if whole := len(x.raw) < avail && jsontext.QuotedLen(x.raw) < avail; d.body > 0 && d.body < len(x.raw) && avail >= 2*minElement && !whole {
		// The body's head rather than the text's, which is markup.
		dst = append(dst, ", body="...)
		head, tail := textEnds(avail)
		dst, _ = jsontext.AppendQuotedHead(dst, bytes.TrimLeft(x.raw[d.body:], " \t\r\n"), head)
		dst = append(dst, ", tail="...)
		dst, _ = jsontext.AppendQuotedTail(dst, x.raw, tail)
		return append(dst, ')')
	}
	return appendTextEnds(dst, start, x.raw, budget)
}

// appendHeadings appends ", headings=N ["# first", "## second", …, … K
// more, "## last"]" in at most budget bytes (with more, N ends in "+").
func appendHeadings(dst []byte, h *headings, more bool, budget int) []byte {
	start := len(dst)
	dst = append(dst, ", headings="...)
	dst = strconv.AppendInt(dst, int64(h.n), 10)
	if more {
		dst = append(dst, '+')
	}
	if h.n == 0 || budget-(len(dst)-start) < 2*minElement {
		return dst
	}
	dst = append(dst, ' ')
	heading := func(dst []byte, e htmlHeading) []byte {
		var buf [htmlTextMax + 16]byte
		s := append(buf[:0], "######"[:min(max(e.level, 1), 6)]...)
		s = append(s, ' ')
		s = append(s, e.text...)
		dst, _ = jsontext.AppendQuotedHead(dst, s, elementBudget)
		return dst
	}
	return appendList(dst, '[', ']', h.n, h.head, h.tail, heading, budget-(len(dst)-start))
}

// appendPreview appends "markdown(len=…, lines=…, headings=N ["# h1", "##
// h2", …], tables=N [header cells of the first], code=N {go: N, …},
// head=…, tail=…)" for the Markdown text x, in at most budget bytes.
func (d *mdDoc) appendPreview(dst []byte, x *value, budget int) []byte {
	start := len(dst)
	dst = append(dst, "markdown("...)
	dst = appendTextSize(dst, x)
	left := budget - (len(dst) - start) - len(", )")
	if left <= 4*minElement {
		return appendTextEnds(dst, start, x.raw, budget)
	}
	room := left * docStructureFifths / 5
	mark := len(dst)
	var more [320]byte // tables and code, written after the headings
	m := append(more[:0], ", tables="...)
	m = strconv.AppendInt(m, int64(d.tables), 10)
	if d.tables > 0 {
		m = append(m, " (first: "...)
		m = strconv.AppendInt(m, int64(d.rows), 10)
		m = append(m, " rows, ["...)
		header := bytes.Trim(bytes.TrimSpace(d.table.Of(x.raw)), "|")
		for i, cell := range bytes.Split(header[:jsontext.HeadCut(header, 160)], []byte("|")) {
			if i > 0 {
				m = append(m, ", "...)
			}
			m = appendName(m, bytes.TrimSpace(cell), keyBudget/2, false)
		}
		m = append(m, "])"...)
	}
	m = append(m, ", code="...)
	m = strconv.AppendInt(m, int64(d.code), 10)
	if len(d.langs) > 0 {
		m = append(m, " {"...)
		for i, l := range d.langs {
			if i > 0 {
				m = append(m, ", "...)
			}
			m = appendName(m, l.name.Of(x.raw), 24, false)
			m = append(m, ": "...)
			m = strconv.AppendInt(m, int64(l.count), 10)
		}
		if d.untagged > 0 {
			m = append(m, ", other: "...)
			m = strconv.AppendInt(m, int64(d.untagged), 10)
		}
		m = append(m, '}')
	}
	dst = appendHeadings(dst, &d.headings, false, room-len(m))
	dst = append(dst, m...)
	dst = clipFrom(dst, mark, room)
	return appendTextEnds(dst, start, x.raw, budget)
}
