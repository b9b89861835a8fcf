package values

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Fuzz targets check properties, not only the absence of panics. Run one
// for a while with, for example:
//
//	go test -run='^$' -fuzz=FuzzPreview -fuzztime=60s .

func FuzzPreview(f *testing.F) {
	for _, seed := range []string{
		`[1,2,3,4,5,6]`, `{"a":"b"}`, "hello\nworld", `"\u00e9"`, "\xff\xfe", `[{"a":{"b":[1]},"c":"d","e":1}]`,
		`{"` + strings.Repeat("k", 300) + `":1}`, strings.Repeat("€", 700), `[` + strings.Repeat(`"\u0001",`, 50) + `1]`,
		// JSON in a string inside an envelope, as MCP tool results hold it.
		`{"content":[{"type":"text","text":"[{\"name\":\"a\",\"size\":1},{\"name\":\"b\"}]"}],"isError":false}`,
		// Items with differing keys and kinds; a wide object; a dominant text.
		`[{"a":1,"b":"x"},{"a":null,"c":[1]},{"d":{"e":1}},2,"s",{"a":2,"b":"y","c":[],"k` + strings.Repeat("é", 40) + `":true}]`,
		`{` + strings.Repeat(`"k":1,`, 40) + `"big":"` + strings.Repeat("word ", 200) + `"}`,
		`[[[[[[{"deep":[{"x":"` + strings.Repeat(`y\n`, 100) + `"}]}]]]]]]`,
		// Tables, JSON streams and text that only looks like them.
		"# comment\nid,name,note\n1,alice,\"a, b\"\n2,bob,\"x\ny\"\n# end\n",
		"id\tname\n1\talice\n2\tbob\n", "USER   PID COMMAND\nroot     1 bash -c x\nroot    22 ps aux\n",
		"Filesystem Size Mounted on\n/dev/a 1G /\n", "a,b\n1\n2,3,4\n", "{\"A\":1}\n{\"A\":2,\"B\":[]}\n{\"C\":null}\n",
		"{\"A\":1}\n{broken\n", "[1]\n[2]\n", "  {\"x\": \"y\"}  ",
		// White space before an array of objects and in a string holding one.
		"\n  [{\"identifier\":1,\"name\":\"a\"},{\"identifier\":2,\"name\":\"b\"}]",
		`{"content":[{"type":"text","text":"\n  [{\"identifier\":1,\"name\":\"a\"},{\"identifier\":2}]"}]}`,
		// Diffs, and text that only starts like one: hunks whose counts
		// lie, header-like lines inside hunks, names with tabs and quotes.
		"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- y\n-z\n+++ w\n+v\n",
		"--- a\n+++ b\n@@ -1,999999999 +1,999999999 @@\n x\n" + strings.Repeat("-\n+\n", 40),
		"--- a\n+++ b\n@@ -1,99999999999999999999 +1 @@\n-1\n", "diff \ndiff --git\n@@ -0,0 +0,0 @@\n",
		// YAML: anchors, aliases, a billion laughs (never expanded), documents.
		"a: &a [lol, lol]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: *c\n", "---\nk: v\n---\n- x\n- y\n...\n",
		"- go: a\n  in:\n  - &fp\n    x: 1\n  out:\n  - *fp\n- go: b\n", "k: |\n  text\nl:\n- a\n- b: c\n  d: e\n",
		// XML: entities declared (never expanded), external ones, deep nesting, soup.
		`<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;"><!ENTITY x SYSTEM "file:///etc/passwd">]><l>&b;&x;</l>`,
		"<a>" + strings.Repeat("<b c='1'>", 300) + strings.Repeat("</b>", 300) + "</a>", "<svg xmlns='http://www.w3.org/2000/svg'><g id='x'/><path d='M0'/></svg>",
		"<root><a></b></root>", "<?xml version='1.0' encoding='latin1'?><r><![CDATA[<x>]]><!-- c --><?pi?></r>",
		// HTML soup: open tags, scripts holding markup, headings inside headings.
		"<!DOCTYPE html><title>a &amp; b<h1>x<h2>y</h1><script>'<h3>'</script><table><a href=1><a href", "<html><body><h1>" + strings.Repeat("é ", 300),
		// Markdown: a huge table, fences inside fences, underlines, front matter.
		"# T\n\n|a|b|\n|-|-|\n" + strings.Repeat("|1|2|\n", 300) + "\n## U\n\n```go\n# x\n~~~\n```\n", "---\nk: v\n---\nTitle\n=====\n\n## A\n\n- [x](y)\n- [z](w)\n",
		// Tables: rule lines, pipes, overflowing cells, no header, comment headers.
		" id | n\n----+---\n  1 | a\n(1 row)\n", "+--+--+\n|a |b |\n+--+--+\n|1 |2 |\n", "#a\tb\tc\nx\ty\nz\tw\tv\n",
		"USER PID RSS CMD\nroot 1 2 init\nwww 123456 999999999 nginx: w\n", "x    y    z\n1    2    3\n10000000000 2 3\n", "a  b  c\n--  --  --\n1  2\n",
		"commit 0123456789abcdef0123456789abcdef01234567\n\ndiff --git \"a/\\t x\" \"b/\\t x\"\nBinary files /dev/null and \"b/\\t x\" differ\nOnly in :\n",
		// Binary data as base64: an MCP image block, alone and among text
		// blocks; base64 that decodes to nothing known.
		`{"content":[{"type":"image","data":"` + pngBase64 + `","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"x"},{"type":"image","data":"` + pngBase64 + `","mimeType":"image/png"},{"type":"text","text":"y"}]}`,
		`{"blob":"` + strings.Repeat("QUJD", 60) + `=","x":1}`,
		// Item schemas: values that are few, many, long, escaped, extreme
		// numbers; items with many keys, the identifying one late.
		`[{"s":"a","n":1e308,"b":true},{"s":"b","n":-1e308,"b":false},{"s":"a\u0062","n":-0,"b":null},{"s":"` + strings.Repeat("é", 20) + `","n":0.1}]`,
		`[` + strings.Repeat(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"title":"t","id":7},`, 6) + `{"zz":{"k":"v"}}]`,
	} {
		f.Add([]byte(seed), 2048, "r1")
	}
	var distinct strings.Builder // many distinct values of every key
	distinct.WriteString("[")
	for i := range 300 {
		fmt.Fprintf(&distinct, `{"k%d":"v%d","s":"%s","n":%d.%d},`, i%40, i, strings.Repeat("x", i%50), i*7919, i)
	}
	distinct.WriteString(`{"s":null}]`)
	f.Add([]byte(distinct.String()), 2048, "r1")
	// Indexed when stored, rather than on first use: larger than the bound
	// (at least MinMaxPreview).
	rows := strings.Repeat(`{"identifier":1,"name":"a"},`, 40) + `{"identifier":2,"name":"b"}`
	f.Add([]byte("\n  ["+rows+"]"), 400, "r1")
	f.Add([]byte(strings.Repeat("{\"A\":1,\"B\":[1,2,3]}\n{\"A\":2,\"B\":[]}\n", 4)), 30, "r1")
	f.Add([]byte("["+rows+`,{"id":3,`), 30, "r1")
	f.Add([]byte(strings.Repeat("{\"A\":1}\n", 12)+"{broken\nid,name\n1,a\n2,b\n"), 20, "r1")
	f.Fuzz(func(t *testing.T, data []byte, limit int, handle string) {
		s := New(WithMaxPreview(limit % 5000))
		bound := s.cfg.preview()
		h := s.PutOutput(data)
		v, _ := s.Get(h)
		for _, name := range []string{h, handle} {
			p := RenderPreview(name, v)
			if len(p) > bound {
				t.Fatalf("preview is %d bytes, bound %d: %q", len(p), bound, p)
			}
			if !utf8.ValidString(p) {
				t.Fatalf("preview is not valid UTF-8: %q", p)
			}
			if again := RenderPreview(name, v); again != p {
				t.Fatalf("preview is not deterministic:\n%q\n%q", p, again)
			}
		}
		// Nothing is lost: the stored bytes are the output (JSON values are
		// stored without surrounding whitespace).
		if got := v.Bytes(); !bytes.Equal(got, data) && !bytes.Equal(got, bytes.Trim(data, " \t\r\n")) {
			t.Fatalf("stored %q, output was %q", got, data)
		}
		if !json.Valid(v.JSON()) {
			t.Fatalf("JSON() is not valid JSON: %q", v.JSON())
		}
		// Text that PutOutput found not to be one JSON value is indexed as
		// Put of the same string indexes it, without that first scan.
		if v.Kind() == KindText && utf8.Valid(data) {
			again := New(WithMaxPreview(limit % 5000))
			h2, err := again.Put(string(data))
			w, _ := again.Get(h2)
			if err != nil || RenderPreview(h, w) != RenderPreview(h, v) {
				t.Fatalf("PutOutput and Put(string) of %q differ (%v):\n%s\n%s", data, err, RenderPreview(h, v), RenderPreview(h, w))
			}
		}
		// White space around an array or object changes nothing of its
		// preview (it is not stored).
		if k := v.Kind(); k == KindArray || k == KindObject {
			spaced := New(WithMaxPreview(limit % 5000))
			w, _ := spaced.Get(spaced.PutOutput(append([]byte(" \n\t "), append(data, " \r\n"...)...)))
			if got, want := RenderPreview(h, w), RenderPreview(h, v); got != want {
				t.Fatalf("preview with white space around the value:\n%s\nwithout:\n%s", got, want)
			}
		}
	})
}

// FuzzReferencePattern checks ReferencePattern against the grammar the
// resolver parses: a string matches exactly when it is a reference.
func FuzzReferencePattern(f *testing.F) {
	for _, seed := range []string{"$r1", "$r0", "$r12.rows.0.id", "$r1.", "$r1..x", `$r1.a\.b`, `$r1.a\\`, `$r1.a\x`, "$$r1", "r1", "$r1.-1", "$r1.é", "$r1.\xff"} {
		f.Add(seed)
	}
	pattern := regexp.MustCompile(ReferencePattern)
	f.Fuzz(func(t *testing.T, s string) {
		_, isRef := parseRef(strings.TrimPrefix(s, "$"))
		isRef = isRef && strings.HasPrefix(s, "$")
		if got := pattern.MatchString(s); got != isRef {
			t.Fatalf("ReferencePattern matches %q: %v; the grammar says %v", s, got, isRef)
		}
	})
}

// FuzzYAMLOutline checks the YAML that Put recognizes against a YAML
// parser: when the parser reads the first document of a text that Put
// takes for YAML, it reads a mapping or sequence as Put does, with as many
// keys or items, and the same plain keys in the same order.
func FuzzYAMLOutline(f *testing.F) {
	for _, seed := range []string{
		"a: 1\nb:\n  c: 2\n", "- a: 1\n  b: 2\n- c\n", "---\nk: v\n---\nx: y\n", "k:\n- 1\n- 2\nj: |\n  text\n",
		"a: &x [1, 2]\nb: *x\n'q''k': 1\n\"dq\": 2\n", "!tag\n- &a x\n- *a\n", "a: b # c\nd: 'e: f'\n",
		"a:\n  &anchor\n  b: 1\nc: [1,\n  2]\n", "%YAML 1.2\n---\na: 1\n...\n", "a: \"multi\n  line\"\nb: 2\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		d := detectYAML(data)
		if d == nil {
			return
		}
		var doc yaml.Node
		err := func() (err error) {
			defer func() {
				if recover() != nil {
					err = errors.New("the parser panicked")
				}
			}()
			return yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc)
		}()
		if err != nil || len(doc.Content) == 0 {
			return // not YAML to the parser: Put's guess costs only a worse preview
		}
		top := doc.Content[0]
		switch {
		case d.seq && top.Kind == yaml.SequenceNode:
			if d.n != len(top.Content) {
				t.Fatalf("%q: %d items, the parser reads %d", data, d.n, len(top.Content))
			}
		case !d.seq && top.Kind == yaml.MappingNode:
			if d.n != len(top.Content)/2 {
				t.Fatalf("%q: %d keys, the parser reads %d", data, d.n, len(top.Content)/2)
			}
			for i, e := range d.head {
				k := top.Content[2*i]
				if k.Style == 0 && string(e.key.Of(data)) != k.Value {
					t.Fatalf("%q: key %d is %q, the parser reads %q", data, i, e.key.Of(data), k.Value)
				}
			}
		default:
			t.Fatalf("%q: Put reads a sequence: %v; the parser reads node kind %v", data, d.seq, top.Kind)
		}
	})
}

// pngBase64 is a real PNG (1x1 pixel, with room), in base64.
var pngBase64 = base64.StdEncoding.EncodeToString(png)
