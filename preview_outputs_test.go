package values

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The outputs of real programs under testdata/outputs (each with the
// command that made it beside it) are the previews' test bed: their
// previews are kept in testdata/outputs.golden, and the shape questions a
// model asks before its next call are answered from the data itself and
// looked for in each preview.

func readOutput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "outputs", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func previewOutput(t *testing.T, name string) string {
	t.Helper()
	s := New()
	v, _ := s.Get(s.PutOutput(readOutput(t, name)))
	return RenderPreview("r1", v)
}

func TestPreviewCapturedOutputs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "outputs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, ".cmd") || strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".py") {
			continue
		}
		p := previewOutput(t, name)
		if len(p) > DefaultMaxPreview {
			t.Errorf("%s: preview of %d bytes", name, len(p))
		}
		fmt.Fprintf(&got, "# %s\n%s\n\n", name, p)
	}
	path := filepath.Join("testdata", "outputs.golden")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("previews differ from %s (go test -run TestPreviewCapturedOutputs -update . rewrites it):\n%s", path, got.String())
	}
}

// shapeQuestion is one thing a model needs to know before its next call,
// and the text that answers it.
type shapeQuestion struct {
	what, answer string
}

// shapeQuestions asks, of each captured output, how many items it holds,
// what its first and last are, which fields its items have (all of them,
// and a value beyond the first two), how big it is, what is one level down
// and inside an envelope, and for tables the header and column count; the
// answers are computed from the data.
func shapeQuestions(t *testing.T) map[string][]shapeQuestion {
	qs := map[string][]shapeQuestion{}
	add := func(file, what, answer string) { qs[file] = append(qs[file], shapeQuestion{what, answer}) }

	// go list -json, as an array and as the stream go list prints.
	var pkgs []map[string]any
	if err := json.Unmarshal(readOutput(t, "go-list-json-array.json"), &pkgs); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"go-list-json-array.json", "go-list-json.json"} {
		add(file, "count", fmt.Sprintf("(len=%d,", len(pkgs)))
		add(file, "size", "bytes="+size(len(readOutput(t, file))))
		add(file, "first item", fmt.Sprintf("ImportPath: %q", pkgs[0]["ImportPath"]))
		add(file, "last item", fmt.Sprintf("ImportPath: %q", pkgs[len(pkgs)-1]["ImportPath"]))
		add(file, "a field beyond the first two", fmt.Sprintf("Name: %q", pkgs[0]["Name"]))
		for _, k := range unionKeys(pkgs) {
			add(file, "field "+k, k)
		}
	}

	// npm view: wide documents; what is one level down.
	for _, file := range []string{"npm-view-express.json", "npm-view-react.json"} {
		var doc map[string]any
		if err := json.Unmarshal(readOutput(t, file), &doc); err != nil {
			t.Fatal(err)
		}
		add(file, "key count", fmt.Sprintf("json(keys=%d,", len(doc)))
		add(file, "versions", fmt.Sprintf("versions: array(len=%d,", len(doc["versions"].([]any))))
		add(file, "time, one level down", fmt.Sprintf("time: json(keys=%d,", len(doc["time"].(map[string]any))))
		add(file, "a name", fmt.Sprintf("name: %q", doc["name"]))
		add(file, "size", "bytes="+size(len(readOutput(t, file))))
	}

	// Tables: header, columns, rows, first and last row.
	for _, tc := range []struct{ file, format string }{{"ps-aux.txt", "aligned"}, {"df-h.txt", "aligned"}, {"df-P.txt", "aligned"}} {
		lines := strings.Split(strings.TrimRight(string(readOutput(t, tc.file)), "\n"), "\n")
		header := strings.Fields(lines[0])
		if tc.file != "ps-aux.txt" { // df's last column is "Mounted on"
			header = append(header[:len(header)-2], "Mounted on")
		}
		add(tc.file, "rows", fmt.Sprintf("table(rows=%d,", len(lines)-1))
		add(tc.file, "columns", fmt.Sprintf("cols=%d,", len(header)))
		add(tc.file, "header", "header=["+strings.Join(header, ", ")+"]")
		add(tc.file, "first row", strings.Fields(lines[1])[0])
		add(tc.file, "last row", strings.Fields(lines[len(lines)-1])[len(strings.Fields(lines[len(lines)-1]))-1])
	}
	for _, file := range []string{"sqlite3-csv.csv", "sqlite3-csv-large.csv"} {
		recs, err := csv.NewReader(bytes.NewReader(readOutput(t, file))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		add(file, "rows", fmt.Sprintf("table(rows=%d,", len(recs)-1))
		add(file, "columns", fmt.Sprintf("cols=%d,", len(recs[0])))
		add(file, "header", "header=["+strings.Join(recs[0], ", ")+"]")
		add(file, "format", "format=csv")
		add(file, "first row", `["`+recs[1][0]+",")
		add(file, "first row's second field", recs[1][1])
		add(file, "last row", `"`+recs[len(recs)-1][0]+",")
		add(file, "last row's second field", recs[len(recs)-1][1])
	}

	// go test -json streams: records, their fields, the last one.
	for _, file := range []string{"go-test-json.ndjson", "go-test-json-subtests.ndjson", "go-test-json-timeout-fail.ndjson"} {
		var recs []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(readOutput(t, file))), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		add(file, "records", fmt.Sprintf("json-stream(len=%d,", len(recs)))
		add(file, "first record", fmt.Sprintf("Action: %q", recs[0]["Action"]))
		add(file, "last record", fmt.Sprintf("Action: %q", recs[len(recs)-1]["Action"]))
		for _, k := range unionKeys(recs) {
			add(file, "field "+k, k)
		}
	}

	// MCP results: what is inside the envelope.
	var tree struct {
		Content []struct{ Text string }
	}
	json.Unmarshal(readOutput(t, "mcp-directory-tree-result.json"), &tree)
	var entries []map[string]any
	if err := json.Unmarshal([]byte(tree.Content[0].Text), &entries); err != nil {
		t.Fatal(err)
	}
	inner := tree.Content[0].Text
	add("mcp-directory-tree-result.json", "entries in the text, its size and lines", fmt.Sprintf("json-text(len=%s, lines=%d, array(len=%d,", size(len(inner)), strings.Count(inner, "\n")+1, len(entries)))
	add("mcp-directory-tree-result.json", "first entry", fmt.Sprintf("name: %q", entries[0]["name"]))
	for _, k := range unionKeys(entries) {
		add("mcp-directory-tree-result.json", "entry field "+k, k)
	}
	var file struct {
		Content []struct{ Text string }
	}
	json.Unmarshal(readOutput(t, "mcp-read-file-result.json"), &file)
	text := file.Content[0].Text
	add("mcp-read-file-result.json", "the file's size and lines", fmt.Sprintf("text(len=%s, lines=%d", size(len(text)), strings.Count(text, "\n")))
	add("mcp-read-file-result.json", "its first line", strings.SplitN(text, "\n", 2)[0])
	var tools struct{ Tools []map[string]any }
	json.Unmarshal(readOutput(t, "mcp-tools-list-result.json"), &tools)
	add("mcp-tools-list-result.json", "tools", fmt.Sprintf("tools: array(len=%d,", len(tools.Tools)))
	add("mcp-tools-list-result.json", "first tool", fmt.Sprintf("name: %q", tools.Tools[0]["name"]))
	for _, k := range unionKeys(tools.Tools) {
		add("mcp-tools-list-result.json", "tool field "+k, k)
	}

	// Binary data in JSON: the decoded size and type of an MCP image block
	// inside an item, and of a resource's blob that dominates its result.
	var image struct {
		Content []struct{ Type, Data, MimeType string }
	}
	if err := json.Unmarshal(readOutput(t, "mcp-tiny-image-result.json"), &image); err != nil {
		t.Fatal(err)
	}
	for _, c := range image.Content {
		if c.Type == "image" {
			png, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				t.Fatal(err)
			}
			add("mcp-tiny-image-result.json", "the image's size and type", fmt.Sprintf("base64(bytes=%s, type=%s)", size(len(png)), c.MimeType))
		}
	}
	var gz struct {
		Content []struct {
			Resource struct{ MimeType, Blob string }
		}
	}
	if err := json.Unmarshal(readOutput(t, "mcp-gzip-resource-result.json"), &gz); err != nil {
		t.Fatal(err)
	}
	blob, err := base64.StdEncoding.DecodeString(gz.Content[0].Resource.Blob)
	if err != nil {
		t.Fatal(err)
	}
	add("mcp-gzip-resource-result.json", "the blob's size and type", fmt.Sprintf("blob: base64(bytes=%s, type=%s)", size(len(blob)), gz.Content[0].Resource.MimeType))

	// Item schemas: which values each key takes, over every item, as the
	// preview says them (a set of up to 8 short strings, the range of the
	// numbers, the booleans, null), for the keys that take few strings or
	// numbers; and the identifying field of the first and last item.
	for _, tc := range []struct{ file, id string }{
		{"go-test-json.ndjson", ""}, {"go-test-json-subtests.ndjson", ""}, {"go-test-json-timeout-fail.ndjson", ""},
		{"dpkg-query-json.ndjson", "package"}, {"sqlite3-json.json", "id"}, {"go-list-json.json", "ImportPath"},
		{"mcp-directory-tree-text.json", "name"},
	} {
		items := rawItems(t, readOutput(t, tc.file))
		for _, k := range unionRawKeys(items) {
			if want, ok := summaryAnswer(items, k); ok {
				add(tc.file, "values of "+k, want)
			}
		}
		if tc.id != "" {
			add(tc.file, "first item's "+tc.id, tc.id+": "+string(items[0][tc.id]))
			add(tc.file, "last item's "+tc.id, tc.id+": "+string(items[len(items)-1][tc.id]))
		}
	}

	// Logs: size, lines, first and last line.
	for _, file := range []string{"dpkg.log", "go-build-x.log"} {
		data := string(readOutput(t, file))
		lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
		add(file, "size and lines", fmt.Sprintf("text(len=%s, lines=%d", size(len(data)), len(lines)))
		add(file, "first line", lines[0][:min(len(lines[0]), 40)])
		add(file, "last line", lines[len(lines)-1][max(0, len(lines[len(lines)-1])-40):])
	}
	return qs
}

// unionKeys returns the keys of the objects in first-seen order.
func unionKeys(objs []map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, o := range objs {
		ks := make([]string, 0, len(o))
		for k := range o {
			ks = append(ks, k)
		}
		sort.Strings(ks) // map order is random; the preview's is first seen, which the test does not assert
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// Every shape question about the captured outputs is answered by the
// preview alone.
func TestShapeQuestionsAnswered(t *testing.T) {
	answered, asked := 0, 0
	for file, qs := range shapeQuestions(t) {
		p := previewOutput(t, file)
		for _, q := range qs {
			asked++
			if strings.Contains(p, q.answer) {
				answered++
				continue
			}
			t.Errorf("%s: %s: %q is not in the preview\n%s", file, q.what, q.answer, p)
		}
	}
	t.Logf("%d of %d shape questions answered by the preview alone", answered, asked)
}

// Every captured output small enough to be shown whole says on its line
// what it is: its size and the count that fits its kind (keys, items,
// lines), and for an envelope the reference, size and lines of its text.
// Every captured text, whole or previewed, is offered no field or index.
func TestWholeOutputsSayWhatTheyAre(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "outputs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, ".cmd") || strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".py") {
			continue
		}
		data := readOutput(t, name)
		s := New()
		o := s.Observe(data)
		v, _ := s.Get(o.Handle)
		line := o.Text[strings.LastIndex(o.Text, "\n[")+1:]
		if v.Kind() == KindText && strings.Contains(line, "<field>") || v.Kind() == KindText && v.get().index() == nil && strings.Contains(line, `"$r1.0"`) {
			t.Errorf("%s: text offered a field or an item: %s", name, line)
		}
		if o.Previewed {
			continue
		}
		var want string
		switch v.Kind() {
		case KindText:
			want = fmt.Sprintf("(text, %s, %d lines", size(len(data)), countLines(string(data)))
		case KindObject:
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			want = fmt.Sprintf("(object, %d keys, %s", len(m), size(len(bytes.TrimSpace(data))))
			var env struct{ Content []struct{ Text string } }
			if json.Unmarshal(data, &env) == nil && len(env.Content) == 1 && len(env.Content[0].Text) > literalBudget {
				text := env.Content[0].Text
				want += fmt.Sprintf(`; "$r1.content.0.text" is text of %s, %d lines)`, size(len(text)), countLines(text))
			}
		case KindArray:
			var a []json.RawMessage
			if err := json.Unmarshal(data, &a); err != nil {
				t.Fatal(err)
			}
			want = fmt.Sprintf("(array, %d items, %s", len(a), size(len(bytes.TrimSpace(data))))
		}
		checked++
		if !strings.HasPrefix(line, "[stored as r1 "+want) {
			t.Errorf("%s: %q, want it to begin [stored as r1 %s", name, line, want)
		}
	}
	if checked < 5 {
		t.Errorf("only %d captured outputs are shown whole", checked)
	}
}

// countLines counts lines as Value.Lines does: newlines, and one more for
// a last line without one.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// rawItems returns the items of a JSON array or stream of objects, each
// value as its bytes.
func rawItems(t *testing.T, data []byte) []map[string]json.RawMessage {
	t.Helper()
	var items []map[string]json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		if err := json.Unmarshal(data, &items); err != nil {
			t.Fatal(err)
		}
		return items
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var m map[string]json.RawMessage
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		items = append(items, m)
	}
	return items
}

// unionRawKeys is unionKeys of raw items.
func unionRawKeys(items []map[string]json.RawMessage) []string {
	objs := make([]map[string]any, len(items))
	for i, it := range items {
		objs[i] = map[string]any{}
		for k := range it {
			objs[i][k] = nil
		}
	}
	return unionKeys(objs)
}

// summaryAnswer computes from the items what the preview's item schema
// says of the values of key ("Action: "start"|"pass"", "size?: number
// 1..9|null"), and reports whether it tells more than kinds: a set of
// strings, a range, a boolean or null.
func summaryAnswer(items []map[string]json.RawMessage, key string) (string, bool) {
	var (
		strs           []string
		open, hasStr   bool
		hasNum         bool
		minF, maxF     float64
		minRaw, maxRaw string
		bools          uint8
		null, arr, obj bool
		count          int
	)
	for _, it := range items {
		raw, ok := it[key]
		if !ok {
			continue
		}
		count++
		switch v := string(raw); v[0] {
		case '"':
			hasStr = true
			switch {
			case open:
			case len(v) > 34 || strings.Contains(v, `\`):
				open = true
			case slices.Contains(strs, v):
			case len(strs) == 8:
				open = true
			default:
				strs = append(strs, v)
			}
		case 't':
			bools |= 2
		case 'f':
			bools |= 1
		case 'n':
			null = true
		case '[':
			arr = true
		case '{':
			obj = true
		default:
			f, _ := strconv.ParseFloat(v, 64)
			if !hasNum || f < minF {
				minF, minRaw = f, v
			}
			if !hasNum || f > maxF {
				maxF, maxRaw = f, v
			}
			hasNum = true
		}
	}
	var parts []string
	told := false
	if hasStr {
		if open {
			parts = append(parts, "text")
		} else {
			parts, told = append(parts, strings.Join(strs, "|")), true
		}
	}
	if hasNum {
		if minRaw == maxRaw {
			parts = append(parts, minRaw)
		} else {
			parts = append(parts, "number "+minRaw+".."+maxRaw)
		}
		told = true
	}
	if bools != 0 {
		parts, told = append(parts, [...]string{"", "false", "true", "bool"}[bools]), true
	}
	if null {
		parts, told = append(parts, "null"), true
	}
	if arr {
		parts = append(parts, "array")
	}
	if obj {
		parts = append(parts, "object")
	}
	name := key
	if count < len(items) {
		name += "?"
	}
	return name + ": " + strings.Join(parts, "|"), told
}
