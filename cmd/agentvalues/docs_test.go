package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/testkit"
	"go.yaml.in/yaml/v3"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the blocks of README.md and docs/*.md that a run of the command generates")

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// A docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	file   string // relative to the repository's root
	line   int    // of its opening fence, from 1
	lang   string // after the fence: go, sh, json, toml, or none
	marker string // what an HTML comment on the line before the fence says, if any
	body   string // its lines, each ending in a newline
	start  int    // the byte offset of body in the file
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// docBlocks returns the fenced blocks of README.md and docs/*.md.
func docBlocks(t *testing.T) (map[string][]byte, []docBlock) {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		files = append(files, filepath.Join("docs", filepath.Base(m)))
	}
	texts := map[string][]byte{}
	var blocks []docBlock
	fence := regexp.MustCompile("^```([a-z]*)\n")
	markerRE := regexp.MustCompile(`^<!-- (.*) -->\n$`)
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = text
		var prev string
		line := 0
		for off := 0; off < len(text); {
			end := bytes.IndexByte(text[off:], '\n')
			if end < 0 {
				break
			}
			l := string(text[off : off+end+1])
			line++
			m := fence.FindStringSubmatch(l)
			if m == nil {
				prev = l
				off += end + 1
				continue
			}
			b := docBlock{file: f, line: line, lang: m[1], start: off + len(l)}
			if mm := markerRE.FindStringSubmatch(prev); mm != nil {
				b.marker = mm[1]
			}
			close := bytes.Index(text[b.start:], []byte("\n```\n"))
			if close < 0 && bytes.HasPrefix(text[b.start:], []byte("```\n")) {
				close = -1 // an empty block
			} else if close < 0 {
				t.Fatalf("%s: a block that does not end", b)
			}
			b.body = string(text[b.start : b.start+close+1])
			blocks = append(blocks, b)
			line += strings.Count(b.body, "\n") + 1
			off = b.start + close + 1 + len("```\n")
			prev = ""
		}
	}
	return texts, blocks
}

// TestDocs keeps every fenced block of README.md and docs/*.md true, by
// what it is: Go code is compiled code (it is found, as written, in a Go
// file of the repository); a shell command names packages, tests,
// benchmarks, subcommands and flags that exist; a JSON or TOML
// configuration parses, and its agentvalues command line does; a preview
// is a line of the golden files; an example's output is that example's
// Output comment; the preview grammar names kinds the previews print; a
// usage block names flags the command has; and a block a run of the
// command generates (the demo, a preview session, an MCP transcript) is
// what that run prints today (-update-docs rewrites those).
func TestDocs(t *testing.T) {
	texts, blocks := docBlocks(t)
	if len(blocks) < 20 {
		t.Fatalf("found %d blocks", len(blocks))
	}
	goSource := normalizedGoSource(t)
	goldens := goldenLines(t)
	var generated []docBlock
	for _, b := range blocks {
		switch {
		case b.lang == "go":
			code := b.body
			if strings.HasPrefix(code, "package main\n") {
				// A whole program: its main's statements are those of
				// an example.
				_, code, _ = strings.Cut(code, "\nfunc main() {\n")
				code = strings.TrimSuffix(code, "}\n")
			}
			if !strings.Contains(goSource, normalizeSpace(code)) {
				t.Errorf("%s: this Go code is in no Go file of the repository (put it in an example or a test, as written):\n%s", b, b.body)
			}
		case b.lang == "sh":
			for _, cmd := range shellCommands(b.body) {
				if err := checkCommand(cmd); err != nil {
					t.Errorf("%s: %q: %v", b, strings.Join(cmd, " "), err)
				}
			}
		case b.lang == "json":
			checkJSONConfig(t, b)
		case b.lang == "toml":
			checkTOMLConfig(t, b)
		case b.lang == "yaml":
			var v any
			if err := yaml.Unmarshal([]byte(b.body), &v); err != nil || v == nil {
				t.Errorf("%s: this YAML does not parse: %v", b, err)
			}
		case b.lang != "":
			t.Errorf("%s: a block of %q, which nothing checks", b, b.lang)
		case strings.HasPrefix(b.marker, "output of "):
			checkExampleOutput(t, b)
		case strings.HasPrefix(b.marker, "generated: "):
			generated = append(generated, b)
		case b.marker == "grammar":
			checkGrammar(t, b, goldens)
		case b.marker == "reference grammar":
			checkReferenceGrammar(t, b)
		case b.marker == "usage":
			checkUsage(t, b)
		case b.marker == "" && strings.HasPrefix(b.body, "r1 = "):
			for _, l := range strings.Split(strings.TrimSuffix(b.body, "\n"), "\n") {
				if !goldens[l] {
					t.Errorf("%s: a preview that no golden file holds (go test -run 'TestPreviewGolden|TestPreviewCapturedOutputs' -update . records them):\n%s", b, l)
				}
			}
		default:
			t.Errorf("%s: a block with no check (marker %q); say what it is with an HTML comment on the line before it", b, b.marker)
		}
	}
	checkGenerated(t, texts, generated)

	// Commands in code spans of the prose and the tables.
	span := regexp.MustCompile("`((?:go|agentvalues) [^`]+)`")
	fenced := regexp.MustCompile("(?s)```.*?\n```\n")
	for file, text := range texts {
		for _, m := range span.FindAllStringSubmatch(fenced.ReplaceAllString(string(text), ""), -1) {
			code := strings.ReplaceAll(strings.ReplaceAll(m[1], "\n", " "), `\|`, "|")
			if strings.HasPrefix(code, "agentvalues ") && strings.Contains(code, "[") {
				// A usage line: its flags are the command's.
				if err := usageFlags(code); err != nil {
					t.Errorf("%s: `%s`: %v", file, m[1], err)
				}
				continue
			}
			for _, cmd := range shellCommands(code) {
				if err := checkCommand(cmd); err != nil {
					t.Errorf("%s: `%s`: %v", file, m[1], err)
				}
			}
		}
	}
}

// normalizeSpace collapses every run of white space to one space.
func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// normalizedGoSource returns every Go file of the repository, each
// normalized by normalizeSpace, joined by newlines.
func normalizedGoSource(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sb.WriteString(normalizeSpace(string(data)))
			sb.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// goldenLines returns the lines of the preview golden files.
func goldenLines(t *testing.T) map[string]bool {
	t.Helper()
	lines := map[string]bool{}
	for _, f := range []string{"outputs.golden", "previews.golden"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			lines[l] = true
		}
	}
	return lines
}

// shellCommands splits a shell block into commands: lines joined at a
// trailing backslash, comments dropped, pipelines and lists split, each
// command split into words as the shell would (single and double quotes;
// no expansion).
func shellCommands(body string) [][]string {
	body = strings.ReplaceAll(body, "\\\n", " ")
	var cmds [][]string
	for _, line := range strings.Split(body, "\n") {
		var (
			words []string
			word  strings.Builder
			in    bool // a word has started
			quote byte
		)
		flush := func() {
			if in {
				words = append(words, word.String())
			}
			word.Reset()
			in = false
		}
		end := func() {
			flush()
			if len(words) > 0 {
				cmds = append(cmds, words)
			}
			words = nil
		}
	scan:
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				} else {
					word.WriteByte(c)
				}
			case c == '\'' || c == '"':
				quote, in = c, true
			case c == ' ' || c == '\t':
				flush()
			case c == '#' && !in:
				break scan
			case c == '|' || c == ';' || c == '&':
				end()
			default:
				word.WriteByte(c)
				in = true
			}
		}
		end()
	}
	return cmds
}

// externalCommands are the programs a shell block may run besides go,
// agentvalues and bash: their arguments are not checked here.
var externalCommands = []string{"printf", "npx", "redis-server", "curl", "cat", "export"}

// envAssignment is a shell block's VAR=value before a command.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// checkCommand checks one command of a shell block.
func checkCommand(cmd []string) error {
	for len(cmd) > 1 && envAssignment.MatchString(cmd[0]) { // VAR=value COMMAND …
		cmd = cmd[1:]
	}
	switch cmd[0] {
	case "go":
		return checkGoCommand(cmd[1:])
	case "agentvalues":
		return checkAgentvalues(cmd[1:])
	case "bash":
		if len(cmd) < 2 {
			return fmt.Errorf("bash without a script")
		}
		_, err := os.Stat(filepath.Join(repoRoot, cmd[1]))
		return err
	case "claude":
		i := slices.Index(cmd, "--")
		if i < 0 {
			return fmt.Errorf("no -- before the server's command")
		}
		return checkCommand(cmd[i+1:])
	case "npm":
		pinned := []string{}
		for _, s := range []npmServer{fsServer, memoryServer, everythingServer} {
			pinned = append(pinned, s.pkg+"@"+s.version)
		}
		for _, a := range cmd {
			if strings.HasPrefix(a, "@modelcontextprotocol/") && !slices.Contains(pinned, a) {
				return fmt.Errorf("%s is not one of the servers the tests pin: %v", a, pinned)
			}
		}
		return nil
	}
	if slices.Contains(externalCommands, cmd[0]) {
		return nil
	}
	return fmt.Errorf("a command this test does not know; add it to externalCommands if its arguments need no check")
}

// checkGoCommand checks the arguments of a go command: packages and
// commands of this module, test and benchmark patterns that match.
func checkGoCommand(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("go without a command")
	}
	switch args[0] {
	case "install", "get":
		for _, a := range args[1:] {
			path, _, _ := strings.Cut(a, "@")
			if path != "./cmd/agentvalues" && !strings.HasPrefix(path, "github.com/agentvalues/values") {
				return fmt.Errorf("%s is not of this module", a)
			}
		}
		return nil
	case "doc":
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "github.com/agentvalues/values") {
				return fmt.Errorf("%s is not of this module", a)
			}
		}
		return nil
	case "run":
		if len(args) < 2 || args[1] != "./cmd/agentvalues" {
			return fmt.Errorf("go run of something other than ./cmd/agentvalues")
		}
		return checkAgentvalues(args[2:])
	case "test":
	case "mod":
		if len(args) < 2 || args[1] != "download" && args[1] != "verify" && args[1] != "tidy" {
			return fmt.Errorf("go mod %v: not a go mod command this test knows", args[1:])
		}
		return nil
	default:
		return fmt.Errorf("go %s: a go command this test does not check", args[0])
	}
	var pkgs []string
	patterns := map[string]string{} // flag: pattern
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pkgs = append(pkgs, a)
			continue
		}
		name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok && (name == "run" || name == "list" || name == "bench" || name == "count" || name == "benchtime" || name == "cpu" || name == "fuzz" || name == "fuzztime" || name == "timeout") {
			i++
			if i == len(args) {
				return fmt.Errorf("-%s without a value", name)
			}
			val = args[i]
		}
		if name == "list" {
			name = "run"
		}
		if name == "run" || name == "bench" || name == "fuzz" {
			patterns[name] = val
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	var funcs []string
	for _, p := range pkgs {
		if !strings.HasPrefix(p, ".") {
			return nil // a package of another module, or of the standard library: not ours to check
		}
		dir, all := strings.CutSuffix(p, "/...")
		dir = filepath.Join(repoRoot, strings.TrimPrefix(dir, "./"))
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("no package %s", p)
		}
		names, err := testFuncs(dir, all)
		if err != nil {
			return err
		}
		funcs = append(funcs, names...)
	}
	kinds := map[string][]string{"run": {"Test", "Example", "Fuzz"}, "bench": {"Benchmark"}, "fuzz": {"Fuzz"}}
	for flagName, pattern := range patterns {
		if pattern == "^$" || pattern == "." {
			continue
		}
		top, _, _ := strings.Cut(pattern, "/")
		for _, alt := range splitAlternatives(top) {
			re, err := regexp.Compile(alt)
			if err != nil {
				return fmt.Errorf("-%s %q: %v", flagName, pattern, err)
			}
			found := false
			for _, f := range funcs {
				for _, k := range kinds[flagName] {
					if strings.HasPrefix(f, k) && re.MatchString(f) {
						found = true
					}
				}
			}
			if !found {
				return fmt.Errorf("-%s: %q matches no function of %v", flagName, alt, pkgs)
			}
		}
	}
	return nil
}

// splitAlternatives splits a regular expression at its top-level "|".
func splitAlternatives(re string) []string {
	var alts []string
	depth, start := 0, 0
	for i := 0; i < len(re); i++ {
		switch re[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				alts = append(alts, re[start:i])
				start = i + 1
			}
		}
	}
	return append(alts, re[start:])
}

// testFuncs returns the names of the test, example, fuzz and benchmark
// functions of the package in dir, and of those below it when all is set.
func testFuncs(dir string, all bool) ([]string, error) {
	re := regexp.MustCompile(`(?m)^func ((?:Test|Example|Fuzz|Benchmark)\w*)\(`)
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (!all || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(data), -1) {
				names = append(names, m[1])
			}
		}
		return nil
	})
	return names, err
}

// subcommandFlags returns the flags agentvalues sub takes, as its -h
// lists them.
func subcommandFlags(sub string) ([]string, error) {
	var out bytes.Buffer
	run([]string{sub, "-h"}, strings.NewReader(""), &out, &out)
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(out.String(), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) == 0 && sub != "demo" {
		return nil, fmt.Errorf("agentvalues %s -h lists no flags:\n%s", sub, out.String())
	}
	return flags, nil
}

// checkAgentvalues checks an agentvalues command line: a subcommand that
// exists, and flags it takes (up to "--", after which the downstream
// server's command begins).
func checkAgentvalues(args []string) error {
	if len(args) == 0 {
		return nil
	}
	sub := args[0]
	switch sub {
	case "demo", "preview", "proxy", "gateway":
	case "help", "-h", "--help", "version", "-version", "--version":
		var out bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &out); code != 0 {
			return fmt.Errorf("agentvalues %s exits %d: %s", strings.Join(args, " "), code, out.String())
		}
		return nil
	default:
		return fmt.Errorf("agentvalues has no command %q", sub)
	}
	flags, err := subcommandFlags(sub)
	if err != nil {
		return err
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(flags, name) {
			return fmt.Errorf("agentvalues %s has no flag -%s (it has %v)", sub, name, flags)
		}
	}
	return nil
}

// checkServers checks an mcpServers object: every entry has a command or
// a url, and an entry that runs agentvalues has a command line that works.
func checkServers(t *testing.T, b docBlock, servers map[string]struct {
	Command string
	Args    []string
	URL     string
}) {
	if len(servers) == 0 {
		t.Errorf("%s: no servers", b)
	}
	for name, s := range servers {
		switch {
		case s.Command == "" && s.URL == "":
			t.Errorf("%s: server %q has neither a command nor a url", b, name)
		case filepath.Base(s.Command) == "agentvalues":
			if err := checkAgentvalues(s.Args); err != nil {
				t.Errorf("%s: server %q: %v", b, name, err)
			}
		}
	}
}

func checkJSONConfig(t *testing.T, b docBlock) {
	var cfg struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
			URL     string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(b.body), &cfg); err != nil {
		t.Errorf("%s: not JSON: %v", b, err)
		return
	}
	checkServers(t, b, cfg.MCPServers)
}

// checkTOMLConfig checks a TOML block of tables and keys whose values are
// strings and arrays of strings (which JSON reads alike), as Codex's
// mcp_servers tables are.
func checkTOMLConfig(t *testing.T, b docBlock) {
	servers := map[string]struct {
		Command string
		Args    []string
		URL     string
	}{}
	var table string
	header := regexp.MustCompile(`^\[mcp_servers\.([A-Za-z0-9_-]+)\]$`)
	for _, l := range strings.Split(strings.TrimSuffix(b.body, "\n"), "\n") {
		if m := header.FindStringSubmatch(l); m != nil {
			table = m[1]
			continue
		}
		k, v, ok := strings.Cut(l, " = ")
		if !ok || table == "" {
			t.Errorf("%s: a line that is not a key of an mcp_servers table: %q", b, l)
			continue
		}
		s := servers[table]
		var err error
		switch k {
		case "command":
			err = json.Unmarshal([]byte(v), &s.Command)
		case "args":
			err = json.Unmarshal([]byte(v), &s.Args)
		case "url":
			err = json.Unmarshal([]byte(v), &s.URL)
		}
		if err != nil {
			t.Errorf("%s: %s: %v", b, l, err)
		}
		servers[table] = s
	}
	checkServers(t, b, servers)
}

// checkExampleOutput checks a block marked "output of FUNC in FILE"
// against that example's Output comment.
func checkExampleOutput(t *testing.T, b docBlock) {
	fn, file, ok := strings.Cut(strings.TrimPrefix(b.marker, "output of "), " in ")
	if !ok {
		t.Errorf("%s: want a marker of the form \"output of FUNC in FILE\", got %q", b, b.marker)
		return
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Errorf("%s: %v", b, err)
		return
	}
	src := string(data)
	i := strings.Index(src, "\nfunc "+fn+"() {\n")
	if i < 0 {
		t.Errorf("%s: %s has no func %s()", b, file, fn)
		return
	}
	j := strings.Index(src[i:], "\t// Output:\n")
	if j < 0 {
		t.Errorf("%s: %s in %s has no Output comment", b, fn, file)
		return
	}
	var want strings.Builder
	for _, l := range strings.Split(src[i+j+len("\t// Output:\n"):], "\n") {
		if !strings.HasPrefix(l, "\t//") {
			break
		}
		l = strings.TrimPrefix(strings.TrimPrefix(l, "\t//"), " ")
		want.WriteString(l + "\n")
	}
	if b.body != want.String() {
		t.Errorf("%s: not the output of %s in %s;\ngot:\n%s\nwant:\n%s", b, fn, file, b.body, want.String())
	}
}

// checkGrammar checks that each kind the preview grammar spells as a call
// (array(…), table(…), …) is one the previews of the golden files print.
func checkGrammar(t *testing.T, b docBlock, goldens map[string]bool) {
	var all strings.Builder
	for l := range goldens {
		all.WriteString(l + "\n")
	}
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^[a-z-]+ +([a-z-]+)\(`).FindAllStringSubmatch(b.body, -1) {
		n++
		if !strings.Contains(all.String(), m[1]+"(") {
			t.Errorf("%s: the grammar spells %s(…), which no golden preview prints", b, m[1])
		}
	}
	if n < 10 {
		t.Errorf("%s: %d kinds in the grammar", b, n)
	}
}

// checkReferenceGrammar checks the reference grammar's claims against
// values.ReferencePattern.
func checkReferenceGrammar(t *testing.T, b docBlock) {
	re := regexp.MustCompile(values.ReferencePattern)
	for _, s := range []string{"$r1", "$r12.rows.-1.id", `$r1.a\.b`, `$r1.a\\`} {
		if !re.MatchString(s) {
			t.Errorf("%s: %q is a reference by the grammar, not by values.ReferencePattern", b, s)
		}
	}
	for _, s := range []string{"$r0", "$r01", "$r1..a", "$r1.", "r1", `$r1.a\b`} {
		if re.MatchString(s) {
			t.Errorf("%s: %q is no reference by the grammar, but values.ReferencePattern takes it", b, s)
		}
	}
	for _, want := range []string{`"r" digit1-9 *digit`, `"\."`, `"\\"`} {
		if !strings.Contains(b.body, want) {
			t.Errorf("%s: the grammar no longer says %s", b, want)
		}
	}
}

// checkUsage checks a usage block (see usageFlags).
func checkUsage(t *testing.T, b docBlock) {
	if err := usageFlags(b.body); err != nil {
		t.Errorf("%s: %v", b, err)
	}
}

// usageFlags checks a usage text: its first word after agentvalues is a
// command, and every -flag it names is one of that command's.
func usageFlags(usage string) error {
	f := strings.Fields(usage)
	if len(f) < 2 || f[0] != "agentvalues" {
		return fmt.Errorf("a usage text starts with agentvalues COMMAND")
	}
	flags, err := subcommandFlags(f[1])
	if err != nil {
		return err
	}
	for _, m := range regexp.MustCompile(`(?:^|[\s\[])-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(usage, -1) {
		if !slices.Contains(flags, m[1]) {
			return fmt.Errorf("agentvalues %s has no flag -%s", f[1], m[1])
		}
	}
	return nil
}

// checkGenerated runs what each generated block says made it and compares
// the block with what that prints today; with -update-docs it rewrites
// the blocks instead.
func checkGenerated(t *testing.T, texts map[string][]byte, blocks []docBlock) {
	type edit struct {
		b   docBlock
		got string
	}
	var edits []edit
	for _, b := range blocks {
		what := strings.TrimPrefix(b.marker, "generated: ")
		var got string
		switch {
		case what == "agentvalues demo":
			var out, errb bytes.Buffer
			if code := run([]string{"demo"}, strings.NewReader(""), &out, &errb); code != 0 {
				t.Fatalf("%s: agentvalues demo exited %d: %s", b, code, errb.String())
			}
			got = out.String()
		case what == "shell session":
			got = shellSession(t, b.body)
		case strings.HasPrefix(what, "transcript "):
			got = transcript(t, strings.TrimPrefix(what, "transcript "), b.body)
		default:
			t.Errorf("%s: no generator named %q", b, what)
			continue
		}
		if got != b.body {
			if *updateDocs {
				edits = append(edits, edit{b, got})
			} else {
				t.Errorf("%s: not what %s prints today (go test -run TestDocs -update-docs ./cmd/agentvalues rewrites it):\n%s", b, what, lineDiff(b.body, got))
			}
		}
	}
	// Rewrite from the end of each file, so offsets stay good.
	slices.SortFunc(edits, func(x, y edit) int { return y.b.start - x.b.start })
	for _, e := range edits {
		text := texts[e.b.file]
		text = slices.Concat(text[:e.b.start], []byte(e.got), text[e.b.start+len(e.b.body):])
		texts[e.b.file] = text
		if err := os.WriteFile(filepath.Join(repoRoot, e.b.file), text, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", e.b)
	}
}

// lineDiff returns the first lines of got and want that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n got %q\nwant %q", i+1, gl, wl)
		}
	}
	return "(same lines)"
}

// agentvaluesOnPath returns a PATH whose first directory holds an
// agentvalues that runs this test binary as the command.
func agentvaluesOnPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", runMainEnv, os.Args[0])
	if err := os.WriteFile(filepath.Join(dir, "agentvalues"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// shellSession runs each "$ " line of body with bash, agentvalues on its
// PATH, and returns the lines with what each printed after it.
func shellSession(t *testing.T, body string) string {
	path := agentvaluesOnPath(t)
	var sb strings.Builder
	for _, l := range strings.Split(body, "\n") {
		cmdline, ok := strings.CutPrefix(l, "$ ")
		if !ok {
			continue
		}
		cmd := exec.Command("bash", "-c", cmdline)
		cmd.Env = append(testkit.ChildEnv(), "PATH="+path)
		out, _ := cmd.CombinedOutput()
		sb.WriteString(l + "\n")
		sb.Write(out)
	}
	return sb.String()
}

// transcript runs the MCP session a transcript block names: it starts the
// proxy or the gateway in front of real servers, sends each "→" line of
// body after the handshake, and returns the lines with the response to
// each. The Go installation's directory is written /usr/local/go in the
// block, whatever it is here.
func transcript(t *testing.T, name, body string) string {
	goroot := runtime.GOROOT()
	var args []string
	switch name {
	case "proxy-filesystem":
		args = append([]string{"proxy", "--"}, fsServer.command(t)...)
		args = append(args, filepath.Join(goroot, "src", "net"))
	case "gateway-files-memory":
		fs := fsServer.command(t)
		mem := memoryServer.command(t)
		servers := map[string]any{
			"files":  map[string]any{"command": fs[0], "args": append(fs[1:], filepath.Join(goroot, "src", "net", "http"))},
			"memory": map[string]any{"command": mem[0], "args": mem[1:], "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		}
		data, _ := json.Marshal(map[string]any{"mcpServers": servers})
		config := filepath.Join(t.TempDir(), "servers.json")
		if err := os.WriteFile(config, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = []string{"gateway", "--config", config}
	default:
		t.Fatalf("no transcript named %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncWriter{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	lines := bufio.NewReaderSize(stdout, 1<<20)
	// call sends one request and returns the response with its id,
	// skipping notifications and requests of the server.
	call := func(req string) string {
		var head struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(req), &head); err != nil {
			t.Fatalf("transcript %s: %q: %v", name, req, err)
		}
		if _, err := io.WriteString(stdin, req+"\n"); err != nil {
			t.Fatalf("transcript %s: %v; stderr:\n%s", name, err, stderr.String())
		}
		if head.ID == nil {
			return ""
		}
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("transcript %s: no response to %s: %v; stderr:\n%s", name, req, err, stderr.String())
			}
			var resp struct {
				ID     json.RawMessage
				Method string
			}
			if json.Unmarshal([]byte(l), &resp) == nil && resp.Method == "" && bytes.Equal(resp.ID, head.ID) {
				return strings.TrimSuffix(l, "\n")
			}
		}
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"docs","version":"1"}}}`)
	call(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Wait for the tools the transcript calls: a server may still be
	// starting, and then its tools come with a list_changed.
	for _, l := range strings.Split(body, "\n") {
		var req struct{ Params struct{ Name string } }
		if r, ok := strings.CutPrefix(l, "→ "); !ok || json.Unmarshal([]byte(r), &req) != nil || req.Params.Name == "" {
			continue
		}
		// A gateway's SERVER__NAME is called as well when NAME is offered
		// bare (mcpproxy.Gateway): either listed will do.
		offered := func(list string) bool {
			_, bare, _ := strings.Cut(req.Params.Name, "__") // mcpproxy.ToolSeparator
			return strings.Contains(list, `"name":"`+req.Params.Name+`"`) || bare != "" && strings.Contains(list, `"name":"`+bare+`"`)
		}
		for !offered(call(`{"jsonrpc":"2.0","id":"tools","method":"tools/list"}`)) {
			for {
				l, err := lines.ReadString('\n')
				if err != nil {
					t.Fatalf("transcript %s: no tool %s: %v; stderr:\n%s", name, req.Params.Name, err, stderr.String())
				}
				if strings.Contains(l, `"method":"notifications/tools/list_changed"`) {
					break
				}
			}
		}
	}
	var sb strings.Builder
	for _, l := range strings.Split(body, "\n") {
		req, ok := strings.CutPrefix(l, "→ ")
		if !ok {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		resp := call(strings.ReplaceAll(req, "/usr/local/go/", goroot+"/"))
		fmt.Fprintf(&sb, "%s\n← %s\n", l, strings.ReplaceAll(resp, goroot+"/", "/usr/local/go/"))
	}
	return sb.String()
}

// TestDocsLinks checks every relative link of README.md and docs/*.md: the
// file it names exists, and so does the heading its #anchor names.
func TestDocsLinks(t *testing.T) {
	texts, _ := docBlocks(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for file, text := range texts {
		// Links inside code blocks and code spans are not links.
		prose := regexp.MustCompile("(?s)```.*?\n```\n|`[^`\n]*`").ReplaceAllString(string(text), "")
		for _, m := range link.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			doc := file
			if path != "" {
				doc = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(filepath.Join(repoRoot, doc)); err != nil {
					t.Errorf("%s: a link to %s, which does not exist", file, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			data, ok := texts[filepath.Clean(doc)]
			if !ok {
				t.Errorf("%s: an anchor into %s, which is not a Markdown file checked here", file, target)
				continue
			}
			if !slices.Contains(anchors(string(data)), anchor) {
				t.Errorf("%s: a link to %s: no such heading", file, target)
			}
		}
	}
}

// anchors returns the anchors GitHub gives the headings of a Markdown text.
func anchors(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^#+ (.*)$`).FindAllStringSubmatch(text, -1) {
		var sb strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				sb.WriteRune('-')
			case r == '-' || r == '_' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r > 127:
				sb.WriteRune(r)
			}
		}
		out = append(out, sb.String())
	}
	return out
}
