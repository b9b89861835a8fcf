package values

import (
	"bytes"
	"encoding/csv"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes the tables whose columns a character separates:
// '|' (Markdown, sqlite3 -markdown, psql, mysql), tabs (TSV) and commas
// (CSV), and splits their rows into cells. The table, its sample and how
// a header is told are in index_table.go.

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
