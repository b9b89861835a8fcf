package values

import (
	"bytes"
	"encoding/csv"
	"unicode"
	"unicode/utf8"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes tables in text: CSV and TSV with a header row, and
// the column-aligned tables with a header that ps, df and kubectl print.

// table is a table recognized in a text value: what its preview shows.
type table struct {
	format string          // "csv", "tsv" or "aligned"
	header []string        // the column names
	rows   int             // data rows
	head   []jsontext.Span // the first data rows, at most arrayHeadItems
	tail   []jsontext.Span // the last data rows, at most arrayTailItems, after head
}

// addRow counts a data row and keeps its span if it is among the first
// arrayHeadItems or, so far, the last arrayTailItems.
func (t *table) addRow(row jsontext.Span) {
	t.rows++
	if len(t.head) < arrayHeadItems {
		t.head = append(t.head, row)
		return
	}
	t.tail = append(t.tail, row)
	if len(t.tail) > arrayTailItems {
		t.tail = t.tail[1:]
	}
}

// Table detection reads at most tableSample bytes and tableSampleRows
// lines of a text; a table has at most tableMaxCols columns.
const (
	tableSample     = 64 << 10
	tableSampleRows = 64
	tableMaxCols    = 256
)

// detectTable returns the table the text b of lines lines holds, or nil.
// Lines that begin with '#' and blank lines before the header and after
// the last row are not rows. A table needs a header of at least two named
// columns and at least one row; CSV and TSV rows must all have the
// header's number of fields within the sample (a TSV line in eight may
// not: a field holding a newline), and aligned rows must leave blank the
// columns that separate the header's names. CSV rows are counted over the
// whole text as records (a quoted newline does not end one); TSV and
// aligned rows as the non-blank lines after the header.
func detectTable(b []byte, lines int) *table {
	start := skipComments(b, 0)
	if start >= len(b) {
		return nil
	}
	sample := b[start:min(len(b), start+tableSample)]
	if len(sample) < len(b)-start {
		if k := bytes.LastIndexByte(sample, '\n'); k > 0 {
			sample = sample[:k+1] // whole lines only
		}
	}
	if t := detectDelimited(b, start, sample); t != nil {
		return t
	}
	return detectAligned(b, start, sample, lines)
}

// skipComments returns the offset of the first line at or after i that is
// neither blank nor a comment ('#').
func skipComments(b []byte, i int) int {
	for i < len(b) {
		line, next := lineAt(b, i)
		if len(bytes.TrimSpace(line)) > 0 && line[0] != '#' {
			return i
		}
		i = next
	}
	return i
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

// detectDelimited recognizes CSV or TSV whose header starts at offset start
// of b; sample is b from start on, cut.
func detectDelimited(b []byte, start int, sample []byte) *table {
	header, _ := lineAt(b, start)
	for _, d := range []struct {
		comma  byte
		format string
	}{{'\t', "tsv"}, {',', "csv"}} {
		if bytes.IndexByte(header, d.comma) < 0 {
			continue
		}
		r := csv.NewReader(bytes.NewReader(sample))
		r.Comma, r.FieldsPerRecord, r.ReuseRecord = rune(d.comma), -1, true
		r.LazyQuotes = d.comma == '\t'
		var names []string
		rows, bad, ok := 0, 0, true
		for rows < tableSampleRows {
			rec, err := r.Read()
			if err != nil {
				break // the end of the sample, or a record the cut broke
			}
			if names == nil {
				if len(rec) < 2 || len(rec) > tableMaxCols || !namesLookNamed(rec) {
					ok = false
					break
				}
				names = append([]string(nil), rec...)
				continue
			}
			if len(rec) != len(names) {
				bad++
			}
			rows++
		}
		// sqlite3 and others print a TSV field's newline as is: a few such
		// lines are rows of a table still.
		if d.comma == ',' && bad > 0 || 8*bad > rows {
			ok = false
		}
		if ok && rows > 0 {
			t := &table{format: d.format, header: names}
			t.countRecords(b, start, d.comma)
			if t.rows > 0 {
				return t
			}
		}
	}
	return nil
}

// namesLookNamed reports whether the fields of a header row read as column
// names: each non-empty one has a letter (as "1024-blocks" does), the
// first does not start with a digit (as a log line's time stamp does), and
// at most one is empty.
func namesLookNamed(fields []string) bool {
	empty := 0
	for i, f := range fields {
		if f == "" {
			empty++
			continue
		}
		if r, _ := utf8.DecodeRuneInString(f); i == 0 && unicode.IsDigit(r) || !bytes.ContainsFunc([]byte(f), unicode.IsLetter) {
			return false
		}
	}
	return empty <= 1
}

// countRecords counts the CSV or TSV records of b after the header at
// start in one pass (a newline inside quotes does not end a record), not
// counting blank and comment lines at the end, and records the spans of
// the first and last rows.
func (t *table) countRecords(b []byte, start int, comma byte) {
	quoted := comma == ','
	_, i := lineAt(b, start) // after the header, which has no quoted newline in practice
	end := trimTrailing(b)
	for i < end {
		j := i
		inQuote := false
		for j < end {
			c := b[j]
			if quoted && c == '"' {
				inQuote = !inQuote
			} else if c == '\n' && !inQuote {
				break
			}
			j++
		}
		row := jsontext.Span{Start: i, End: j}
		if j > i && b[j-1] == '\r' {
			row.End--
		}
		if row.End > row.Start {
			t.addRow(row)
		}
		i = j + 1
	}
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

// detectAligned recognizes a column-aligned table whose header starts at
// offset start of b: the columns are the runs of positions that are not
// blank in every line of the sample (a line too short to reach a position
// is blank there); a column whose header is blank joins the one on its
// left (a last column of free text, as ps aux's COMMAND), and so does one
// that is blank in every row (as the "on" of df's "Mounted on").
func detectAligned(b []byte, start int, sample []byte, lines int) *table {
	var rowsSample [][]byte
	for i := 0; i < len(sample) && len(rowsSample) <= tableSampleRows; {
		line, next := lineAt(sample, i)
		if len(bytes.TrimSpace(line)) > 0 && line[0] != '#' {
			rowsSample = append(rowsSample, line)
		}
		i = next
	}
	if len(rowsSample) < 2 {
		return nil
	}
	header := rowsSample[0]
	width := 0
	for _, r := range rowsSample {
		width = max(width, len(r))
	}
	used := make([]bool, width) // not blank in some line
	for _, r := range rowsSample {
		for p, c := range r {
			if c != ' ' {
				used[p] = true
			}
		}
	}
	type col struct{ start, end int }
	var cols []col
	for p := 0; p < width; {
		if !used[p] {
			p++
			continue
		}
		q := p
		for q < width && used[q] {
			q++
		}
		cols = append(cols, col{p, q})
		p = q
	}
	cell := func(r []byte, c col) []byte {
		if c.start >= len(r) {
			return nil
		}
		return bytes.TrimSpace(r[c.start:min(c.end, len(r))])
	}
	var merged []col
	for _, c := range cols {
		blankRows := true
		for _, r := range rowsSample[1:] {
			if len(cell(r, c)) > 0 {
				blankRows = false
				break
			}
		}
		if len(merged) > 0 && (len(cell(header, c)) == 0 || blankRows) {
			merged[len(merged)-1].end = c.end
			continue
		}
		merged = append(merged, c)
	}
	if len(merged) < 2 || len(merged) > tableMaxCols {
		return nil
	}
	names := make([]string, len(merged))
	for i, c := range merged {
		names[i] = string(cell(header, c))
		if i < len(merged)-1 && bytes.ContainsAny(cell(header, c), " ") {
			return nil // a name with a space inside a column: not aligned after all
		}
	}
	if !namesLookNamed(names) {
		return nil
	}
	// Rows: the lines after the header, up to the trailing comments.
	t := &table{format: "aligned", header: names}
	_, i := lineAt(b, start)
	t.countLines(b, i, trimTrailing(b))
	if t.rows == 0 {
		return nil
	}
	return t
}

// countLines counts the non-blank lines of b[from:end] as rows, recording
// the spans of the first and last ones.
func (t *table) countLines(b []byte, from, end int) {
	for i := from; i < end; {
		line, next := lineAt(b[:end], i)
		if len(bytes.TrimSpace(line)) > 0 {
			row := jsontext.Span{Start: i, End: i + len(line)}
			t.addRow(row)
		}
		i = next
	}
}
