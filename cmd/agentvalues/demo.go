package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unicode/utf8"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
)

// demoCommand runs the scripted agent loop on DIR (default: GOROOT/src).
func demoCommand(args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("demo", stderr)
	if err := parseFlags(flags, args, stdout, stderr); err != nil {
		return err
	}
	args = flags.Args()
	if len(args) > 1 {
		return fmt.Errorf("%w: demo takes at most one DIR", errUsage)
	}
	dir := filepath.Join(runtime.GOROOT(), "src")
	if len(args) == 1 {
		dir = args[0]
	}
	_, err := runDemo(stdout, dir)
	return err
}

// Limits of the demo's tools. They keep the demo quick, and its memory
// bounded, on any directory: search_text skips a file past its limit, and
// read_file refuses one with an error that gives the file's size and the cap.
const (
	demoMaxFileSize = 8 << 20  // search_text skips larger files
	demoMaxReadFile = 64 << 20 // read_file refuses larger files; 20 times the largest file in GOROOT/src
	demoMatchText   = 160      // bytes of a matching line kept in a search result
	demoArgsShown   = 240      // bytes of resolved arguments printed per turn
)

// A demoTool is a real tool over the files under one directory.
type demoTool struct {
	schema *values.Schema
	run    func(args []byte) ([]byte, error)
}

// A demoTurn is one step of the script: the call exactly as the model sends
// it, and a line saying why the (scripted) model makes it.
type demoTurn struct {
	why  string
	tool string
	args string
}

// A demoRecord is what one turn cost.
type demoRecord struct {
	Tool         string
	ArgsSent     int  // bytes of arguments the model wrote
	ArgsResolved int  // bytes of arguments the tool received (0 if not called)
	Result       int  // bytes of the tool's full output (0 if not called)
	Transcript   int  // bytes that entered the transcript
	Called       bool // whether the tool ran
}

// runDemo runs the script against the files under dir, printing each turn
// to w, and returns what each turn cost.
func runDemo(w io.Writer, dir string) ([]demoRecord, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	s := values.New()
	tools, err := demoTools(root)
	if err != nil {
		return nil, err
	}
	rvTool, qvTool := values.ReadValueTool(), values.QueryValueTool()

	fmt.Fprintf(w, "agentvalues demo: a SCRIPTED agent loop. The model's calls are fixed in advance;\n")
	fmt.Fprintf(w, "the tools are real and run on %s.\n", dir)
	fmt.Fprintf(w, "Every result is stored under a handle; a large one enters the transcript as a preview.\n")

	script := []demoTurn{
		{"list every file under the directory", "list_files", `{"dir":"."}`},
		{"keep only the Go files, with a jq query over the listing it never read", qvTool.Name, `{"ref":"r1","jq":"map(select(.path | endswith(\".go\")))"}`},
		{"search them for TODO, passing the query's result by reference", "search_text", `{"files":"$r2","pattern":"TODO"}`},
		{"open the file of the first match, named by reference", "read_file", `{"path":"$r3.0.path"}`},
		{"page that file from the match on, at the offset the search preview showed", rvTool.Name, ""},
		{"a mistake: an index past the end of the listing", "read_file", `{"path":"$r1.999999.path"}`},
	}
	var records []demoRecord
	for i, turn := range script {
		// The scripted model adapts to what it saw, as a model would.
		noMatch := false
		if v, ok := s.Get("r3"); ok && v.Len() == 0 {
			noMatch = true
		}
		switch {
		case i == 3 && noMatch:
			turn.why, turn.args = "no match to open: open the first file of the listing", `{"path":"$r1.0.path"}`
		case i == 4:
			// The offset of the first match is in r3's preview, which shows
			// the fields of its first items.
			offset := []byte("0")
			if !noMatch {
				offset, _, _ = s.Resolve([]byte(`"$r3.0.offset"`))
			}
			turn.args = `{"ref":"r4","offset":` + string(offset) + `,"limit":1024}`
		}
		fmt.Fprintf(w, "\n── turn %d: %s\n", i+1, turn.why)
		fmt.Fprintf(w, "model sends   %s %s\n", turn.tool, turn.args)
		rec := demoRecord{Tool: turn.tool, ArgsSent: len(turn.args)}
		var transcript string
		switch turn.tool {
		case qvTool.Name:
			// query_value's ref is a reference: not resolved.
			fmt.Fprintf(w, "tool receives %s (query_value arguments are never resolved)\n", turn.args)
			obs, err := s.HandleQueryValue(context.Background(), []byte(turn.args))
			if err != nil {
				transcript = "error: " + err.Error()
			} else {
				v, _ := s.Get(obs.Handle)
				rec.Called, rec.ArgsResolved, rec.Result = true, len(turn.args), v.Size()
				transcript = obs.Text
			}
		case rvTool.Name:
			// read_value's ref may itself be reference-shaped: not resolved.
			fmt.Fprintf(w, "tool receives %s (read_value arguments are never resolved)\n", turn.args)
			page, err := s.HandleReadValue([]byte(turn.args))
			if err != nil {
				transcript = "error: " + err.Error()
			} else {
				rec.Called, rec.ArgsResolved, rec.Result = true, len(turn.args), len(page)
				transcript = page
			}
		default:
			t := tools[turn.tool]
			prepared, refs, err := s.Prepare(t.schema, []byte(turn.args))
			if err != nil {
				fmt.Fprintf(w, "tool receives nothing: the call is refused before it runs\n")
				transcript = "error: " + err.Error()
			} else {
				fmt.Fprintf(w, "tool receives %s\n", describeArgs(prepared, refs))
				out, err := t.run(prepared)
				rec.Called, rec.ArgsResolved = true, len(prepared)
				if err != nil {
					transcript = "error: " + err.Error()
				} else {
					rec.Result = len(out)
					transcript = s.Observe(out).Text
				}
			}
		}
		rec.Transcript = len(transcript)
		fmt.Fprintf(w, "transcript    %d bytes (the full result: %d bytes)\n", rec.Transcript, rec.Result)
		for _, line := range strings.Split(transcript, "\n") {
			fmt.Fprintf(w, "  │ %s\n", line)
		}
		records = append(records, rec)
	}
	printSummary(w, records)
	return records, nil
}

// printSummary prints the table of bytes per turn and the totals.
func printSummary(w io.Writer, records []demoRecord) {
	fmt.Fprintf(w, "\n── summary (bytes)\n")
	fmt.Fprintf(w, "%-4s  %-12s  %10s  %13s  %12s  %10s\n", "turn", "tool", "args sent", "args resolved", "full result", "transcript")
	var sent, resolved, full, transcript int
	for i, r := range records {
		fmt.Fprintf(w, "%-4d  %-12s  %10d  %13d  %12d  %10d\n", i+1, r.Tool, r.ArgsSent, r.ArgsResolved, r.Result, r.Transcript)
		sent += r.ArgsSent
		resolved += r.ArgsResolved
		full += r.Result
		transcript += r.Transcript
	}
	fmt.Fprintf(w, "%-4s  %-12s  %10d  %13d  %12d  %10d\n", "all", "", sent, resolved, full, transcript)
	if full > 0 {
		fmt.Fprintf(w, "\nThe transcript received %d bytes where the full results would have cost %d (%.2f%%).\n",
			transcript, full, 100*float64(transcript)/float64(full))
	}
	fmt.Fprintf(w, "The model wrote %d bytes of arguments; the tools received %d.\n", sent, resolved)
}

// describeArgs shows resolved arguments, clipped when they are long.
func describeArgs(args []byte, refs []string) string {
	shown := string(jsontext.AppendClipped(nil, args, demoArgsShown+len(jsontext.Ellipsis)))
	var b strings.Builder
	b.WriteString(shown)
	fmt.Fprintf(&b, " (%d bytes", len(args))
	if len(refs) > 0 {
		fmt.Fprintf(&b, "; substituted: %s", strings.Join(refs, ", "))
	}
	b.WriteString(")")
	return b.String()
}

// demoTools returns the demo's tools, all confined to root.
func demoTools(root *os.Root) (map[string]demoTool, error) {
	defs := map[string]struct {
		schema string
		run    func(*os.Root, []byte) ([]byte, error)
	}{
		"list_files": {`{"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"],"additionalProperties":false}`, listFiles},
		"read_file":  {`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`, readFile},
		"search_text": {`{"type":"object","properties":{
			"files":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
			"pattern":{"type":"string","minLength":1}},"required":["files","pattern"],"additionalProperties":false}`, searchText},
	}
	tools := make(map[string]demoTool, len(defs))
	for name, d := range defs {
		sc, err := values.CompileSchema([]byte(d.schema))
		if err != nil {
			return nil, fmt.Errorf("demo tool %s: %w", name, err)
		}
		run := d.run
		tools[name] = demoTool{schema: sc, run: func(args []byte) ([]byte, error) { return run(root, args) }}
	}
	return tools, nil
}

// A demoFile is one entry of list_files' result.
type demoFile struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// listFiles lists the regular files under dir, recursively, in lexical
// order, skipping hidden directories.
func listFiles(root *os.Root, args []byte) ([]byte, error) {
	var a struct{ Dir string }
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	files := []demoFile{}
	err := fs.WalkDir(root.FS(), filepath.ToSlash(filepath.Clean(a.Dir)), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped
		}
		if d.IsDir() && p != "." && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, demoFile{Path: p, Bytes: info.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(files)
}

// readFile returns a file's bytes. A file larger than demoMaxReadFile is
// not returned: the error names it and gives its size, when Stat knows it,
// and the cap, so that the model can pick another file. A file that Stat
// reports as small but that holds more (it grew, or it is a pipe) is read
// no further than the cap.
func readFile(root *os.Root, args []byte) ([]byte, error) {
	var a struct{ Path string }
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	data, err := readCapped(root, a.Path, demoMaxReadFile)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("read_file: %q is %w; its content was not returned: choose a smaller file", a.Path, err)
	}
	return data, err
}

// A demoMatch is one entry of search_text's result.
type demoMatch struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"` // byte offset of the line in the file
	Line   int    `json:"line"`
	Text   string `json:"text"`
}

// searchText returns every line of the given files that contains pattern,
// in file order. Files that are not UTF-8 text, or larger than
// demoMaxFileSize, are skipped.
func searchText(root *os.Root, args []byte) ([]byte, error) {
	var a struct {
		Files   []demoFile
		Pattern string
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	pattern := []byte(a.Pattern)
	matches := []demoMatch{}
	for _, f := range a.Files {
		data, err := readCapped(root, f.Path, demoMaxFileSize)
		if err != nil || !bytes.Contains(data, pattern) || !utf8.Valid(data) {
			continue
		}
		offset := 0
		for n, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(line, pattern) {
				matches = append(matches, demoMatch{Path: f.Path, Offset: offset, Line: n + 1, Text: clipLine(line)})
			}
			offset += len(line) + 1
		}
	}
	return json.Marshal(matches)
}

// readCapped reads a file of at most limit bytes (see readInput).
func readCapped(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readInput(f, statSize(f), limit)
}

// clipLine trims a matching line to demoMatchText bytes on a rune boundary.
func clipLine(line []byte) string {
	return string(jsontext.AppendClipped(nil, bytes.TrimSpace(line), demoMatchText+len(jsontext.Ellipsis)))
}
