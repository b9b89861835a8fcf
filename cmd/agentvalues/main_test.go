package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// runMainEnv, set in the environment of the test binary, makes it run as
// the agentvalues command, so tests can start the real command as a child.
const runMainEnv = "AGENTVALUES_TEST_RUN_MAIN"

// testHelpers are programs other than the command that the test binary runs
// as, when runMainEnv is set and its first argument names one.
var testHelpers = map[string]func(args []string) int{}

// beforeChildExit, if set, runs in the test binary run as the command (or a
// helper) after it returns and before the process exits.
var beforeChildExit func()

// terminateEnv, set in the environment of the test binary run as the
// command, is the proxy's terminateDuration, as time.ParseDuration reads it.
const terminateEnv = "AGENTVALUES_TEST_TERMINATE"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		if d, err := time.ParseDuration(os.Getenv(terminateEnv)); err == nil {
			terminateDuration = d
		}
		var code int
		if len(os.Args) > 1 && testHelpers[os.Args[1]] != nil {
			code = testHelpers[os.Args[1]](os.Args[2:])
		} else {
			code = run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		}
		if beforeChildExit != nil {
			beforeChildExit()
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestPreview(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"json array", "[1, 2, 3]\n", "r1 = array(len=3, bytes=9 B, [1, 2, 3])"},
		{"number output stays text", "42", `r1 = text(len=2 B, lines=1) "42"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := run([]string{"preview"}, strings.NewReader(tc.in), &out, &errs); code != 0 {
				t.Fatalf("exit %d: %s", code, errs.String())
			}
			got := out.String()
			if !strings.HasPrefix(got, tc.want+"\n[r1 holds the full value") || !strings.HasSuffix(got, "]\n") {
				t.Errorf("preview printed %q, want %q and the hint", got, tc.want)
			}
		})
	}
}

func TestPreviewFile(t *testing.T) {
	t.Parallel()
	name := t.TempDir() + "/big.txt"
	if err := os.WriteFile(name, []byte("FIRST LINE\n"+strings.Repeat("x", 5000)+"\nLAST LINE"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := run([]string{"preview", name}, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if !strings.HasPrefix(out.String(), `r1 = text(len=`) || !strings.Contains(out.String(), `FIRST LINE`) || !strings.Contains(out.String(), `LAST LINE`) {
		t.Errorf("preview of a file: %q", out.String())
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"frobnicate"}, {"proxy"}, {"proxy", "-threshold", "x", "--", "true"}, {"preview", "a", "b"},
		{"proxy", "-x"}, {"gateway", "-nope"}, {"gateway"}, {"demo", "a", "b"}, {"demo", "-x"}, {"help", "frobnicate"}, {"version", "-x"}} {
		var out, errs bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage:") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and the usage", args, code, errs.String())
		}
	}
}

// TestHelp checks that -h, -help and --help, on the command and on each
// subcommand, print the usage to standard output and exit 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // in the output
	}{
		{[]string{"-h"}, "  agentvalues gateway [flags] --config FILE"},
		{[]string{"--help"}, "  agentvalues version"},
		{[]string{"help"}, "  agentvalues proxy [flags] -- COMMAND"},
		{[]string{"help", "proxy"}, "usage: agentvalues proxy [flags] -- COMMAND [ARGS...]\n"},
		{[]string{"proxy", "-h"}, "  -threshold bytes\n"},
		{[]string{"proxy", "--help"}, "usage: agentvalues proxy [flags] -- COMMAND [ARGS...]\n"},
		{[]string{"proxy", "-threshold", "5", "-help", "--", "true"}, "usage: agentvalues proxy"},
		{[]string{"gateway", "-h"}, "  -config file\n"},
		{[]string{"gateway", "--help"}, "usage: agentvalues gateway [flags] --config FILE\n"},
		{[]string{"demo", "-h"}, "usage: agentvalues demo [DIR]\n"},
		{[]string{"demo", "--help"}, "usage: agentvalues demo [DIR]\n"},
		{[]string{"preview", "-h"}, "  -max-input bytes\n"},
		{[]string{"version", "-h"}, "usage: agentvalues version\n"},
		{[]string{"help", "version"}, "usage: agentvalues version\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errs)
			if code != 0 || errs.Len() > 0 || !strings.Contains(out.String(), tc.want) {
				t.Errorf("exit %d, stderr %q, stdout %q; want 0, nothing and %q", code, errs.String(), out.String(), tc.want)
			}
		})
	}
}

// syncWriter is a strings.Builder safe for a child process's output.
type syncWriter struct {
	mu      sync.Mutex
	b       strings.Builder
	written chan struct{} // closed at the next write
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written != nil {
		close(w.written)
		w.written = nil
	}
	return w.b.Write(p)
}

// waitFor reports whether what has been written holds s, waiting for
// further writes until it does or ctx is done: a child's stderr reaches
// the writer through a pipe, after the child has gone on.
func (w *syncWriter) waitFor(ctx context.Context, s string) bool {
	for {
		w.mu.Lock()
		if strings.Contains(w.b.String(), s) {
			w.mu.Unlock()
			return true
		}
		if w.written == nil {
			w.written = make(chan struct{})
		}
		written := w.written
		w.mu.Unlock()
		select {
		case <-written:
		case <-ctx.Done():
			return false
		}
	}
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
