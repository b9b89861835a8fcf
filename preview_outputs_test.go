package values

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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
		if strings.HasSuffix(name, ".cmd") || name == "README.md" || strings.HasSuffix(name, ".py") {
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

	// Diffs: how many files, which (the first and the last), lines added
	// and removed, hunks; counted here line by line, as grep would.
	for _, file := range []string{"git-diff.diff", "diff-ru-modules.diff"} {
		var names []string
		added, removed, hunks := 0, 0, 0
		for _, l := range strings.Split(string(readOutput(t, file)), "\n") {
			switch {
			case strings.HasPrefix(l, "+++ "):
				name, _, _ := strings.Cut(strings.TrimPrefix(l[4:], "b/"), "\t")
				names = append(names, name)
			case strings.HasPrefix(l, "Only in "):
				names = append(names, l[len("Only in "):])
			case strings.HasPrefix(l, "--- "):
			case strings.HasPrefix(l, "@@ "):
				hunks++
			case strings.HasPrefix(l, "+"):
				added++
			case strings.HasPrefix(l, "-"):
				removed++
			}
		}
		add(file, "files", fmt.Sprintf("diff(files=%d,", len(names)))
		add(file, "lines added and removed", fmt.Sprintf("+%d -%d", added, removed))
		add(file, "hunks", fmt.Sprintf("hunks=%d", hunks))
		add(file, "first file", "["+names[0]+" ")
		add(file, "last file", names[len(names)-1])
	}

	yamlQuestions(t, add)
	xmlQuestions(t, add)
	htmlQuestions(t, add)
	markdownQuestions(t, add)
	tableQuestions(t, add)

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

// yamlQuestions asks of each captured YAML file, with a YAML parser's
// answers: how many top-level keys or items, which keys, and how many keys
// or items each mapping or sequence value holds.
func yamlQuestions(t *testing.T, add func(file, what, answer string)) {
	for _, file := range []string{"gcloud-backendservice-schema.yaml", "gcloud-speech-commands.yaml", "gcloud-ops-agent-policy.yaml", "go-simdgen-converts.yaml", "perl-cpan-distroprefs.yml"} {
		var doc yaml.Node
		if err := yaml.Unmarshal(readOutput(t, file), &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		top := doc.Content[0]
		if top.Kind == yaml.SequenceNode {
			add(file, "items", fmt.Sprintf("yaml(items=%d,", len(top.Content)))
			keys := map[string]bool{}
			for _, item := range top.Content {
				for i := 0; item.Kind == yaml.MappingNode && i < len(item.Content); i += 2 {
					keys[item.Content[i].Value] = true
				}
			}
			for k := range keys {
				add(file, "item key "+k, k)
			}
			add(file, "first item", top.Content[0].Content[1].Value)
			add(file, "last item", top.Content[len(top.Content)-1].Content[1].Value)
			continue
		}
		add(file, "keys", fmt.Sprintf("yaml(keys=%d,", len(top.Content)/2))
		for i := 0; i < len(top.Content); i += 2 {
			k, v := top.Content[i].Value, top.Content[i+1]
			switch v.Kind {
			case yaml.MappingNode:
				add(file, "key "+k, fmt.Sprintf("%s: map(keys=%d,", k, len(v.Content)/2))
			case yaml.SequenceNode:
				add(file, "key "+k, fmt.Sprintf("%s: list(len=%d,", k, len(v.Content)))
			default:
				add(file, "key "+k, k+": ")
			}
		}
	}
}

// xmlQuestions asks of each captured XML file, with encoding/xml's answers:
// the root element, how many children it has of each name, and the first
// and last child's identifying attribute.
func xmlQuestions(t *testing.T, add func(file, what, answer string)) {
	for _, file := range []string{"iso-3166-1.xml", "postgresql-dependencies.svg"} {
		dec := xml.NewDecoder(bytes.NewReader(readOutput(t, file)))
		depth, children := 0, 0
		var root string
		var first, last xml.StartElement
		names := map[string]int{}
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch e := tok.(type) {
			case xml.StartElement:
				if depth == 0 {
					root = e.Name.Local
				} else if depth == 1 {
					children++
					names[e.Name.Local]++
					if children == 1 {
						first = e
					}
					last = e
				}
				depth++
			case xml.EndElement:
				depth--
			}
		}
		add(file, "root", "root=<"+root)
		add(file, "children", fmt.Sprintf("children=%d ", children))
		for n, c := range names {
			add(file, "children named "+n, fmt.Sprintf("%s: %d", n, c))
		}
		for what, e := range map[string]xml.StartElement{"first child": first, "last child": last} {
			for _, a := range e.Attr {
				if a.Name.Local == "name" || a.Name.Local == "id" {
					add(file, what, fmt.Sprintf("%s=%q", a.Name.Local, a.Value))
				}
			}
		}
	}
}

// htmlQuestions asks of each captured HTML file, by regular expressions
// over its text: its title, its headings, how many tables and links.
func htmlQuestions(t *testing.T, add func(file, what, answer string)) {
	title := regexp.MustCompile(`(?s)<title>(.*?)</title>`)
	heading := regexp.MustCompile(`(?s)<h([1-6])[^>]*>(.*?)</h[1-6]>`)
	tag := regexp.MustCompile(`<[^>]*>`)
	for _, file := range []string{"groff-sqlite3.html", "groff-tar.html"} {
		data := string(readOutput(t, file))
		add(file, "title", fmt.Sprintf("title=%q", strings.TrimSpace(title.FindStringSubmatch(data)[1])))
		hs := heading.FindAllStringSubmatch(data, -1)
		add(file, "headings", fmt.Sprintf("headings=%d ", len(hs)))
		for _, h := range hs {
			level := int(h[1][0] - '0')
			text := strings.TrimSpace(tag.ReplaceAllString(h[2], ""))
			add(file, "heading "+text, fmt.Sprintf("%q", strings.Repeat("#", level)+" "+text))
		}
		add(file, "tables", fmt.Sprintf("tables=%d", strings.Count(data, "<table")))
		add(file, "links", fmt.Sprintf("links=%d", strings.Count(data, "<a href=")))
	}
}

// markdownQuestions asks of each captured Markdown document its headings
// (ATX and underlined, outside code blocks), its tables and code blocks,
// found by regular expressions line by line.
func markdownQuestions(t *testing.T, add func(file, what, answer string)) {
	atx := regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*$`)
	under := regexp.MustCompile(`^(=+|-+)\s*$`)
	delim := regexp.MustCompile(`^\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*\|?$`)
	for _, file := range []string{"gjson-readme.md", "go-sdk-readme.md"} {
		lines := strings.Split(string(readOutput(t, file)), "\n")
		var heads []string
		code, tables := 0, 0
		inCode := false
		for i, l := range lines {
			if strings.HasPrefix(l, "```") {
				if !inCode {
					code++
				}
				inCode = !inCode
				continue
			}
			switch {
			case inCode:
			case atx.MatchString(l):
				m := atx.FindStringSubmatch(l)
				heads = append(heads, m[1]+" "+m[2])
			case i > 1 && under.MatchString(l) && strings.TrimSpace(lines[i-1]) != "" && strings.TrimSpace(lines[i-2]) == "":
				level := "#"
				if l[0] == '-' {
					level = "##"
				}
				heads = append(heads, level+" "+strings.TrimSpace(lines[i-1]))
			case delim.MatchString(l) && strings.Contains(lines[i-1], "|"):
				tables++
			}
		}
		add(file, "headings", fmt.Sprintf("markdown(len=%s, lines=%d, headings=%d ", size(len(readOutput(t, file))), len(lines)-1, len(heads)))
		for _, h := range heads {
			add(file, "heading "+h, fmt.Sprintf("%q", h))
		}
		add(file, "tables", fmt.Sprintf("tables=%d", tables))
		add(file, "code blocks", fmt.Sprintf("code=%d", code))
	}
}

// tableQuestions asks of the captured tables that previews used to misread
// their rows (rule lines are not rows), columns and header (none for a
// table without one), first and last rows, and what a column's cells take
// (the set of its values, the range of its numbers), all computed here by
// splitting lines at white space or at the separator; and of a Debian
// changelog, that it is not taken for a table.
func tableQuestions(t *testing.T, add func(file, what, answer string)) {
	lines := func(file string, skip func(string) bool) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimRight(string(readOutput(t, file)), "\n"), "\n") {
			if !skip(l) {
				out = append(out, l)
			}
		}
		return out
	}
	none := func(string) bool { return false }
	rule := func(l string) bool { return strings.Trim(l, "-| ") == "" }
	set := func(vals []string) string { // as a column summary writes a set
		var seen []string
		for _, v := range vals {
			if !slices.Contains(seen, v) {
				seen = append(seen, v)
			}
		}
		return `"` + strings.Join(seen, `"|"`) + `"`
	}
	rng := func(vals []string) string {
		lo, hi := vals[0], vals[0]
		for _, v := range vals {
			f, _ := strconv.ParseFloat(v, 64)
			if l, _ := strconv.ParseFloat(lo, 64); f < l {
				lo = v
			}
			if h, _ := strconv.ParseFloat(hi, 64); f > h {
				hi = v
			}
		}
		return "number " + lo + ".." + hi
	}
	column := func(rows []string, j int, split func(string) []string) []string {
		var vals []string
		for _, r := range rows {
			if f := split(r); j < len(f) && f[j] != "" {
				vals = append(vals, f[j])
			}
		}
		return vals
	}

	// openssl ciphers -v: no header; columns numbered; the protocols.
	ls := lines("openssl-ciphers-v.txt", none)
	add("openssl-ciphers-v.txt", "rows", fmt.Sprintf("table(rows=%d, cols=%d,", len(ls), len(strings.Fields(ls[0]))))
	add("openssl-ciphers-v.txt", "no header", "header=none")
	add("openssl-ciphers-v.txt", "first row", strings.Fields(ls[0])[0])
	add("openssl-ciphers-v.txt", "last row", strings.Fields(ls[len(ls)-1])[0])
	add("openssl-ciphers-v.txt", "protocols", "2: "+set(column(ls, 1, strings.Fields)))

	// pip list -v and sqlite3 -column: a header, a rule line, rows.
	for _, file := range []string{"pip-list-v.txt", "sqlite3-column.txt"} {
		ls := lines(file, rule)
		add(file, "rows", fmt.Sprintf("table(rows=%d, cols=%d,", len(ls)-1, len(strings.Fields(ls[0]))))
		add(file, "header", "header=["+strings.Join(strings.Fields(ls[0]), ", ")+"]")
		add(file, "first row", ls[1])
		add(file, "last row", ls[len(ls)-1])
	}
	cells := func(l string) []string {
		f := strings.Split(strings.Trim(l, "|"), "|")
		for k := range f {
			f[k] = strings.TrimSpace(f[k])
		}
		return f
	}
	for _, file := range []string{"sqlite3-column.txt", "sqlite3-markdown.md"} {
		split := strings.Fields
		if strings.HasSuffix(file, ".md") {
			split = cells
		}
		ls := lines(file, rule)
		add(file, "rows", fmt.Sprintf("table(rows=%d,", len(ls)-1))
		add(file, "roles", "role: "+set(column(ls[1:], 2, split)))
		add(file, "ids", "id: "+rng(column(ls[1:], 0, split)))
	}
	md := lines("sqlite3-markdown.md", rule)
	add("sqlite3-markdown.md", "format and header", "format=markdown, header=["+strings.Join(cells(md[0]), ", ")+"]")

	// A busy ps aux: RSS and VSZ overflow their columns.
	ps := lines("ps-aux-busy.txt", none)
	add("ps-aux-busy.txt", "rows", fmt.Sprintf("table(rows=%d, cols=11,", len(ps)-1))
	add("ps-aux-busy.txt", "header", "header=["+strings.Join(strings.Fields(ps[0]), ", ")+"]")
	add("ps-aux-busy.txt", "RSS", "RSS: "+rng(column(ps[1:], 5, strings.Fields)))
	add("ps-aux-busy.txt", "VSZ", "VSZ: "+rng(column(ps[1:], 4, strings.Fields)))
	add("ps-aux-busy.txt", "STAT", "STAT: "+set(column(ps[1:], 7, strings.Fields)))

	// zone1970.tab: a TSV after a comment block that names its columns.
	zs := lines("zone1970.tab", func(l string) bool { return strings.HasPrefix(l, "#") })
	add("zone1970.tab", "rows", fmt.Sprintf("table(rows=%d, cols=4, ", len(zs)))
	add("zone1970.tab", "header", "header=[codes, coordinates, TZ, comments]")
	add("zone1970.tab", "first row", strings.ReplaceAll(zs[0], "\t", `\t`))
	add("zone1970.tab", "last row", strings.ReplaceAll(zs[len(zs)-1], "\t", `\t`))

	for _, file := range []string{"git-changelog-debian.txt", "openssl-changelog-debian.txt"} {
		add(file, "not a table", "text(len=")
	}
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
		if strings.HasSuffix(name, ".cmd") || name == "README.md" || strings.HasSuffix(name, ".py") {
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
		if f := v.get().formatIndex(); f != nil {
			// A text in a format says which, and its one count.
			kind := map[string]string{"*values.table": "; a table of ", "*values.diffDoc": "; a diff of ", "*values.yamlDoc": "; YAML of ",
				"*values.xmlDoc": "; XML, root <", "*values.htmlDoc": "; HTML]", "*values.mdDoc": "; Markdown]"}[fmt.Sprintf("%T", f)]
			if kind == "" || !strings.Contains(line, kind) {
				t.Errorf("%s: %q does not say it is a %T", name, line, f)
			}
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
