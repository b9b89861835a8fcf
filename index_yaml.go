package values

import (
	"bytes"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes YAML documents in text by their lines, without a
// YAML parser: the top level of a block-style document is its lines at
// column 0 (a key line "key: value" or "key:", or an item "- …"), and what
// one holds is the lines indented below it. So the keys and items of the
// top level and one level down are read in one pass over the lines and a
// second over the ones Put keeps, with memory bounded whatever the text,
// and nothing is ever expanded: an alias (*a) is shown as written, a
// document as deep as it likes costs its lines. Flow-style documents ({…}
// and […]) are JSON or not recognized; a text that breaks the rules below
// is not YAML.
//
// This file reads a document's structure from its lines;
// index_yaml_line.go reads each line (its kind, key and value).

// What Put records of a YAML document.
const (
	yamlHeadEntries = objectFieldsMax // first top-level keys or items described
	yamlTailEntries = 2               // last ones
	yamlItemKeys    = 64              // distinct keys of a top-level sequence's items, first seen first
	yamlKeyMax      = 1024            // longest key (YAML's limit for an implicit key)
	yamlDupKeys     = 4096            // top-level keys checked to be distinct
)

// yamlKind is what a YAML node holds, as its lines show.
type yamlKind uint8

const (
	yamlNull   yamlKind = iota // nothing: "key:" and no lines below
	yamlScalar                 // a scalar on its line (or continued below it)
	yamlMap                    // a block mapping below
	yamlList                   // a block sequence below
	yamlText                   // a block scalar (| or >)
)

// yamlNode is one top-level entry of a YAML document (a key of a mapping,
// or an item of a sequence), or one field of such an item.
type yamlNode struct {
	key    jsontext.Span   // a mapping's key as written (quotes kept); empty for an item
	val    jsontext.Span   // what follows "key:" or "- " on its line, its comment cut
	body   jsontext.Span   // its lines from its own to the next entry's
	kind   yamlKind        //
	n      int             // keys of a mapping, items of a sequence
	lines  int             // lines of body
	keys   []jsontext.Span // a mapping's first keys; a sequence's first item's
	fields []yamlNode      // an item of a top-level sequence that is a mapping: its first fields
}

// yamlKeyCount is a key of the items of a top-level sequence and how many
// items have it.
type yamlKeyCount struct {
	key   jsontext.Span
	count int
}

// yamlDoc is a YAML text: the structure of its first document.
type yamlDoc struct {
	docs       int  // documents: "---" markers, and one before the first if it has content
	seq        bool // the first document is a sequence, else a mapping
	n          int  // its top-level keys or items
	head, tail []yamlNode
	itemKeys   []yamlKeyCount // a sequence: the keys of its mapping items
	moreKeys   bool           // more distinct keys than yamlItemKeys
	mapItems   int            // a sequence: items that are mappings
}

// detectYAML returns the YAML document the text b holds, or nil. Its
// first document must be a block mapping or sequence at column 0: every
// line at column 0 a comment, a document marker or directive, an anchor
// or tag before the first entry, and otherwise all key lines (a key that
// is a plain or quoted scalar, "key:" or "key: value" where a plain value
// holds no ": ") or all items ("- …", or "- …" lines under a key with no
// value, that key's sequence); no line indented with a tab; keys distinct.
// It must also show structure: a "---" or "%YAML" start, or two entries,
// or a key whose value is a mapping, a sequence or a block scalar; a key
// whose value is plain text indented below it (a stack trace) is not
// YAML. Only the first document is described; the others are counted.
func detectYAML(b []byte) *yamlDoc {
	var (
		d       yamlDoc
		cur     *yamlNode // the entry being read
		curBuf  yamlNode
		marker  bool // a "---" or "%YAML" line before the first entry
		props   bool // an anchor or tag line before the first entry
		started bool // a "---" before the first entry
		nested  bool // some entry holds a mapping, a sequence or a block scalar
		keys    = map[string]struct{}{}
		items   int  // the current key's compact sequence ("- " lines at column 0)
		col     = -1 // an item that is a mapping: the column of its keys
		i       int
	)
	end := func(at int) { // ends the current entry before offset at
		if cur == nil {
			return
		}
		cur.body.End = at
		if items > 0 {
			cur.kind, cur.n = yamlList, items
		}
		d.add(*cur)
		cur, items = nil, 0
	}
	var open yamlFlow // a quoted scalar or flow collection that goes on below its line
	block := -1       // the column of the key or item whose block scalar (| or >) the lines below hold
	plain := -1       // the column the lines of a plain scalar that goes on below its line are indented past
	for i < len(b) {
		line, next := lineAt(b, i)
		if bytes.IndexByte(line, '\r') >= 0 {
			return nil // a carriage return inside a line breaks it, for YAML
		}
		if open.open() {
			open.feed(line)
			i = next
			continue // a line of the current entry, at any column
		}
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' {
			if len(bytes.TrimSpace(line)) == 0 {
				i = next
				continue
			}
			if line[0] == '\t' || cur == nil {
				return nil // tab indentation; or an indented first line
			}
			t := bytes.TrimLeft(line, " ")
			ind := len(line) - len(t)
			if block >= 0 && ind > block {
				i = next
				continue // a line of a block scalar
			}
			block = -1
			if plain >= 0 && ind > plain {
				i = next
				continue // a line of a plain scalar
			}
			if ind == col {
				if k, _, ok := yamlKeyOf(t); ok {
					d.countItemKey(yamlSpan(i, line, k), b)
				}
			}
			block, plain = yamlFeed(&open, t, ind)
			i = next
			continue // a line of the current entry
		}
		block, plain = -1, -1
		kind, key, val := yamlTop(line)
		if kind == yamlItem || kind == yamlKey {
			block, plain = yamlFeed(&open, line, 0)
		}
		switch kind {
		case yamlBad:
			return nil
		case yamlComment:
		case yamlDirective:
			if d.n > 0 {
				return nil
			}
			marker = true
		case yamlDocStart, yamlDocEnd:
			if d.n > 0 || cur != nil {
				end(i)
				if !yamlRest(b[i:], &d.docs) {
					return nil
				}
				d.docs++
				i = len(b)
				continue
			}
			if kind == yamlDocEnd || props || started {
				return nil // an empty document (or one of a tag alone) first: not one this reads
			}
			marker, started = true, true
		case yamlProps:
			if d.n > 0 || cur != nil || props {
				return nil
			}
			props = true
		case yamlItem:
			if cur != nil && !d.seq && cur.val.End == cur.val.Start {
				items++ // the current key's sequence, written at the key's column
				nested = true
				break
			}
			if cur != nil && !d.seq {
				return nil
			}
			end(i)
			d.seq = true
			curBuf = yamlNode{val: yamlSpan(i, line, val), body: jsontext.Span{Start: i}}
			cur = &curBuf
			col = -1
			if kv := skipProps(val); len(kv) > 0 && kv[0] != '[' && kv[0] != '{' {
				if k, _, ok := yamlKeyOf(kv); ok {
					d.mapItems++
					col = cap(line) - cap(kv)
					d.countItemKey(yamlSpan(i, line, k), b)
				}
			}
		case yamlKey:
			if d.seq {
				return nil
			}
			if len(key) > yamlKeyMax {
				return nil
			}
			if d.n < yamlDupKeys {
				if _, dup := keys[string(key)]; dup {
					return nil
				}
				keys[string(key)] = struct{}{}
			}
			end(i)
			curBuf = yamlNode{key: yamlSpan(i, line, key), val: yamlSpan(i, line, val), body: jsontext.Span{Start: i}}
			cur = &curBuf
		}
		i = next
	}
	end(len(b))
	if d.n == 0 {
		return nil
	}
	if d.docs == 0 {
		d.docs = 1
	}
	// What the kept entries hold, and the keys of a sequence's items.
	for _, es := range [][]yamlNode{d.head, d.tail} {
		for k := range es {
			e := &es[k]
			if !e.describe(b, d.seq) {
				return nil
			}
			nested = nested || e.kind == yamlMap || e.kind == yamlList || e.kind == yamlText
		}
	}
	if !marker && !nested && d.n < 2 {
		return nil
	}
	found := d // d stays on the stack: most texts are not YAML
	return &found
}

// countItemKey counts the key k (a span of b) of an item of a top-level
// sequence.
func (d *yamlDoc) countItemKey(k jsontext.Span, b []byte) {
	for j := range d.itemKeys {
		if bytes.Equal(d.itemKeys[j].key.Of(b), k.Of(b)) {
			d.itemKeys[j].count++
			return
		}
	}
	if len(d.itemKeys) < yamlItemKeys {
		d.itemKeys = append(d.itemKeys, yamlKeyCount{key: k, count: 1})
		return
	}
	d.moreKeys = true
}

// add records the top-level entry e.
func (d *yamlDoc) add(e yamlNode) {
	d.n++
	if len(d.head) < yamlHeadEntries {
		d.head = append(d.head, e)
		return
	}
	d.tail = keepLast(d.tail, e, yamlTailEntries)
}

// describe reads what the top-level entry e holds from its lines: a
// scalar on its line, or the mapping, sequence or block scalar indented
// below it, with its count and first keys; for an item of a sequence that
// is a mapping ("- key: …"), its fields. It reports false when the lines
// below do not read as YAML.
func (e *yamlNode) describe(b []byte, item bool) bool {
	body := e.body.Of(b)
	_, first := lineAt(body, 0) // the lines below the entry's own
	val := skipProps(e.val.Of(b))
	if item {
		// "- key: value": a mapping whose first key is on the dash line,
		// its other keys at the column after "- ".
		if k, rest, ok := yamlKeyOf(val); ok && len(val) > 0 && val[0] != '[' && val[0] != '{' {
			col := e.val.Start - e.body.Start
			e.kind = yamlMap
			f := yamlNode{key: yamlSpan(e.val.Start, val, k), val: yamlSpan(e.val.Start, val, yamlValue(rest))}
			e.fields = append(e.fields, f)
			e.n = 1
			return e.readBlock(b, first, col, true)
		}
	}
	switch {
	case len(val) > 0 && (val[0] == '|' || val[0] == '>'):
		e.kind = yamlText
	case len(val) > 0:
		e.kind = yamlScalar
	case e.kind == yamlList: // a compact sequence at the key's column
		e.firstItemKeys(b, first)
	default:
		return e.readBlock(b, first, -1, item)
	}
	e.lines = bytes.Count(body, []byte{'\n'})
	if len(body) > 0 && body[len(body)-1] != '\n' {
		e.lines++
	}
	return true
}

// readBlock reads the block below a top-level entry, from offset from of
// its body: the lines at its first content line's column (col, or found
// when col < 0) are its children, keys or items; fields says whether to
// record the keys as fields of an item (with their values).
func (e *yamlNode) readBlock(b []byte, from, col int, fields bool) bool {
	body := e.body.Of(b)
	e.lines = bytes.Count(body, []byte{'\n'})
	if len(body) > 0 && body[len(body)-1] != '\n' {
		e.lines++
	}
	var firstItem = -1
	for i := from; i < len(body); {
		line, next := lineAt(body, i)
		t := bytes.TrimLeft(line, " ")
		ind := len(line) - len(t)
		if len(bytes.TrimSpace(t)) == 0 || t[0] == '#' || len(skipProps(t)) == 0 && (t[0] == '&' || t[0] == '!') {
			i = next
			continue
		}
		if col < 0 {
			col = ind
			switch {
			case t[0] == '-' && (len(t) == 1 || t[1] == ' '):
				e.kind = yamlList
			default:
				if _, _, ok := yamlKeyOf(t); !ok {
					if e.val.Start == e.val.End {
						return false // plain text below a key with no value: not YAML
					}
					e.kind = yamlScalar // a plain scalar continued below its line
					return true
				}
				e.kind = yamlMap
			}
		}
		if ind < col {
			return false // less indented than the block's first line
		}
		if ind == col {
			switch e.kind {
			case yamlList:
				if !(t[0] == '-' && (len(t) == 1 || t[1] == ' ')) {
					return false
				}
				e.n++
				if e.n == 1 {
					firstItem = e.body.Start + i + ind
				}
			case yamlMap:
				if t[0] == '-' && (len(t) == 1 || t[1] == ' ') {
					break // the sequence of the key before, at the key's column
				}
				k, rest, ok := yamlKeyOf(t)
				if !ok {
					return false
				}
				e.n++
				ks := yamlSpan(e.body.Start+i, line, k)
				if fields {
					if len(e.fields) < itemFields {
						e.fields = append(e.fields, yamlNode{key: ks, val: yamlSpan(e.body.Start+i, line, yamlValue(rest))})
					}
				} else if len(e.keys) < nestedKeys {
					e.keys = append(e.keys, ks)
				}
			}
		}
		i = next
	}
	if e.kind == yamlList && firstItem >= 0 {
		e.firstItemKeys(b, firstItem-e.body.Start)
	}
	return true
}

// firstItemKeys records the keys of the first item of the sequence below
// e, whose first "- " line starts at offset from of its body.
func (e *yamlNode) firstItemKeys(b []byte, from int) {
	body := e.body.Of(b)
	col := -1
	for i := from; i < len(body); {
		line, next := lineAt(body, i)
		t := bytes.TrimLeft(line, " ")
		ind := len(line) - len(t)
		if len(bytes.TrimSpace(t)) == 0 || t[0] == '#' {
			i = next
			continue
		}
		if col < 0 { // the item's dash line
			if !(t[0] == '-' && (len(t) == 1 || t[1] == ' ')) {
				return
			}
			rest := bytes.TrimLeft(t[1:], " ")
			col = ind + len(t) - len(rest)
			if k, _, ok := yamlKeyOf(rest); ok && len(rest) > 0 {
				e.keys = append(e.keys, yamlSpan(e.body.Start+i, line, k))
			}
			i = next
			continue
		}
		if ind < col {
			return // the next item, or the block's end
		}
		if ind == col && len(e.keys) < nestedKeys {
			if k, _, ok := yamlKeyOf(t); ok {
				e.keys = append(e.keys, yamlSpan(e.body.Start+i, line, k))
			}
		}
		i = next
	}
}
