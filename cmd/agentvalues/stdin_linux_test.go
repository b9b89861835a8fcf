package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// stdinArg makes the test binary report what pollableStdin makes of its
// standard input: whether it was reopened, whether what it returns reads
// without blocking, whether standard input's own file still blocks, and
// the first line read through it.
const stdinArg = "test-stdin"

func init() { testHelpers[stdinArg] = stdinReport }

func stdinReport([]string) int {
	r, done := pollableStdin(os.Stdin)
	defer done()
	nonblock := func(fd uintptr) bool {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		return errno == 0 && flags&syscall.O_NONBLOCK != 0
	}
	f, reopened := r.(*os.File)
	reopened = reopened && f != os.Stdin
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		fmt.Println("read:", err)
		return 1
	}
	// Not f.Fd(), which would make f blocking.
	rc, err := f.SyscallConn()
	readsNonblocking := false
	if err == nil {
		rc.Control(func(fd uintptr) { readsNonblocking = nonblock(fd) })
	}
	fmt.Printf("reopened=%v nonblocking=%v stdin-nonblocking=%v line=%q\n", reopened, readsNonblocking, nonblock(0), line)
	return 0
}

// TestPollableStdin: the proxy reads a client on a pipe through the same
// pipe opened anew without blocking (its reader waits in the runtime's
// poller, not in a thread), leaving the file of its standard input, which
// its parent may share, as it was; standard input that is a file is read
// as it is.
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

	// A pipe whose read end blocks, as a client's usually does.
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	if _, err := io.WriteString(w, "hello\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	want := `reopened=true nonblocking=true stdin-nonblocking=false line="hello\n"`
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
	want = `reopened=false nonblocking=false stdin-nonblocking=false line="from a file\n"`
	if got := run(file); got != want {
		t.Errorf("stdin a file: got %s, want %s", got, want)
	}
}
