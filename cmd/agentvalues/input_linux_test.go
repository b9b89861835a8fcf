package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
)

// endlessCap is the -max-input of TestPreviewEndlessInput: large beside
// what the command needs without input, so that holding it once, or twice,
// shows in the peak memory of the command.
const endlessCap = 64 << 20

// TestPreviewEndlessInput runs the built command on endless input with a
// small cap: /dev/zero named as the FILE, and a pipe on standard input that
// a goroutine writes to forever. The command must stop reading at the cap,
// exit with status 1 and one line naming the cap and the flag, and hold no
// more than the cap and a small buffer.
//
// Memory is measured against two runs of the same binary, since the race
// detector triples what a byte read costs: the command on 5 bytes of input,
// and holdInput holding exactly the cap, read from /dev/zero into one
// buffer. On endless input the command may take at most 1.25 times what
// holdInput took beyond the first: a reader that kept going, or that held
// the input twice (io.ReadAll does, for a moment, while it grows its
// buffer), fails.
func TestPreviewEndlessInput(t *testing.T) {
	capArg := []string{"-max-input", strconv.Itoa(endlessCap)}
	base, _, _ := runChild(t, []string{"preview", "-"}, strings.NewReader("[1,2]"), 0)
	held, code, stderr := runChild(t, []string{holdInputArg, strconv.Itoa(endlessCap)}, nil, 0)
	if code != 0 {
		t.Fatalf("%s: exit %d, stderr %q", holdInputArg, code, stderr)
	}
	holdCap := held - base // what holding the cap costs
	t.Logf("peak memory on 5 bytes: %d MiB; holding the cap: %d MiB", base>>20, held>>20)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin io.Reader
		input string // as the message names it
	}{
		{"/dev/zero", []string{"/dev/zero"}, nil, "/dev/zero"},
		{"endless pipe", nil, yesReader{}, "standard input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peak, code, stderr := runChild(t, append(append([]string{"preview"}, capArg...), tc.args...), tc.stdin, base+4*holdCap)
			want := fmt.Sprintf("agentvalues: preview: %s is too large: more than the cap of %s; nothing was previewed: raise the cap with -max-input BYTES (0: no cap)\n", tc.input, byteSize(endlessCap))
			if code != 1 || stderr != want {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
			}
			if peak-base > holdCap*5/4 {
				t.Errorf("peak memory %d MiB, %d MiB more than on 5 bytes of input; want at most 1.25 times the %d MiB that holding the cap takes",
					peak>>20, (peak-base)>>20, holdCap>>20)
			}
		})
	}
}

// yesReader hands out 'y' bytes forever.
type yesReader struct{}

func (yesReader) Read(p []byte) (int, error) {
	fillY(p)
	return len(p), nil
}

// peakFileEnv, set in the environment of a child with runMainEnv, names a
// file to which the child writes its peak resident memory (VmHWM) in bytes
// as it exits. The child's rusage cannot tell it: Linux counts in it the
// memory of the parent it was forked from.
const peakFileEnv = "AGENTVALUES_TEST_PEAK_FILE"

func init() {
	beforeChildExit = func() {
		if name := os.Getenv(peakFileEnv); name != "" {
			os.WriteFile(name, []byte(strconv.FormatInt(vmHWM(os.Getpid()), 10)), 0o600)
		}
	}
}

// holdInputArg makes the test binary (with runMainEnv set) read its one
// argument's number of bytes from /dev/zero into one buffer, as preview
// reads a regular file, and exit.
const holdInputArg = "test-hold-input"

func init() { testHelpers[holdInputArg] = holdInput }

func holdInput(args []string) int {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	f, err := os.Open("/dev/zero")
	if err != nil {
		return 1
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		return 1
	}
	return 0
}

// runChild runs `agentvalues ARGS` as a child on stdin (nil: none) and
// returns its peak resident memory in bytes, as it reports it, its exit
// status and its standard error. Its standard output must be empty unless it
// exits 0.
// It kills the child, and fails, if the child runs for a minute, or, with
// killAbove > 0, if its resident memory passes killAbove bytes: so a child
// that reads without end fails the test instead of running out of memory.
func runChild(t *testing.T, args []string, stdin io.Reader, killAbove int64) (peak int64, code int, stderr string) {
	t.Helper()
	peakFile := filepath.Join(t.TempDir(), "peak")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = testkit.ChildEnv(runMainEnv+"=1", peakFileEnv+"="+peakFile)
	cmd.Stdin = stdin
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	killed := make(chan string, 1)
	go func() {
		deadline := time.After(time.Minute)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-deadline:
				killed <- "still running after a minute"
				cmd.Process.Kill()
				return
			case <-tick.C:
				if hwm := vmHWM(cmd.Process.Pid); killAbove > 0 && hwm > killAbove {
					killed <- fmt.Sprintf("resident memory %d MiB, past %d MiB", hwm>>20, killAbove>>20)
					cmd.Process.Kill()
					return
				}
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	select {
	case why := <-killed:
		t.Fatalf("%q killed: %s; stderr %q", args, why, errs.String())
	default:
	}
	if err != nil && !errors.As(err, new(*exec.ExitError)) {
		t.Fatalf("%q: %v", args, err)
	}
	code = cmd.ProcessState.ExitCode()
	if code != 0 && out.Len() > 0 {
		t.Errorf("%q exited %d after printing %q", args, code, out.String())
	}
	data, err := os.ReadFile(peakFile)
	if err != nil {
		t.Fatalf("%q did not report its peak memory: %v", args, err)
	}
	if peak, err = strconv.ParseInt(string(data), 10, 64); err != nil || peak <= 0 {
		t.Fatalf("%q reported its peak memory as %q", args, data)
	}
	return peak, code, errs.String()
}

// TestReadFileEndless calls the demo's read_file tool on a named pipe that
// a goroutine writes to forever: Stat cannot tell its size, so only the
// bounded read stops it. The tool must fail with an error giving the cap.
func TestReadFileEndless(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tools, err := demoTools(root)
	if err != nil {
		t.Fatal(err)
	}
	written := make(chan int64, 1)
	go func() {
		// Opening blocks until read_file opens the other end; writing fails
		// once it has closed it.
		f, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_WRONLY, 0)
		if err != nil {
			written <- -1
			return
		}
		defer f.Close()
		n, _ := io.CopyN(f, yesReader{}, 4*demoMaxReadFile) // a reader without a cap fails on running dry
		written <- n
	}()
	type result struct {
		out []byte
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, err := tools["read_file"].run([]byte(`{"path":"fifo"}`))
		res <- result{out, err}
	}()
	select {
	case r := <-res:
		want := `read_file: "fifo" is too large: more than the cap of 67108864 bytes (64 MiB); its content was not returned: choose a smaller file`
		if !errors.Is(r.err, errTooLarge) || r.err.Error() != want || r.out != nil {
			t.Errorf("read %d bytes, error %v; want %q", len(r.out), r.err, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("read_file still reading after a minute")
	}
	select {
	case n := <-written:
		if n <= demoMaxReadFile || n >= 4*demoMaxReadFile {
			t.Errorf("the writer wrote %d bytes; want read_file to have read past its cap, and to have stopped", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the writer still blocked after a minute")
	}
}
