package values

import "github.com/agentvalues/values/internal/jsontext"

// This file holds what Put recognizes in a text value: the JSON it holds
// (one array or object, or a stream of values such as JSON Lines), tables
// (index_table.go), and documents in a data format: unified diffs
// (index_diff.go), YAML (index_yaml.go) and XML (index_xml.go). What is
// recognized only changes the preview and what references can name; the
// stored bytes are the text as given.

// textFormat is what Put recognized in a text other than JSON: a table or
// a document in a data format. It renders the text's preview.
type textFormat interface {
	// appendPreview appends the preview of the text x, without its handle,
	// in at most budget bytes.
	appendPreview(dst []byte, x *value, budget int) []byte
}

// indexText recognizes the structure of the valid UTF-8 text b of lines
// lines, if any, and returns its index. Text whose first character (after white
// space) opens an array or object is scanned as JSON: one value makes a
// container over the text, two or more a stream whose values references
// index as items ("$r1.7.Action"). Only text that begins so pays for the
// scan, and one value is scanned once: the text is scanned as a stream
// only when its first value is whole and more follows. A stream that
// breaks JSON anywhere is not one. tried says what the caller found when
// it scanned b as one value already, if it did. Text that is not JSON is
// tried as each format of detectFormat.
func indexText(b []byte, lines int, tried jsonTried) (*container, textFormat) {
	i := jsontext.SkipSpace(b, 0)
	if i < len(b) && (b[i] == '{' || b[i] == '[') && tried != jsonBroken {
		more := tried == jsonMore
		if !more {
			top, sh, err := jsontext.Scan(b, scanLimits)
			if err == nil {
				return newContainer(b[top.Start:top.End], &sh, top.Start, 0), nil
			}
			more = jsontext.AfterValue(err)
		}
		if more {
			if sh, err := jsontext.ScanStream(b, scanLimits); err == nil {
				return newStream(b, &sh), nil
			}
		}
	}
	return nil, detectFormat(b, lines)
}

// detectFormat returns the format the text b of lines lines holds, or nil:
// the first of XML, a unified diff, YAML and a table that its bytes show. Each
// detector decides from a bounded prefix of b whether b is of its format
// (so that text of no format costs about that prefix for each) before it
// reads further.
func detectFormat(b []byte, lines int) textFormat {
	if h := detectHTML(b); h != nil {
		return h
	}
	if x := detectXML(b); x != nil {
		return x
	}
	if d := detectDiff(b); d != nil {
		return d
	}
	if y := detectYAML(b); y != nil {
		return y
	}
	if m := detectMarkdown(b); m != nil {
		return m
	}
	if t := detectTable(b, lines); t != nil {
		return t
	}
	return nil
}

// keepLast returns the last entries kept, at most n, with e after them:
// once n are kept, the oldest gives way, and no memory is allocated.
func keepLast[E any](tail []E, e E, n int) []E {
	if len(tail) < n {
		return append(tail, e)
	}
	copy(tail, tail[1:])
	tail[len(tail)-1] = e
	return tail
}

// newStream indexes the stream of JSON values b as a container of its
// values, which it treats as the items of an array, marks included, so
// that a lookup of an item starts near it as in an array.
func newStream(b []byte, sh *jsontext.Shape) *container {
	c := &container{raw: b, kind: KindArray, n: sh.Count, items: sh.Items, stream: true}
	c.marks, _ = offsets(sh, 0, false)
	var chs []jsontext.Child
	if c.n <= arrayHeadItems+arrayTailItems {
		chs = sh.Head
	} else {
		chs = append(sh.Head[:arrayHeadItems:arrayHeadItems], sh.Last(arrayTailItems)...)
	}
	for _, ch := range chs {
		c.nodes = append(c.nodes, describe(b, ch.Key, ch.Val, true))
	}
	return c
}
