package values

import (
	"bytes"
	"strconv"

	"github.com/agentvalues/values/internal/jsontext"
)

// This file recognizes unified diffs in text: what git diff, git show,
// git log -p, git format-patch and diff -u or -ru print.

// What Put records of a diff: its counts, and the first and last files by
// name with their own counts.
const (
	diffSniff     = 64 << 10 // a diff has a file within its first 64 KiB
	diffFilesHead = 16       // first files recorded
	diffFilesTail = 2        // last files recorded
)

// diffDoc is a unified diff recognized in a text.
type diffDoc struct {
	files, added, removed, hunks int
	commits                      int        // "commit <hash>" lines (git log -p, git show)
	head, tail                   []diffFile // the first diffFilesHead files; the last diffFilesTail after those
}

// diffFile is one file of a diff.
type diffFile struct {
	name           jsontext.Span // its path in the text (the new one, but for a deleted file)
	added, removed int
	hunks          int
	note           string // "binary", "only" (diff -r's "Only in"), "differ" (diff -q), or ""
	git            bool   // started by "diff --git": paths carry a/ and b/
	pair           bool   // its ---/+++ lines were read
}

// diffParse is the state of a diff's line-by-line scan.
type diffParse struct {
	d        diffDoc
	cur      *diffFile // the file being read, or nil
	fileBuf  diffFile
	old, new int // lines of the current hunk still to come on each side
}

// detectDiff returns the diff the text b holds, or nil. A diff starts with
// a line of one (diff, ---, Index:, Only in, Files … differ, or the
// commit, From or Binary line that git starts a patch with) and names a
// file within diffSniff bytes; then every line of b is read once. Lines
// of a hunk are counted by the hunk's header, so a removed line that
// starts with "--- " is not taken for a file.
func detectDiff(b []byte) *diffDoc {
	first, _ := lineAt(b, skipBlank(b, 0))
	if !diffStart(first) {
		return nil
	}
	var p diffParse
	sniff := min(len(b), diffSniff)
	if sniff < len(b) {
		if k := bytes.LastIndexByte(b[:sniff], '\n'); k >= 0 {
			sniff = k + 1
		}
	}
	i := p.lines(b, 0, sniff)
	if p.d.files == 0 && p.cur == nil {
		return nil
	}
	p.lines(b, i, len(b))
	p.flush()
	if p.d.hunks == 0 && p.d.files == 0 {
		return nil
	}
	return &p.d
}

// diffStart reports whether line may start a diff.
func diffStart(line []byte) bool {
	for _, p := range []string{"diff ", "--- ", "Index: ", "Only in ", "Files ", "Binary files "} {
		if bytes.HasPrefix(line, []byte(p)) {
			return true
		}
	}
	// git show and git log -p: "commit <hash>"; git format-patch: "From <hash> …".
	for _, p := range []string{"commit ", "From "} {
		if rest, ok := bytes.CutPrefix(line, []byte(p)); ok && len(rest) >= 40 && isHex(rest[:40]) {
			return true
		}
	}
	return false
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// skipBlank returns the offset of the first line at or after i that is
// not blank.
func skipBlank(b []byte, i int) int {
	for i < len(b) {
		line, next := lineAt(b, i)
		if len(bytes.TrimSpace(line)) > 0 {
			return i
		}
		i = next
	}
	return i
}

// lines reads the lines of b from offset i up to end (a line end) and
// returns where it stopped.
func (p *diffParse) lines(b []byte, i, end int) int {
	for i < end {
		line, next := lineAt(b[:end], i)
		if p.old > 0 || p.new > 0 {
			if p.hunkLine(line) {
				i = next
				continue
			}
			p.old, p.new = 0, 0 // a hunk cut short: read the line as a header
		}
		i = p.header(b, i, line, next, end)
	}
	return i
}

// hunkLine counts line as a line of the current hunk, if it is one.
func (p *diffParse) hunkLine(line []byte) bool {
	c := byte(' ') // an empty line: a context line whose blank a tool trimmed
	if len(line) > 0 {
		c = line[0]
	}
	switch {
	case c == ' ' && p.old > 0 && p.new > 0:
		p.old--
		p.new--
	case c == '-' && p.old > 0:
		p.old--
		p.d.removed++
		p.cur.removed++
	case c == '+' && p.new > 0:
		p.new--
		p.d.added++
		p.cur.added++
	case c == '\\': // "\ No newline at end of file"
	default:
		return false
	}
	return true
}

// header reads the line at i (line, ending before next) outside a hunk and
// returns the offset of the line after what it read.
func (p *diffParse) header(b []byte, i int, line []byte, next, end int) int {
	at := func(s []byte) jsontext.Span { // the span of s, a part of line
		start := i + len(line) - len(s)
		if k := bytes.IndexByte(s, '\t'); k >= 0 { // diff -u's "\t<time stamp>"
			s = s[:k]
		}
		return jsontext.Span{Start: start, End: start + len(s)}
	}
	switch {
	case bytes.HasPrefix(line, []byte("diff ")):
		f := p.start(diffFile{git: bytes.HasPrefix(line, []byte("diff --git "))})
		if k := bytes.LastIndex(line, []byte(" b/")); f.git && k >= 0 {
			f.name = at(line[k+3:])
		} else if k := bytes.LastIndexByte(line, ' '); k >= 0 {
			f.name = at(line[k+1:])
		}
	case bytes.HasPrefix(line, []byte("--- ")) && next < end:
		plus, after := lineAt(b[:end], next)
		if !bytes.HasPrefix(plus, []byte("+++ ")) {
			return next
		}
		f := p.cur
		if f == nil || f.pair || f.hunks > 0 {
			f = p.start(diffFile{})
		}
		f.pair = true
		// The new path, or the old one for a deleted file, without diff
		// -u's "\t<time stamp>" and, in git's form, its a/ or b/.
		oldName, newName := pathOf(line[4:]), pathOf(plus[4:])
		span := jsontext.Span{Start: next + 4, End: next + 4 + len(newName)}
		if bytes.Equal(newName, []byte("/dev/null")) {
			span = jsontext.Span{Start: i + 4, End: i + 4 + len(oldName)}
		}
		prefixed := func(s []byte, p string) bool {
			return bytes.HasPrefix(s, []byte(p)) || bytes.Equal(s, []byte("/dev/null"))
		}
		if s := span.Of(b); len(s) > 2 && (f.git || prefixed(oldName, "a/") && prefixed(newName, "b/")) && (s[0] == 'a' || s[0] == 'b') && s[1] == '/' {
			span.Start += 2
		}
		f.name = span
		return after
	case bytes.HasPrefix(line, []byte("@@ -")):
		old, new, ok := hunkHeader(line)
		if !ok {
			return next
		}
		if p.cur == nil {
			p.start(diffFile{})
		}
		p.cur.hunks++
		p.d.hunks++
		p.old, p.new = old, new
	case bytes.HasPrefix(line, []byte("Binary files ")) && bytes.HasSuffix(line, []byte(" differ")):
		f := p.cur
		if f == nil || f.pair || f.hunks > 0 || f.note != "" {
			f = p.start(diffFile{})
		}
		f.note = "binary"
		if k := bytes.LastIndex(line, []byte(" and ")); k >= 0 && f.name == (jsontext.Span{}) {
			f.name = jsontext.Span{Start: i + k + 5, End: i + len(line) - len(" differ")}
		}
	case bytes.HasPrefix(line, []byte("Files ")) && bytes.HasSuffix(line, []byte(" differ")):
		f := p.start(diffFile{note: "differ"})
		if k := bytes.LastIndex(line, []byte(" and ")); k >= 0 {
			f.name = jsontext.Span{Start: i + k + 5, End: i + len(line) - len(" differ")}
		}
		p.flush()
	case bytes.HasPrefix(line, []byte("Only in ")):
		f := p.start(diffFile{note: "only"})
		f.name = jsontext.Span{Start: i + len("Only in "), End: i + len(line)}
		p.flush()
	case bytes.HasPrefix(line, []byte("commit ")) && len(line) >= 47 && isHex(line[7:47]):
		p.flush()
		p.d.commits++
	}
	return next
}

// pathOf returns the path of a ---/+++ line's rest: up to a tab.
func pathOf(s []byte) []byte {
	if k := bytes.IndexByte(s, '\t'); k >= 0 {
		return s[:k]
	}
	return s
}

// hunkHeader parses "@@ -l[,s] +l[,s] @@…" and returns the lines of each
// side (s, 1 when it is left out).
func hunkHeader(line []byte) (old, new int, ok bool) {
	rest := line[len("@@ -"):]
	side := func(s []byte) (n int, rest []byte, ok bool) {
		k := 0
		for k < len(s) && '0' <= s[k] && s[k] <= '9' {
			k++
		}
		if k == 0 {
			return 0, nil, false
		}
		n = 1
		if k < len(s) && s[k] == ',' {
			j := k + 1
			for j < len(s) && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			v, err := strconv.Atoi(string(s[k+1 : j]))
			if err != nil || j == k+1 {
				return 0, nil, false
			}
			n, k = v, j
		}
		return n, s[k:], true
	}
	old, rest, ok = side(rest)
	if !ok || !bytes.HasPrefix(rest, []byte(" +")) {
		return 0, 0, false
	}
	new, rest, ok = side(rest[2:])
	if !ok || !bytes.HasPrefix(rest, []byte(" @@")) {
		return 0, 0, false
	}
	return old, new, true
}

// start ends the current file and starts f.
func (p *diffParse) start(f diffFile) *diffFile {
	p.flush()
	p.fileBuf = f
	p.cur = &p.fileBuf
	return p.cur
}

// flush records the current file, if any.
func (p *diffParse) flush() {
	if p.cur == nil {
		return
	}
	f := *p.cur
	p.cur = nil
	p.old, p.new = 0, 0
	p.d.files++
	if len(p.d.head) < diffFilesHead {
		p.d.head = append(p.d.head, f)
		return
	}
	p.d.tail = keepLast(p.d.tail, f, diffFilesTail)
}
