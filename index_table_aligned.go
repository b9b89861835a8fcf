package values

import (
	"bytes"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes the column-aligned tables that ps, df, kubectl,
// pip list and sqlite3 -column print: where their columns lie (under a
// rule line's dashes, or at the positions blank in every line), whether a
// table without a header is one, and how a row splits into cells when
// some overflow their columns. The table, its sample and how a header is
// told are in index_table.go.

// column is the span of positions of a column of an aligned table.
type column struct{ start, end int }

// detectAligned recognizes a column-aligned table in the sample. Its
// columns are, when the second line is a rule of dashes under the header
// (sqlite3 -column, pip list), the dashes' runs; else the runs of
// positions that are not blank in every line of the sample (a line too
// short to reach a position is blank there), where a column whose first
// line is blank joins the one on its left (a last column of free text, as
// ps aux's COMMAND), and so does one that is blank in every other line
// (as the "on" of df's "Mounted on"). When cells overflow their columns
// in some rows, so that those runs join two of the header's names in one
// column, the columns are the header's words, and every row, which must
// have as many words at least, splits at white space, its last column
// taking the rest (only a last column may hold spaces then). A table
// without a header needs more: data in its columns (dataColumns), and
// padding that aligns them (padded).
func detectAligned(b []byte, sample []sampleLine) *table {
	lines := make([][]byte, len(sample))
	for k, s := range sample {
		lines[k] = s.line
	}
	if cols := ruleColumns(lines); cols != nil {
		header := alignedCells(lines[0], cols)
		if !namesLookNamed(header) {
			return nil
		}
		t := newTable("aligned", trimmedNames(header), len(cols))
		_, first := lineAt(b, sample[0].at)
		return t.alignedRows(b, first, cols, false)
	}
	cols := blankColumns(lines)
	if len(cols) < 2 || len(cols) > tableMaxCols {
		return nil
	}
	rows := make([][][]byte, len(lines))
	for k, l := range lines {
		rows[k] = alignedCells(l, cols)
	}
	header := headerOf(rows, false)
	// Two names in one column: cells overflowed. (The last column's name
	// may have words, as df's "Mounted on", when the rows have fewer.)
	words := bytes.Fields(lines[0])
	split := true // every row has as many words as the header
	for _, l := range lines[1:] {
		split = split && len(bytes.Fields(l)) >= len(words)
	}
	joined := false
	for j, h := range header {
		joined = joined || (j < len(header)-1 || split) && bytes.IndexByte([]byte(h), ' ') >= 0
	}
	if !joined {
		if header == nil && (!dataColumns(rows, len(cols)) || !padded(lines, cols)) {
			return nil
		}
		t := newTable("aligned", header, len(cols))
		first := sample[0].at
		if header != nil {
			_, first = lineAt(b, first)
		}
		return t.alignedRows(b, first, cols, false)
	}
	// Overflowing cells: the header's words, rows split at white space.
	if !split || len(words) > tableMaxCols {
		return nil
	}
	rows = [][][]byte{words}
	for _, l := range lines[1:] {
		f := bytes.Fields(l)
		rows = append(rows, append(f[:len(words)-1:len(words)-1], bytes.Join(f[len(words)-1:], []byte(" "))))
	}
	if header = headerOf(rows, false); header == nil {
		return nil
	}
	t := newTable("aligned", header, len(words))
	_, first := lineAt(b, sample[0].at)
	return t.alignedRows(b, first, nil, true)
}

// ruleColumns returns the columns that a rule line under the first line
// draws ("--  ------  -----"), or nil.
func ruleColumns(lines [][]byte) []column {
	rule := bytes.TrimRight(lines[1], " ")
	if len(rule) == 0 || rule[0] != '-' && rule[0] != '=' || !isRuleLine(rule) || bytes.ContainsAny(rule, "+|:") {
		return nil
	}
	var cols []column
	for p := 0; p < len(rule); {
		if rule[p] == ' ' {
			p++
			continue
		}
		q := p
		for q < len(rule) && rule[q] != ' ' {
			q++
		}
		if len(cols) > 0 {
			cols[len(cols)-1].end = p
		}
		cols = append(cols, column{p, q})
		p = q
	}
	if len(cols) < 2 || len(cols) > tableMaxCols {
		return nil
	}
	cols[len(cols)-1].end = 1 << 30 // the last column takes the rest of a line
	return cols
}

// blankColumns returns the columns of aligned lines: the runs of positions
// not blank in every line, a column blank in the first line joined to the
// one on its left, and so is one blank in every other line.
func blankColumns(lines [][]byte) []column {
	width := 0
	for _, r := range lines {
		width = max(width, len(r))
	}
	used := make([]bool, width)
	for _, r := range lines {
		for p, c := range r {
			if c != ' ' {
				used[p] = true
			}
		}
	}
	var cols []column
	for p := 0; p < width; {
		if !used[p] {
			p++
			continue
		}
		q := p
		for q < width && used[q] {
			q++
		}
		cols = append(cols, column{p, q})
		p = q
	}
	var merged []column
	for _, c := range cols {
		blankRows := true
		for _, r := range lines[1:] {
			if len(alignedCell(r, c)) > 0 {
				blankRows = false
				break
			}
		}
		if len(merged) > 0 && (len(alignedCell(lines[0], c)) == 0 || blankRows) {
			merged[len(merged)-1].end = c.end
			continue
		}
		merged = append(merged, c)
	}
	return merged
}

// alignedCell returns the cell of line in column c, trimmed.
func alignedCell(line []byte, c column) []byte {
	if c.start >= len(line) {
		return nil
	}
	return bytes.TrimSpace(line[c.start:min(c.end, len(line))])
}

// alignedCells returns the cells of line in cols.
func alignedCells(line []byte, cols []column) [][]byte {
	cells := make([][]byte, len(cols))
	for j, c := range cols {
		cells[j] = alignedCell(line, c)
	}
	return cells
}

// dataColumns reports whether the cells of a table without a header are
// data: three columns at least, each holding a letter or a digit in half
// of the rows or more (filled), and a last column of single words in half
// of the rows or more (a log line's message is not a column).
func dataColumns(rows [][][]byte, cols int) bool {
	if cols < 3 || !filled(rows, cols) {
		return false
	}
	words := 0
	for _, r := range rows {
		if cols-1 < len(r) && len(bytes.Fields(r[cols-1])) <= 1 {
			words++
		}
	}
	return 2*words >= len(rows)
}

// padded reports whether most of the columns after the first start where
// some line pads the column before with two blanks or more: lines that
// are only alike (a log's lines of one length) are not aligned.
func padded(lines [][]byte, cols []column) bool {
	n := 0
	for _, c := range cols[1:] {
		for _, l := range lines {
			if c.start >= 2 && c.start <= len(l) && l[c.start-1] == ' ' && l[c.start-2] == ' ' {
				n++
				break
			}
		}
	}
	return 2*n >= len(cols)-1
}

// alignedRows counts the rows of an aligned table from offset first of b
// and summarizes their cells: by cols, or at white space (words).
func (t *table) alignedRows(b []byte, first int, cols []column, words bool) *table {
	var spans []jsontext.Span
	eachRow(b, first, isRuleLine, func(line []byte, at int) {
		t.addRow(jsontext.Span{Start: at, End: at + len(line)})
		spans = spans[:0]
		if words {
			spans = wordSpans(spans, line, at, t.cols)
		} else {
			for _, c := range cols {
				if c.start >= len(line) {
					break
				}
				spans = append(spans, jsontext.Span{Start: at + c.start, End: at + min(c.end, len(line))})
			}
		}
		t.addCells(b, spans)
	})
	if t.rows == 0 {
		return nil
	}
	return t
}

// wordSpans appends the spans of the first n-1 words of line (at offset
// at) and of the rest of it.
func wordSpans(dst []jsontext.Span, line []byte, at, n int) []jsontext.Span {
	p := 0
	for len(dst) < n-1 {
		for p < len(line) && (line[p] == ' ' || line[p] == '\t') {
			p++
		}
		if p == len(line) {
			return dst
		}
		q := p
		for q < len(line) && line[q] != ' ' && line[q] != '\t' {
			q++
		}
		dst = append(dst, jsontext.Span{Start: at + p, End: at + q})
		p = q
	}
	return append(dst, jsontext.Span{Start: at + p, End: at + len(line)})
}
