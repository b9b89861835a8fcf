package values

import (
	"bytes"
	"encoding/csv"

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

// detectPipe recognizes a table whose columns '|' separates: every line of
// the sample holds the same number of cells, at least two, or is a rule
// line; there is a rule line, or every line starts and ends with '|'. The
// header is the first line when a rule line follows it, or when it reads
// as one. Rows are the lines that hold '|' and are not rules.
func detectPipe(b []byte, sample []sampleLine) *table {
	var cells [][][]byte
	rule, outer, under := false, true, false
	head := -1 // the first line that holds cells
	for k, s := range sample {
		if isRuleLine(s.line) {
			rule = true
			if len(cells) == 1 && k == head+1 {
				under = true
			}
			continue
		}
		if head < 0 {
			head = k
		}
		t := bytes.TrimSpace(s.line)
		if bytes.IndexByte(t, '|') < 0 {
			if k >= len(sample)-2 && len(cells) >= 2 {
				continue // psql's "(3 rows)"
			}
			return nil
		}
		outer = outer && t[0] == '|' && t[len(t)-1] == '|'
		row := pipeCells(t)
		if len(row) < 2 || len(row) > tableMaxCols || len(cells) > 0 && len(row) != len(cells[0]) {
			return nil
		}
		cells = append(cells, row)
	}
	if len(cells) < 2 || !rule && !outer {
		return nil
	}
	header := headerOf(cells, under)
	format := "pipe"
	if outer && under && isDelimiterRow(sample[head+1].line) {
		format = "markdown"
	}
	t := newTable(format, header, len(cells[0]))
	first := sample[head].at
	if header != nil {
		_, first = lineAt(b, first)
	}
	var spans []jsontext.Span
	eachRow(b, first, func(line []byte) bool { return isRuleLine(line) || bytes.IndexByte(line, '|') < 0 }, func(line []byte, at int) {
		t.addRow(jsontext.Span{Start: at, End: at + len(line)})
		spans = spans[:0]
		// The cells between the outer pipes.
		l, s := bytes.TrimRight(line, " \t"), at
		if trimmed := bytes.TrimLeft(l, " \t"); len(trimmed) > 0 && trimmed[0] == '|' && trimmed[len(trimmed)-1] == '|' && len(trimmed) > 1 {
			s += len(l) - len(trimmed) + 1
			l = trimmed[1 : len(trimmed)-1]
		}
		t.addCells(b, cellSpans(spans, l, s, '|'))
	})
	if t.rows == 0 {
		return nil
	}
	return t
}

// pipeCells splits the trimmed line t at '|', without the empty cells
// outer pipes make.
func pipeCells(t []byte) [][]byte {
	if len(t) > 1 && t[0] == '|' && t[len(t)-1] == '|' {
		t = t[1 : len(t)-1]
	}
	var row [][]byte
	for c := range bytes.SplitSeq(t, []byte("|")) {
		row = append(row, bytes.TrimSpace(c))
	}
	return row
}

// detectDelimited recognizes TSV or CSV in the sample, whose first line
// starts at offset start of b. TSV lines must all hold a tab; a line may
// lack the last field (zone1970.tab's comments), and one line in eight
// may be off (sqlite3 prints a field's newline as is). CSV records must
// all have the first's number of fields, and its first record must be a
// header: a file of names with commas is not told from prose otherwise.
// note, the comment line above the data, names the columns when it splits
// into as many names as the rows have fields.
func detectDelimited(b []byte, start int, sample []sampleLine, note []byte) *table {
	if t := detectTSV(b, sample, note); t != nil {
		return t
	}
	header, _ := lineAt(b, start)
	if bytes.IndexByte(header, ',') < 0 {
		return nil
	}
	last := sample[len(sample)-1]
	r := csv.NewReader(bytes.NewReader(b[start : last.at+len(last.line)]))
	r.FieldsPerRecord, r.ReuseRecord = -1, true
	var recs [][][]byte
	for len(recs) < tableSampleRows {
		rec, err := r.Read()
		if err != nil {
			break // the end of the sample, or a record the cut broke
		}
		row := make([][]byte, len(rec))
		for k, f := range rec {
			row[k] = []byte(f)
		}
		if len(row) < 2 || len(row) > tableMaxCols || len(recs) > 0 && len(row) != len(recs[0]) {
			return nil
		}
		recs = append(recs, row)
	}
	if len(recs) < 2 {
		return nil
	}
	names := headerOf(recs, false)
	if names == nil {
		return nil
	}
	t := newTable("csv", names, len(names))
	t.countRecords(b, start)
	if t.rows == 0 {
		return nil
	}
	return t
}

// detectTSV recognizes TSV in the sample.
func detectTSV(b []byte, sample []sampleLine, note []byte) *table {
	tabs := 0
	for _, s := range sample {
		if bytes.IndexByte(s.line, '\t') >= 0 {
			tabs++
		}
	}
	if 8*(len(sample)-tabs) > len(sample) {
		return nil
	}
	var cells [][][]byte
	cols := 0
	for _, s := range sample {
		row := bytes.Split(s.line, []byte("\t"))
		cols = max(cols, len(row))
		cells = append(cells, row)
	}
	if cols < 2 || cols > tableMaxCols {
		return nil
	}
	off := 0
	for _, row := range cells {
		if len(row) != cols && len(row) != cols-1 {
			off++
		}
	}
	if 8*off > len(cells) || !filled(cells, cols) {
		return nil
	}
	var header []string
	first := sample[0].at
	if names := noteNames(note, '\t', cols); names != nil {
		header = names
	} else if header = headerOf(cells, false); header != nil {
		_, first = lineAt(b, first)
		cols = len(header)
	}
	t := newTable("tsv", header, cols)
	var spans []jsontext.Span
	eachRow(b, first, nil, func(line []byte, at int) {
		t.addRow(jsontext.Span{Start: at, End: at + len(line)})
		t.addCells(b, cellSpans(spans[:0], line, at, '\t'))
	})
	if t.rows == 0 {
		return nil
	}
	return t
}

// noteNames returns the column names a comment line holds ("#codes\tTZ"),
// when it splits at sep into cols names; else nil.
func noteNames(note []byte, sep byte, cols int) []string {
	if len(note) == 0 {
		return nil
	}
	fields := bytes.Split(bytes.TrimSpace(bytes.TrimLeft(note, "# ")), []byte{sep})
	if len(fields) != cols || !namesLookNamed(fields) {
		return nil
	}
	return trimmedNames(fields)
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

// countRecords counts the CSV records of b after the header at start in
// one pass (a newline inside quotes does not end a record), not counting
// blank and comment lines at the end, records the spans of the first and
// last rows, and summarizes their cells (a quoted cell without doubled
// quotes as its text, one with them as text it does not tell).
func (t *table) countRecords(b []byte, start int) {
	_, i := lineAt(b, start) // after the header, which has no quoted newline in practice
	end := trimTrailing(b)
	var cells []jsontext.Span
	for i < end {
		j, cellStart := i, i
		inQuote := false
		cells = cells[:0]
		for j < end {
			c := b[j]
			if c == '"' {
				inQuote = !inQuote
			} else if !inQuote && (c == ',' || c == '\n') {
				cells = append(cells, csvCell(b, cellStart, j))
				cellStart = j + 1
				if c == '\n' {
					break
				}
			}
			j++
		}
		if j == end {
			cells = append(cells, csvCell(b, cellStart, j))
		}
		row := jsontext.Span{Start: i, End: j}
		if j > i && b[j-1] == '\r' {
			row.End--
		}
		if row.End > row.Start {
			t.addRow(row)
			t.addCells(b, cells)
		}
		i = j + 1
	}
}

// csvCell returns the span of the CSV cell b[i:j] to summarize: its text
// between its quotes when it is quoted without doubled quotes.
func csvCell(b []byte, i, j int) jsontext.Span {
	if j > i && b[j-1] == '\r' {
		j--
	}
	if j-i >= 2 && b[i] == '"' && b[j-1] == '"' && bytes.Count(b[i+1:j-1], []byte{'"'}) == 0 {
		return jsontext.Span{Start: i + 1, End: j - 1}
	}
	return jsontext.Span{Start: i, End: j}
}

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
