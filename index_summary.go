package values

import (
	"bytes"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file holds the value summaries of item schemas: which values one
// key of an array's object items takes, over every item, as the
// validating scan records them (jsontext.Summary: up to 8 distinct short
// strings when the key has no more, the range of its numbers, which
// booleans occur; whether it is ever null is in its kinds), and how a
// preview shows them: `Action: "start"|"run"|"pass"`,
// `installed_size: number 6..510243`, `Elapsed?: number 0..1.8|null`.
// A table column is summarized the same way, cell by cell (columnSummary).

// summaryDetail says how much of a summary a preview shows; a schema that
// does not fit its budget is shown with less.
type summaryDetail uint8

const (
	summaryFull      summaryDetail = iota // every set of strings and every range
	summaryShortSets                      // sets of strings up to shortSetLen bytes, and ranges
	summaryRanges                         // ranges only: strings as text
	summaryKinds                          // the kinds only
)

// shortSetLen is the longest set of strings shown at summaryShortSets.
const shortSetLen = 40

// numberLen is the most a preview shows of a number of a range.
const numberLen = 24

// appendSummary appends what the values of one key (or column) of kinds
// ks take, as s records them in the document doc, at detail: the kinds
// joined by "|", a string kind as its set of strings when s tells them
// all, a number as its range, a boolean as the values that occur. cells
// says that the strings of s are table cells, not JSON strings.
func appendSummary(dst, doc []byte, ks jsontext.Kinds, s *jsontext.Summary, cells bool, detail summaryDetail) []byte {
	first := true
	sep := func() {
		if !first {
			dst = append(dst, '|')
		}
		first = false
	}
	if ks&jsontext.KindString != 0 {
		sep()
		set := s.NStrings > 0 && !s.Open && detail < summaryRanges
		if set && detail == summaryShortSets && stringSetLen(doc, s, cells) > shortSetLen {
			set = false
		}
		if set {
			dst = appendStringSet(dst, doc, s, cells)
		} else {
			dst = append(dst, "text"...)
		}
	}
	if ks&jsontext.KindNumber != 0 {
		sep()
		switch {
		case !s.Numbers || detail == summaryKinds:
			dst = append(dst, "number"...)
		case bytes.Equal(s.Min.Of(doc), s.Max.Of(doc)):
			dst = jsontext.AppendClipped(dst, s.Min.Of(doc), numberLen)
		default:
			dst = append(dst, "number "...)
			dst = jsontext.AppendClipped(dst, s.Min.Of(doc), numberLen)
			dst = append(dst, ".."...)
			dst = jsontext.AppendClipped(dst, s.Max.Of(doc), numberLen)
		}
	}
	if ks&jsontext.KindBool != 0 {
		sep()
		switch {
		case detail == summaryKinds || s.Bools == 3 || s.Bools == 0:
			dst = append(dst, "bool"...)
		case s.Bools == 2:
			dst = append(dst, "true"...)
		default:
			dst = append(dst, "false"...)
		}
	}
	for _, k := range [...]struct {
		bit  jsontext.Kinds
		name string
	}{{jsontext.KindNull, "null"}, {jsontext.KindArray, "array"}, {jsontext.KindObject, "object"}} {
		if ks&k.bit != 0 {
			sep()
			dst = append(dst, k.name...)
		}
	}
	return dst
}

// appendStringSet appends the strings s tells joined by "|", each quoted.
func appendStringSet(dst, doc []byte, s *jsontext.Summary, cells bool) []byte {
	for i, sp := range s.Strings[:s.NStrings] {
		if i > 0 {
			dst = append(dst, '|')
		}
		if cells {
			dst = jsontext.AppendQuote(dst, sp.Of(doc))
		} else {
			dst = append(dst, sp.Of(doc)...) // short, and without escapes (jsontext.Summary)
		}
	}
	return dst
}

// stringSetLen is the length appendStringSet appends.
func stringSetLen(doc []byte, s *jsontext.Summary, cells bool) int {
	n := int(s.NStrings) - 1
	for _, sp := range s.Strings[:s.NStrings] {
		if cells {
			n += jsontext.QuotedLen(sp.Of(doc))
		} else {
			n += sp.End - sp.Start
		}
	}
	return n
}

// columnSummary is what Put records of the cells of one column of a
// table, as an item schema records the values of one key: a blank cell is
// null, a cell that is a JSON number or true or false is one, and any
// other is a string. Its size is fixed, whatever the number of rows.
type columnSummary struct {
	kinds  jsontext.Kinds
	values jsontext.Summary
}

// add records the cell of the text doc that cell spans, white space
// around it included.
func (c *columnSummary) add(doc []byte, cell jsontext.Span) {
	for cell.Start < cell.End && jsontext.IsSpace(doc[cell.Start]) {
		cell.Start++
	}
	for cell.End > cell.Start && jsontext.IsSpace(doc[cell.End-1]) {
		cell.End--
	}
	b := cell.Of(doc)
	switch {
	case len(b) == 0:
		c.kinds |= jsontext.KindNull
	case string(b) == "true" || string(b) == "false":
		c.kinds |= jsontext.KindBool
		c.values.Add(doc, cell)
	case jsontext.IsNumber(b):
		c.kinds |= jsontext.KindNumber
		c.values.AddNumber(doc, cell)
	default:
		c.kinds |= jsontext.KindString
		c.values.AddText(doc, cell)
	}
}

// appendTo appends what the column's cells take, at detail, as
// appendSummary does for a key.
func (c *columnSummary) appendTo(dst, doc []byte, detail summaryDetail) []byte {
	return appendSummary(dst, doc, c.kinds, &c.values, true, detail)
}
