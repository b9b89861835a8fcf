package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// demoTree writes a directory tree for the demo and returns the files it
// holds as list_files reports them, in lexical order, and the first file
// (in that order) with a TODO line.
func demoTree(t *testing.T) (dir string, files []demoFile, firstTODO string) {
	t.Helper()
	dir = t.TempDir()
	write := func(name string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, ".") {
			files = append(files, demoFile{Path: name, Bytes: int64(len(data))})
		}
	}
	for d := range 12 {
		for f := range 25 {
			var b strings.Builder
			fmt.Fprintf(&b, "package pkg%02d\n\n", d)
			for l := range 40 + f {
				if (d*25+f)%7 == 3 && l == 20 {
					fmt.Fprintf(&b, "// TODO(demo): item %d of file %d — ünïcode\n", l, f)
				}
				fmt.Fprintf(&b, "var v%03d = %d // line %d\n", l, l*d, l)
			}
			write(fmt.Sprintf("pkg%02d/file%02d.go", d, f), []byte(b.String()))
		}
	}
	write("blob.bin", []byte{0xff, 0xfe, 'T', 'O', 'D', 'O', 0})
	write(".hidden/skip.txt", []byte("TODO hidden"))
	slices.SortFunc(files, func(a, b demoFile) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range files {
		data, _ := os.ReadFile(filepath.Join(dir, f.Path))
		if strings.Contains(string(data), "TODO") && f.Path != "blob.bin" {
			return dir, files, f.Path
		}
	}
	t.Fatal("no TODO in the tree")
	return
}

// TestDemo runs the demo and checks that every number it prints adds up
// against the bytes it actually handled.
func TestDemo(t *testing.T) {
	t.Parallel()
	dir, files, firstTODO := demoTree(t)
	var out bytes.Buffer
	records, err := runDemo(&out, dir)
	if err != nil {
		t.Fatal(err)
	}
	printed := out.String()
	if !strings.Contains(printed, "SCRIPTED") {
		t.Error("the demo does not say it is scripted")
	}

	// Each turn's transcript, as printed, has the size the table gives.
	turns := parseTurns(t, printed)
	if len(turns) != len(records) || len(records) != 6 {
		t.Fatalf("printed %d turns, recorded %d, want 6", len(turns), len(records))
	}
	for i, tr := range turns {
		if len(tr.transcript) != records[i].Transcript || tr.transcriptBytes != records[i].Transcript || tr.resultBytes != records[i].Result {
			t.Errorf("turn %d: transcript printed %d bytes, says %d, table %d; result says %d, table %d",
				i+1, len(tr.transcript), tr.transcriptBytes, records[i].Transcript, tr.resultBytes, records[i].Result)
		}
	}

	// The table's rows are the records and its last row their sums.
	rows := parseTable(t, printed)
	var sum [4]int
	for i, r := range records {
		want := [4]int{r.ArgsSent, r.ArgsResolved, r.Result, r.Transcript}
		if rows[i] != want {
			t.Errorf("table row %d = %v, want %v", i+1, rows[i], want)
		}
		for k := range sum {
			sum[k] += want[k]
		}
	}
	if rows[len(records)] != sum {
		t.Errorf("table totals = %v, want the sums %v", rows[len(records)], sum)
	}
	if want := fmt.Sprintf("The transcript received %d bytes where the full results would have cost %d", sum[3], sum[2]); !strings.Contains(printed, want) {
		t.Errorf("summary line missing: %q", want)
	}

	// The full results are the real bytes.
	listing, _ := json.Marshal(files)
	if records[0].Result != len(listing) {
		t.Errorf("list_files result: %d bytes, want %d (%d files)", records[0].Result, len(listing), len(files))
	}
	// The query kept the Go files: its stored result is their listing.
	var goFiles []demoFile
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".go") {
			goFiles = append(goFiles, f)
		}
	}
	goListing, _ := json.Marshal(goFiles)
	if !records[1].Called || records[1].Result != len(goListing) || !strings.Contains(turns[1].transcript, fmt.Sprintf("r2 = array(len=%d,", len(goFiles))) {
		t.Errorf("query_value: %+v, transcript %q; want r2, the %d Go files (%d bytes)", records[1], turns[1].transcript, len(goFiles), len(goListing))
	}
	if !strings.Contains(turns[3].resolved, `{"path":"`+firstTODO+`"}`) {
		t.Errorf("turn 4 resolved to %q, want the first file with a TODO, %s", turns[3].resolved, firstTODO)
	}
	info, err := os.Stat(filepath.Join(dir, firstTODO))
	if err != nil {
		t.Fatal(err)
	}
	if records[3].Result != int(info.Size()) {
		t.Errorf("read_file result: %d bytes, want the file's %d", records[3].Result, info.Size())
	}
	// The query's result passed by reference: the tool received far more
	// than the model wrote.
	if records[2].ArgsResolved < len(goListing) || records[2].ArgsSent > 40 {
		t.Errorf("search_text: model sent %d bytes, tool received %d; want the %d-byte Go listing substituted",
			records[2].ArgsSent, records[2].ArgsResolved, len(goListing))
	}
	// Large results were previewed, and the transcript saved most bytes.
	for _, i := range []int{0, 1, 2} {
		if records[i].Transcript >= records[i].Result/4 {
			t.Errorf("turn %d: transcript %d bytes for a %d-byte result", i+1, records[i].Transcript, records[i].Result)
		}
	}
	if records[4].Transcript > 1024 || !records[4].Called || !strings.Contains(strings.SplitN(turns[4].transcript, "\n", 2)[0], "TODO(demo)") {
		t.Errorf("read_value page: %+v %q, want a page of at most 1024 bytes from the first TODO", records[4], turns[4].transcript)
	}
	if records[5].Called || !strings.Contains(turns[5].transcript, "$r1.999999.path") {
		t.Errorf("the mistaken call ran or its error does not name the reference: %q", turns[5].transcript)
	}
}

type printedTurn struct {
	resolved        string
	transcript      string
	transcriptBytes int
	resultBytes     int
}

var transcriptLine = regexp.MustCompile(`^transcript    (\d+) bytes \(the full result: (\d+) bytes\)$`)

// parseTurns reads back, from the demo's output, each turn's resolved
// arguments and transcript block.
func parseTurns(t *testing.T, out string) []printedTurn {
	t.Helper()
	var turns []printedTurn
	var cur *printedTurn
	var block []string
	flush := func() {
		if cur != nil {
			cur.transcript = strings.Join(block, "\n")
			turns = append(turns, *cur)
		}
		cur, block = nil, nil
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "── "):
			flush()
		case strings.HasPrefix(line, "tool receives "):
			cur = &printedTurn{resolved: strings.TrimPrefix(line, "tool receives ")}
		case transcriptLine.MatchString(line):
			if cur == nil {
				cur = &printedTurn{}
			}
			m := transcriptLine.FindStringSubmatch(line)
			cur.transcriptBytes, _ = strconv.Atoi(m[1])
			cur.resultBytes, _ = strconv.Atoi(m[2])
		case strings.HasPrefix(line, "  │ "):
			block = append(block, strings.TrimPrefix(line, "  │ "))
		}
	}
	flush()
	return turns
}

// parseTable reads the summary table's numbers: one row per turn, then the
// totals.
func parseTable(t *testing.T, out string) [][4]int {
	t.Helper()
	_, table, ok := strings.Cut(out, "── summary (bytes)\n")
	if !ok {
		t.Fatal("no summary table")
	}
	var rows [][4]int
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 {
			break
		}
		var row [4]int
		for k := range row {
			n, err := strconv.Atoi(f[len(f)-4+k])
			if err != nil {
				t.Fatalf("table line %q: %v", line, err)
			}
			row[k] = n
		}
		rows = append(rows, row)
	}
	if len(rows) < 2 {
		t.Fatalf("table too short: %q", table)
	}
	return rows
}

// TestDemoDefaultDir runs the demo as a person would, with no argument,
// on the Go installation's sources.
func TestDemoDefaultDir(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("reads the whole Go source tree")
	}
	var out, errs bytes.Buffer
	if code := run([]string{"demo"}, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	rows := parseTable(t, out.String())
	if total := rows[len(rows)-1]; total[3] == 0 || total[3] > total[2]/10 {
		t.Errorf("on GOROOT/src the transcript took %d bytes of %d", total[3], total[2])
	}
}
