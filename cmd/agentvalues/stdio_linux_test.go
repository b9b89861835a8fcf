package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// stdinArg and stdoutArg make the test binary report what pollableStdin
// (pollableStdout) makes of its standard input (output): whether it was
// reopened, whether it is read (written) with raw system calls, whether
// what it returns does not block, and whether the standard file's own
// descriptor still blocks. The stdin report also gives the first line read
// through it, on stdout; the stdout report writes a line through it, and
// reports on stderr.
const (
	stdinArg  = "test-stdin"
	stdoutArg = "test-stdout"
)

func init() {
	testHelpers[stdinArg] = stdinReport
	testHelpers[stdoutArg] = stdoutReport
}

// stdioReport describes what pollableStdin or pollableStdout returned (rw)
// for the standard file std, whose descriptor is fd.
func stdioReport(rw any, std *os.File, fd uintptr) string {
	nonblock := func(fd uintptr) bool {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		return errno == 0 && flags&syscall.O_NONBLOCK != 0
	}
	f, _ := rw.(*os.File)
	raw := false
	if p, ok := rw.(interface{ File() *os.File }); ok {
		f, raw = p.File(), true
	}
	reopened := f != nil && f != std
	nonblocking := false
	if f != nil {
		// Not f.Fd(), which would make f blocking.
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { nonblocking = nonblock(fd) })
		}
	}
	return fmt.Sprintf("reopened=%v raw=%v nonblocking=%v std-nonblocking=%v", reopened, raw, nonblocking, nonblock(fd))
}

func stdinReport([]string) int {
	r, done := pollableStdin(os.Stdin)
	defer done()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		fmt.Println("read:", err)
		return 1
	}
	fmt.Printf("%s line=%q\n", stdioReport(r, os.Stdin, 0), line)
	return 0
}

func stdoutReport([]string) int {
	w, done := pollableStdout(os.Stdout)
	if _, err := io.WriteString(w, "hello\n"); err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		return 1
	}
	report := stdioReport(w, os.Stdout, 1)
	done()
	fmt.Fprintln(os.Stderr, report)
	return 0
}

// blockingPipe returns a pipe whose ends block, as a client's usually do.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestPollableStdin: the proxy reads a client on a pipe through the same
// pipe opened anew without blocking (its reader waits in the runtime's
// poller, not in a thread) and read raw, leaving the file of its standard
// input, which its parent may share, as it was; standard input that is a
// file is read as it is.
func TestPollableStdin(t *testing.T) {
	t.Parallel()
	run := func(stdin *os.File) string {
		cmd := exec.Command(os.Args[0], stdinArg)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		cmd.Stdin = stdin
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}

	r, w := blockingPipe(t)
	if _, err := io.WriteString(w, "hello\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	want := `reopened=true raw=true nonblocking=true std-nonblocking=false line="hello\n"`
	if got := run(r); got != want {
		t.Errorf("stdin a pipe: got %s, want %s", got, want)
	}

	name := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(name, []byte("from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	want = `reopened=false raw=false nonblocking=false std-nonblocking=false line="from a file\n"`
	if got := run(file); got != want {
		t.Errorf("stdin a file: got %s, want %s", got, want)
	}
}

// TestPollableStdout: the proxy writes to a client on a pipe through the
// same pipe opened anew without blocking, written raw, and leaves its
// standard output's file as it was; standard output that is a file is
// written as it is. What is written arrives either way.
func TestPollableStdout(t *testing.T) {
	t.Parallel()
	run := func(stdout *os.File) string {
		cmd := exec.Command(os.Args[0], stdoutArg)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		cmd.Stdout = stdout
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %s", err, stderr.Bytes())
		}
		return strings.TrimSpace(stderr.String())
	}

	r, w := blockingPipe(t)
	want := `reopened=true raw=true nonblocking=true std-nonblocking=false`
	if got := run(w); got != want {
		t.Errorf("stdout a pipe: got %s, want %s", got, want)
	}
	w.Close()
	if got, err := io.ReadAll(r); err != nil || string(got) != "hello\n" {
		t.Errorf("stdout a pipe: read %q, %v; want %q", got, err, "hello\n")
	}

	name := filepath.Join(t.TempDir(), "out")
	file, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	want = `reopened=false raw=false nonblocking=false std-nonblocking=false`
	if got := run(file); got != want {
		t.Errorf("stdout a file: got %s, want %s", got, want)
	}
	if got, err := os.ReadFile(name); err != nil || string(got) != "hello\n" {
		t.Errorf("stdout a file: wrote %q, %v; want %q", got, err, "hello\n")
	}
}
