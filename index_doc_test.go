package values

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/testkit"
)

// docCase is a text and what its preview must say: each of want in it,
// none of not.
type docCase struct {
	name string
	text string
	want []string
	not  []string
}

func runDocCases(t *testing.T, cases []docCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			v, _ := s.Get(s.PutOutput([]byte(tc.text)))
			p := RenderPreview("r1", v)
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Errorf("%q is not in the preview:\n%s", w, p)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(p, w) {
					t.Errorf("%q is in the preview:\n%s", w, p)
				}
			}
			if got := string(v.Bytes()); got != tc.text {
				t.Errorf("stored %q, want the text as given", got)
			}
		})
	}
}

func TestDiffPreview(t *testing.T) {
	runDocCases(t, []docCase{{
		name: "git diff",
		text: "diff --git a/a.go b/a.go\nindex 1..2 100644\n--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,3 @@\n x\n-y\n+z\n w\n" +
			"diff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1,2 @@\n+1\n+2\n",
		want: []string{"diff(files=2, +3 -1, hunks=2,", "[a.go +1 -1, b.txt +2 -0]"},
	}, {
		// A removed line that reads "--- " and an added one that reads
		// "+++ " are lines of their hunk, not a file.
		name: "header-like lines in a hunk",
		text: "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- not a file\n-b\n+++ not a file\n+c\n",
		want: []string{"diff(files=1, +2 -2, hunks=1,", "[x +2 -2]"},
	}, {
		name: "deleted file, no newline, counts left out",
		text: "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-only line\n\\ No newline at end of file\n",
		want: []string{"diff(files=1, +0 -1, hunks=1,", "[gone.txt +0 -1]"},
	}, {
		name: "git show: commit, message, rename and binary",
		text: "commit 0123456789abcdef0123456789abcdef01234567\nAuthor: A <a@example.com>\nDate:   Mon Jan 1 00:00:00 2026 +0000\n\n    move things\n\n" +
			"diff --git a/old.go b/new.go\nsimilarity index 100%\nrename from old.go\nrename to new.go\n" +
			"diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n",
		want: []string{"diff(commits=1, files=2, +0 -0, hunks=0,", "[new.go +0 -0, logo.png binary]"},
	}, {
		name: "diff -r: Only in",
		text: "Only in a: x.txt\ndiff -u a/y b/y\n--- a/y\t2026-01-01\n+++ b/y\t2026-01-02\n@@ -1 +1 @@\n-1\n+2\n",
		want: []string{"diff(files=2, +1 -1, hunks=1,", `["a: x.txt" only, y +1 -1]`},
	}, {
		name: "many files: the first that fit and the last",
		text: strings.Repeat("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-1\n+2\n", 300) + "--- a/last.go\n+++ b/last.go\n@@ -1 +1 @@\n-1\n+2\n",
		want: []string{"diff(files=301, +301 -301, hunks=301,", "[f +1 -1, f +1 -1,", " more, last.go +1 -1]"},
	}, {
		name: "text that starts like a diff but is not one",
		text: "--- a note\nthat goes on\n" + strings.Repeat("and on\n", 400),
		want: []string{"text(len="},
		not:  []string{"diff("},
	}, {
		name: "a log that holds a diff further down",
		text: "2026-01-01 start\n" + strings.Repeat("2026-01-01 working\n", 200) + "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-1\n+2\n",
		want: []string{"text(len="},
		not:  []string{"diff("},
	}})
}

func TestYAMLPreview(t *testing.T) {
	laughs := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i, c := range "bcdefghi" {
		laughs += fmt.Sprintf("%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", c, c, 'a'+i, 'a'+i, 'a'+i, 'a'+i, 'a'+i, 'a'+i, 'a'+i, 'a'+i, 'a'+i)
	}
	runDocCases(t, []docCase{{
		name: "a manifest",
		text: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx\n",
		want: []string{"yaml(keys=4,", "{apiVersion: apps/v1, kind: Deployment, metadata: map(keys=2, lines=4, {name, labels}), spec: map(keys=2, lines=7, {replicas, template})}"},
	}, {
		name: "documents",
		text: "%YAML 1.2\n---\na: 1\nb: [1, 2]\n---\nc: 3\n---\nd: 4\n",
		want: []string{"yaml(documents=3, keys=2,", "{a: 1, b: \"[1, 2]\"}"},
	}, {
		// Aliases are shown as written, never expanded: the preview of a
		// billion laughs is as short as its text.
		name: "billion laughs",
		text: laughs,
		want: []string{"yaml(keys=9,", `i: "&i [*h,*h,*h,*h,*h,*h,*h,*h,*h]"`},
	}, {
		name: "anchors, merge keys and quoted keys",
		text: "base: &base\n  x: 1\n\"the key\": 2\n'it''s': 3\nderived:\n  <<: *base\n  y: 2\n",
		want: []string{"yaml(keys=4,", "base: map(keys=1", `"the key": 2`, `derived: map(keys=2, lines=3, {"<<", y})`},
	}, {
		name: "a sequence at the key's column, and a block scalar",
		text: "steps:\n- run: make\n  name: build\n- run: make test\nnote: |\n  two\n  lines\n",
		want: []string{"yaml(keys=2,", "steps: list(len=2, lines=4, first={run, name})", "note: text(lines=2)"},
	}, {
		name: "a top-level sequence",
		text: "- name: a\n  size: 1\n- name: b\n- name: c\n  size: 3\n  tags: [x]\n",
		want: []string{"yaml(items=3,", "items={name, size?, tags?}", "[{name: a, size: 1}, {name: b}, {name: c, size: 3, tags: \"[x]\"}]"},
	}, {
		name: "a Python stack trace is not YAML",
		text: "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    f()\nValueError: bad value\n",
		not:  []string{"yaml("},
	}, {
		name: "log lines are not YAML",
		text: "main: starting: now\nmain: done\n",
		not:  []string{"yaml("},
	}, {
		name: "records with repeated keys are not one YAML document",
		text: "Package: a\nVersion: 1\n\nPackage: b\nVersion: 2\n",
		not:  []string{"yaml("},
	}, {
		name: "tab indentation is not YAML",
		text: "a:\n\tb: 1\nc: 2\n",
		not:  []string{"yaml("},
	}, {
		name: "Markdown with front matter is not YAML",
		text: "---\ntitle: x\n---\n# Heading\n\nSome text.\n",
		not:  []string{"yaml("},
	}, {
		name: "one key of plain text is not enough",
		text: "Error: file not found\n",
		not:  []string{"yaml("},
	}})
}

func TestXMLPreview(t *testing.T) {
	// A billion laughs: the entities are declared, never expanded.
	lol := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">` + "\n"
	for i := 1; i <= 9; i++ {
		prev := "lol"
		if i > 1 {
			prev = fmt.Sprintf("lol%d", i-1)
		}
		lol += fmt.Sprintf(`<!ENTITY lol%d "%s">`, i, strings.Repeat("&"+prev+";", 10)) + "\n"
	}
	lol += "]>\n<lolz>&lol9;</lolz>\n"
	deep := "<a>" + strings.Repeat("<b>", 50000) + strings.Repeat("</b>", 50000) + "</a>"
	rss := `<?xml version="1.0" encoding="ISO-8859-1"?><rss version="2.0"><channel><title>T</title>` + strings.Repeat(`<item><guid>x</guid></item>`, 40) + `</channel></rss>`
	runDocCases(t, []docCase{{
		name: "billion laughs",
		text: lol,
		want: []string{"xml(len=", "root=<lolz>, children=0"},
	}, {
		name: "deep nesting",
		text: deep,
		want: []string{"root=<a>/<b>, children=1 {b: 1}"},
	}, {
		// One child: the level below it, an RSS channel's items; a
		// declared encoding other than UTF-8 of a text that is UTF-8.
		name: "feed",
		text: rss,
		want: []string{`root=<rss version="2.0">/<channel>, children=41 {title: 1, item: 40}, first=<title>, last=<item>`},
	}, {
		name: "longer than what is read",
		text: "<list>" + strings.Repeat(`<entry id="1"/>`, markupRead/10) + "</list>",
		want: []string{"read=512 KiB", "children=", "+ {entry: ", `first=<entry id="1">`},
	}, {
		name: "an HTML fragment with text after it is not XML",
		text: "<p align=\"center\"><img src=\"x\"></p>\n\n# Title\n\nText.\n",
		not:  []string{"xml("},
	}, {
		name: "two roots are not XML",
		text: "<a/><b/>",
		not:  []string{"xml("},
	}, {
		name: "a syntax error is not XML",
		text: "<a><b></a x=>" + strings.Repeat("text ", 20),
		not:  []string{"xml("},
	}})
}

func TestHTMLPreview(t *testing.T) {
	runDocCases(t, []docCase{{
		// Tag soup: tags left open, unquoted attributes, a script that
		// holds markup, an entity in the title.
		name: "soup",
		text: "<!DOCTYPE html>\n<html><head><title>Q &amp; A</title><script>if (a<b) document.write('<h1>no</h1>')</script></head>\n" +
			"<body><h1>Top <em>level</em></h1><p>text<h2 class=x>Part one<h2>Part two</h2><table><tr><td><a href=/x>x</a><a name=y>y</a></table><img src=p.png><form action=/f></form>",
		want: []string{`html(len=`, `title="Q & A", headings=3 ["# Top level", "## Part one", "## Part two"], tables=1, links=1, images=1, forms=1) "<!DOCTYPE html>`},
		not:  []string{`"# no"`},
	}, {
		name: "many headings",
		text: "<html><body>" + strings.Repeat("<h2>Section</h2><p>text</p>", 200) + "<h3>Last one</h3></body></html>",
		want: []string{`headings=201 ["## Section", "## Section",`, ` more, "### Last one"]`},
	}, {
		name: "the head of the body, not of the markup before it",
		text: "<html><head>" + strings.Repeat("<meta name=x content=y>\n", 100) + "</head><body>\n<p>First words.</p>" + strings.Repeat("<p>more</p>\n", 200) + "</body></html>",
		want: []string{`headings=0, tables=0, links=0, body="<p>First words.</p>`},
	}, {
		name: "HTML without a start tag of html is not HTML",
		text: "<div><h1>x</h1></div> and text",
		not:  []string{"html("},
	}})
}

func TestMarkdownPreview(t *testing.T) {
	huge := "# Report\n\n| host | status | ms |\n|---|:---:|--:|\n" + strings.Repeat("| web-1 | ok | 12 |\n", 20000) + "\n## After the table\n\nDone.\n"
	runDocCases(t, []docCase{{
		name: "a README",
		text: "---\ntitle: notes\n---\n# Tool\n\nIntro with a [link](x).\n\n## Install\n\n```sh\n# not a heading\ngo install ./...\n```\n\nUsage\n-----\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```go\nfunc main() {}\n```\n",
		want: []string{`markdown(len=`, `headings=3 ["# Tool", "## Install", "## Usage"], tables=1 (first: 1 rows, [a, b]), code=2 {sh: 1, go: 1}`},
		not:  []string{`"# not a heading"`},
	}, {
		// Read line by line: a table of 20,000 rows costs its lines.
		name: "a huge table",
		text: huge,
		want: []string{`headings=2 ["# Report", "## After the table"], tables=1 (first: 20000 rows, [host, status, ms]), code=0`},
	}, {
		name: "a script whose comments stand alone is not Markdown",
		text: "#!/bin/sh\n# Setup\n\nset -e\n\n# Install the tools\n\napt-get install -y jq\n\n# Build\n\nmake\n",
		not:  []string{"markdown("},
	}, {
		name: "a comment block is not Markdown",
		text: "# tzdb timezone descriptions\n#\n# This file is in the public domain.\n#\nAD\t+4230+00131\tEurope/Andorra\n",
		not:  []string{"markdown("},
	}})
}

// formatBombs are texts made to make a parser expand or nest: each is
// stored and previewed in a child process whose peak memory is then held to
// the text plus twice its size or 64 MiB, far below what expanding any of
// them takes.
var formatBombs = map[string]func() string{
	"xml entities": func() string { // a billion laughs: 3 GB expanded
		s := `<?xml version="1.0"?><!DOCTYPE l [<!ENTITY l0 "lollollollollollollollollollol">`
		for i := 1; i <= 9; i++ {
			s += fmt.Sprintf(`<!ENTITY l%d "%s">`, i, strings.Repeat(fmt.Sprintf("&l%d;", i-1), 10))
		}
		return s + "]><l>&l9;</l>"
	},
	"yaml aliases": func() string {
		s := "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
		for i := 1; i <= 9; i++ {
			s += fmt.Sprintf("%c: &%c [%s]\n", 'a'+i, 'a'+i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*%c, ", 'a'+i-1), 10), ", "))
		}
		return s
	},
	"xml nesting":    func() string { return strings.Repeat("<a x='1'>", 2<<20) },
	"html soup":      func() string { return "<html><body>" + strings.Repeat("<div><h2><table><a href=x>", 1<<20) },
	"yaml nesting":   func() string { return "k:\n" + strings.Repeat("- ", 4<<20) + "x\nj: 1\n" },
	"yaml keys":      func() string { return genYAMLKeys(2 << 20) },
	"markdown table": func() string { return "# T\n\n| a | b |\n|---|---|\n" + strings.Repeat("| 1 | 2 |\n", 1<<20) },
	"diff hunks": func() string {
		return "--- a\n+++ b\n@@ -1,99999999 +1,99999999 @@\n" + strings.Repeat("-x\n+y\n", 2<<20)
	},
	"csv": func() string { return "id,name\n" + strings.Repeat("1,\"a\"\"b\"\n", 1<<20) },
}

func genYAMLKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "key%d: %d\n", i, i)
	}
	return b.String()
}

func TestFormatBombsMemory(t *testing.T) {
	if path := os.Getenv("AV_FORMAT_BOMB"); path != "" {
		text, err := os.ReadFile(path) // one allocation of its size
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		before := vmHWMBytes(t)
		s := New()
		v, _ := s.Get(s.PutOutput(text))
		p := RenderPreview("r1", v)
		fmt.Printf("bomb-result size=%d before=%d hwm=%d preview=%q\n", len(text), before, vmHWMBytes(t), p[:min(len(p), 40)])
		return
	}
	for name, gen := range formatBombs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bomb")
			if err := os.WriteFile(path, []byte(gen()), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := testkit.ChildCommand("TestFormatBombsMemory", "AV_FORMAT_BOMB="+path)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the child failed: %v\n%s", err, out)
			}
			var size, before, hwm int64
			var preview string
			k := bytes.Index(out, []byte("bomb-result "))
			if k < 0 {
				t.Fatalf("no result from the child: %s", out)
			}
			if _, err := fmt.Sscanf(string(out[k:]), "bomb-result size=%d before=%d hwm=%d preview=%q", &size, &before, &hwm, &preview); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			// Put keeps the text, which the child had read before: what
			// storing and previewing it adds is the memory a scan takes,
			// bounded by the read bounds (and the garbage of a tokenizer,
			// with the race detector's shadow of it), never what the text
			// expands to: gigabytes for the bombs.
			if bound := before + max(2*size, 64<<20); hwm > bound {
				t.Errorf("peak memory %d MiB storing %d KiB (before it %d MiB); bound %d MiB", hwm>>20, size>>10, before>>20, bound>>20)
			}
			t.Logf("%d KiB: peak %d MiB, %d MiB before; %s", size>>10, hwm>>20, before>>20, preview)
		})
	}
}

// vmHWMBytes returns this process's peak resident memory, from
// /proc/self/status.
func vmHWMBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
