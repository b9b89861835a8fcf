package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPreviewMaxInput checks preview at and past -max-input, in process: at
// the cap the input is previewed; past it nothing is, the one line on
// standard error gives the cap and the flag, and no more than the cap and
// one byte is read, whatever the input says its size is.
func TestPreviewMaxInput(t *testing.T) {
	t.Parallel()
	bigFile := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(bigFile, []byte("["+strings.Repeat("1,", 1<<19)+"1]"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		stdin   *endlessReader // nil: "[1,2]"
		code    int
		want    string // in stdout when code is 0, in stderr otherwise
		maxRead int64  // most bytes stdin may hand out (endless stdin only)
	}{
		{name: "at the cap", args: []string{"-max-input", "5"}, want: "r1 = array(len=2, bytes=5 B, [1, 2])"},
		{name: "one byte past the cap", args: []string{"-max-input", "4", "-"}, code: 1,
			want: "agentvalues: preview: standard input is too large: more than the cap of 4 bytes; nothing was previewed: raise the cap with -max-input BYTES (0: no cap)\n"},
		{name: "file past the cap is not read", args: []string{"-max-input", "1000", bigFile}, code: 1,
			want: "agentvalues: preview: " + bigFile + " is too large: 1048579 bytes (1 MiB), more than the cap of 1000 bytes; nothing was previewed: raise the cap with -max-input BYTES (0: no cap)\n"},
		{name: "0 means no cap", args: []string{"-max-input", "0", bigFile}, want: "r1 = array(len=524289, "},
		{name: "default cap", args: []string{bigFile}, want: "r1 = array(len=524289, "},
		{name: "endless stdin", args: []string{"-max-input", "100000"}, stdin: &endlessReader{size: -1}, code: 1, maxRead: 100001,
			want: "agentvalues: preview: standard input is too large: more than the cap of 100000 bytes (97.66 KiB); nothing was previewed"},
		{name: "endless stdin that says it is small", args: []string{"-max-input", "100000"}, stdin: &endlessReader{size: 10}, code: 1, maxRead: 100001,
			want: "agentvalues: preview: standard input is too large: more than the cap of 100000 bytes (97.66 KiB); nothing was previewed"},
		{name: "negative cap", args: []string{"-max-input", "-1"}, code: 2, want: "agentvalues: bad usage: -max-input -1: want a number of bytes, or 0 for no cap\nusage:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdin io.Reader = strings.NewReader("[1,2]")
			if tc.stdin != nil {
				stdin = tc.stdin
			}
			var out, errs bytes.Buffer
			code := run(append([]string{"preview"}, tc.args...), stdin, &out, &errs)
			got := out.String()
			if code != 0 {
				got = errs.String()
			}
			if code != tc.code || !strings.HasPrefix(got, tc.want) {
				t.Errorf("exit %d, output %q; want exit %d and %q", code, got, tc.code, tc.want)
			}
			if code == 1 && (out.Len() != 0 || strings.Count(errs.String(), "\n") != 1) {
				t.Errorf("refused input: stdout %q, stderr %q; want nothing and one line", out.String(), errs.String())
			}
			if tc.stdin != nil && tc.stdin.n > tc.maxRead {
				t.Errorf("read %d bytes of standard input, want at most %d", tc.stdin.n, tc.maxRead)
			}
		})
	}
}

// An endlessReader hands out 'y' bytes and counts them. As a standard
// input it says, through Stat, that it is a regular file of size bytes,
// unless size is negative.
//
// It is endless for what reads it up to a cap below endlessGiveUp; past
// that it fails, so that a reader that ignores its cap ends, and its test
// fails, instead of running out of memory.
type endlessReader struct {
	size int64
	n    int64 // bytes handed out
}

const endlessGiveUp = 16 << 20

func (r *endlessReader) Read(p []byte) (int, error) {
	if r.n >= endlessGiveUp {
		return 0, errors.New("endless reader: read far past the cap")
	}
	fillY(p)
	r.n += int64(len(p))
	return len(p), nil
}

// ys is the run of 'y' bytes fillY copies from.
var ys = bytes.Repeat([]byte{'y'}, 32<<10)

// fillY fills p with 'y' bytes, a run at a time: under the race detector a
// loop storing one byte at a time takes a second for 64 MiB, and the
// endless inputs hand out at least that much.
func fillY(p []byte) {
	for n := 0; n < len(p); {
		n += copy(p[n:], ys)
	}
}

func (r *endlessReader) Stat() (fs.FileInfo, error) {
	if r.size < 0 {
		return lyingInfo{mode: fs.ModeNamedPipe}, nil
	}
	return lyingInfo{size: r.size}, nil
}

// lyingInfo is the fs.FileInfo of an endlessReader.
type lyingInfo struct {
	size int64
	mode fs.FileMode
}

func (i lyingInfo) Name() string       { return "stdin" }
func (i lyingInfo) Size() int64        { return i.size }
func (i lyingInfo) Mode() fs.FileMode  { return i.mode }
func (i lyingInfo) ModTime() time.Time { return time.Time{} }
func (i lyingInfo) IsDir() bool        { return false }
func (i lyingInfo) Sys() any           { return nil }

// TestReadFileTooLarge calls the demo's read_file tool on sparse files (they
// take no disk) at and past its cap: at the cap the file is read whole,
// past it the tool fails before reading, with an error giving the path,
// the size and the cap.
func TestReadFileTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tools, err := demoTools(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int64
		want string // in the error; "" for none
	}{
		{"at the cap", demoMaxReadFile, ""},
		{"one byte past the cap", demoMaxReadFile + 1, `read_file: "one byte past the cap" is too large: 67108865 bytes (64 MiB), more than the cap of 67108864 bytes (64 MiB); its content was not returned: choose a smaller file`},
		{"8 GiB", 8 << 30, `read_file: "8 GiB" is too large: 8589934592 bytes (8 GiB), more than the cap of 67108864 bytes (64 MiB); its content was not returned: choose a smaller file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(dir, tc.name)
			if err := os.WriteFile(name, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(name)
			if err := os.Truncate(name, tc.size); err != nil {
				t.Fatal(err)
			}
			out, err := tools["read_file"].run(fmt.Appendf(nil, `{"path":%q}`, tc.name))
			switch {
			case tc.want == "" && (err != nil || int64(len(out)) != tc.size):
				t.Errorf("read %d bytes, error %v; want the file's %d bytes", len(out), err, tc.size)
			case tc.want != "" && (!errors.Is(err, errTooLarge) || err.Error() != tc.want || out != nil):
				t.Errorf("read %d bytes, error %v; want %q", len(out), err, tc.want)
			}
		})
	}
}
