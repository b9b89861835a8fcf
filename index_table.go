package values

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes tables in text, and says nothing of a text it is
// not sure of: CSV and TSV; tables whose columns '|' separates (Markdown,
// sqlite3 -markdown, psql, mysql); and the column-aligned tables that ps,
// df, kubectl, pip list and sqlite3 -column print. A table's first row is
// its header when it reads as one: its cells are names, and they are of
// another shape than the cells below them ("PID" above "1"); otherwise the
// table has no header and its columns are numbered. Rule lines ("-----",
// "|---|", "+---+") are not rows: under a header, they give the columns
// of an aligned table. Comment lines ('#') around the data are not rows;
// the one just above the data names the columns when it splits as the
// rows do (tzdata's zone1970.tab). In aligned output a cell that
// overflows its column (a busy ps aux's RSS) shifts the rest of its row:
// such rows are split at white space when only the last column holds
// spaces. A text whose lines are paragraphs (blank lines between them) or
// whose columns hold no letters or digits (bullets) is not a table.
//
// This file holds the table, the sample detection reads, and how a
// header is told; index_table_delimited.go recognizes the tables a
// character separates, index_table_aligned.go the aligned ones.

// table is a table recognized in a text value: what its preview shows.
type table struct {
	format string          // "csv", "tsv", "markdown", "pipe" or "aligned"
	header []string        // the column names; nil when the table has none
	cols   int             // columns
	rows   int             // data rows
	head   []jsontext.Span // the first data rows, at most arrayHeadItems
	tail   []jsontext.Span // the last data rows, at most arrayTailItems, after head
	sums   []columnSummary // what each column's cells take, over every row
}

// addRow counts a data row and keeps its span if it is among the first
// arrayHeadItems or, so far, the last arrayTailItems.
func (t *table) addRow(row jsontext.Span) {
	t.rows++
	if len(t.head) < arrayHeadItems {
		t.head = append(t.head, row)
		return
	}
	t.tail = keepLast(t.tail, row, arrayTailItems)
}

// addCells records the cells of a row in the column summaries.
func (t *table) addCells(b []byte, cells []jsontext.Span) {
	for j, c := range cells[:min(len(cells), t.cols)] {
		t.sums[j].add(b, c)
	}
	for j := len(cells); j < t.cols; j++ {
		t.sums[j].kinds |= jsontext.KindNull // a row short of cells: the last ones blank
	}
}

// Table detection reads at most tableSample bytes and tableSampleRows
// lines of a text; a table has at most tableMaxCols columns.
const (
	tableSample     = 64 << 10
	tableSampleRows = 64
	tableMaxCols    = 256
)

// sampleLine is a line of a table's sample.
type sampleLine struct {
	line []byte
	at   int // its offset in the text
}

// detectTable returns the table the text b holds, or nil. It takes the
// first tableSampleRows lines after the leading comment and blank lines
// (within tableSample bytes) as a sample: a sample with blank lines
// between more than one row in eight, or of fewer than two lines, is not
// a table. Then it tries '|'-separated columns, tabs and commas, and
// aligned columns, in that order. Rows are counted over the whole text,
// and every row's cells are summarized, up to the trailing comment and
// blank lines.
func detectTable(b []byte, lines int) *table {
	start, note := skipComments(b, 0)
	if start >= len(b) {
		return nil
	}
	var sample []sampleLine
	blanks := 0
	for i := start; i < len(b) && i-start < tableSample && len(sample) < tableSampleRows; {
		line, next := lineAt(b, i)
		if next-start > tableSample && len(sample) > 0 && next < len(b) {
			break // whole lines only
		}
		switch {
		case len(bytes.TrimSpace(line)) == 0:
			blanks++
		case line[0] != '#':
			sample = append(sample, sampleLine{line, i})
		}
		i = next
	}
	if len(sample) < 2 || 8*max(blanks-1, 0) > len(sample) {
		return nil
	}
	if t := detectPipe(b, sample); t != nil {
		return t
	}
	if t := detectDelimited(b, start, sample, note); t != nil {
		return t
	}
	return detectAligned(b, sample)
}

// skipComments returns the offset of the first line at or after i that is
// neither blank nor a comment ('#'), and the comment line just before it,
// if it is one.
func skipComments(b []byte, i int) (int, []byte) {
	var last []byte
	for i < len(b) {
		line, next := lineAt(b, i)
		if len(bytes.TrimSpace(line)) > 0 && line[0] != '#' {
			return i, last
		}
		last = nil
		if len(line) > 0 && line[0] == '#' {
			last = line
		}
		i = next
	}
	return i, nil
}

// lineAt returns the line starting at i, without its newline, and the
// offset of the next line.
func lineAt(b []byte, i int) (line []byte, next int) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		return b[i:], len(b)
	}
	line = b[i : i+j]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, i + j + 1
}

// trimTrailing returns the end of b without its trailing blank lines and
// comment lines.
func trimTrailing(b []byte) int {
	end := len(b)
	for end > 0 {
		k := bytes.LastIndexByte(b[:end], '\n')
		line := b[k+1 : end]
		if len(bytes.TrimSpace(line)) > 0 && line[0] != '#' {
			return end
		}
		if k < 0 {
			return 0
		}
		end = k
	}
	return end
}

// newTable returns a table of format with cols columns named header (nil:
// numbered).
func newTable(format string, header []string, cols int) *table {
	return &table{format: format, header: header, cols: cols, sums: make([]columnSummary, cols)}
}

// eachRow calls row for each line of b from offset from up to the
// trailing comment and blank lines that is neither blank nor a comment,
// nor, with skip, a line skip reports.
func eachRow(b []byte, from int, skip func([]byte) bool, row func(line []byte, at int)) {
	end := trimTrailing(b)
	for i := from; i < end; {
		line, next := lineAt(b[:end], i)
		if len(bytes.TrimSpace(line)) > 0 && line[0] != '#' && (skip == nil || !skip(line)) {
			row(line, i)
		}
		i = next
	}
}

// cellSpans returns the spans of the cells of line (at offset at) split
// at sep, appended to dst.
func cellSpans(dst []jsontext.Span, line []byte, at int, sep byte) []jsontext.Span {
	k := 0
	for {
		j := bytes.IndexByte(line[k:], sep)
		if j < 0 {
			return append(dst, jsontext.Span{Start: at + k, End: at + len(line)})
		}
		dst = append(dst, jsontext.Span{Start: at + k, End: at + k + j})
		k += j + 1
	}
}

// isRuleLine reports whether line only draws a rule: dashes or equals
// signs, with '+', '|', ':' and spaces between them ("-----", "|---|",
// "+----+", "----+----").
func isRuleLine(line []byte) bool {
	dashes := 0
	for _, c := range line {
		switch c {
		case '-', '=':
			dashes++
		case '+', '|', ':', ' ', '\t':
		default:
			return false
		}
	}
	return dashes >= 3
}

// trimmedNames returns the cells as names, white space trimmed.
func trimmedNames(cells [][]byte) []string {
	names := make([]string, len(cells))
	for i, c := range cells {
		names[i] = string(bytes.TrimSpace(c))
	}
	return names
}

// headerOf returns the first row's cells as column names when it is a
// header: certain (a rule line under it), or its cells look named and,
// column by column, more of them are of another shape than all the cells
// below, in a column whose cells mostly share one shape ("PID" above "1",
// "USER" above "root": cellShape), than are a value the cells below also
// hold ("TLSv1.3" above "TLSv1.3"). Otherwise nil.
func headerOf(rows [][][]byte, certain bool) []string {
	first := rows[0]
	if !namesLookNamed(first) {
		return nil
	}
	if certain {
		return trimmedNames(first)
	}
	other, same := 0, 0
	for j := range first {
		h := bytes.TrimSpace(first[j])
		shape := cellShape(h)
		shapes := map[string]int{}
		seen := false
		for _, r := range rows[1:] {
			if j < len(r) && len(bytes.TrimSpace(r[j])) > 0 {
				c := bytes.TrimSpace(r[j])
				shapes[cellShape(c)]++
				seen = seen || bytes.Equal(c, h)
			}
		}
		most, n := 0, 0
		for _, c := range shapes {
			most = max(most, c)
			n += c
		}
		switch {
		case seen && len(h) > 0:
			same++
		case shapes[shape] == 0 && n > 0 && 2*most >= n:
			other++
		}
	}
	if other > same {
		return trimmedNames(first)
	}
	return nil
}

// cellShape returns the shape of a cell: its runs of capitals, small
// letters and digits as "A", "a" and "9", other characters as they are
// ("Kx=any" is "Aa=a", "12:30" is "9:9"), at most 16 bytes of it.
func cellShape(c []byte) string {
	var buf [16]byte
	s := buf[:0]
	var last byte
	for _, r := range string(bytes.TrimSpace(c)) {
		var k byte
		switch {
		case unicode.IsUpper(r):
			k = 'A'
		case unicode.IsLetter(r):
			k = 'a'
		case unicode.IsDigit(r):
			k = '9'
		case r < utf8.RuneSelf:
			k = byte(r)
		default:
			k = '?'
		}
		if k == last && (k == 'A' || k == 'a' || k == '9' || k == ' ') {
			continue
		}
		if len(s) == len(buf) {
			break
		}
		s = append(s, k)
		last = k
	}
	return string(s)
}

// namesLookNamed reports whether the cells of a header row read as column
// names: each non-empty one has a letter (as "1024-blocks" does) and at
// most 40 bytes and three words, the first does not start with a digit
// (as a log line's time stamp does), and at most one is empty.
func namesLookNamed(fields [][]byte) bool {
	empty := 0
	for i, f := range fields {
		f = bytes.TrimSpace(f)
		if len(f) == 0 {
			empty++
			continue
		}
		if r, _ := utf8.DecodeRune(f); i == 0 && unicode.IsDigit(r) || !bytes.ContainsFunc(f, unicode.IsLetter) || len(f) > 40 || len(bytes.Fields(f)) > 3 {
			return false
		}
	}
	return empty <= 1
}

// filled reports whether every column but the last holds a letter or a
// digit in at least half of the rows: a column of bullets ("*") or
// dashes is not one of data.
func filled(rows [][][]byte, cols int) bool {
	for j := 0; j < cols-1; j++ {
		n := 0
		for _, r := range rows {
			if j < len(r) && bytes.ContainsFunc(r[j], func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
				n++
			}
		}
		if 2*n < len(rows) {
			return false
		}
	}
	return true
}
