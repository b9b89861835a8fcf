package testkit

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// ChildEnv returns the environment for a child process: the test's, then kv
// ("NAME=value"), which win over it. A child built with the race detector
// skips the detector's sleep at exit (GORACE atexit_sleep_ms, one second by
// default), which every child that exits on its own would otherwise add to
// its test; GORACE options the test was given still apply, after it.
func ChildEnv(kv ...string) []string {
	gorace := "atexit_sleep_ms=0"
	if g := os.Getenv("GORACE"); g != "" {
		gorace += " " + g
	}
	// exec.Cmd keeps the last of duplicate variables.
	env := append(os.Environ(), "GORACE="+gorace)
	return append(env, kv...)
}

// ChildCommand returns a command that runs the test binary again, running
// only the top-level test named test, once, with the environment
// ChildEnv(kv...) and its standard error going to the test's. The test
// tells it is the child by a variable of kv.
func ChildCommand(test string, kv ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = ChildEnv(kv...)
	cmd.Stderr = os.Stderr
	return cmd
}

// A Child is a process that works until it is killed, reporting each step
// it completes as one line of its standard output that begins with a
// prefix. Its methods are called from the test's goroutine.
type Child struct {
	cmd     *exec.Cmd
	reports chan string // closed when the child's output ends
	waited  bool
	waitErr error // how the child ended, once waited
}

// StartChild starts cmd in a process group of its own (on Unix), whose
// Stdout must be unset, and collects the lines of its standard output that
// begin with prefix; other lines are dropped. The child and its group are
// killed when the test ends, if it is still running.
func StartChild(t testing.TB, cmd *exec.Cmd, prefix string) *Child {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, reports: make(chan string)}
	go func() {
		defer close(c.reports)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if report, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				c.reports <- report
			}
		}
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

// Reports waits until the child has reported n more steps, at most d in
// all, and returns them without the prefix. It fails the test, killing the
// child, if the child exits first or d passes.
func (c *Child) Reports(t testing.TB, n int, d time.Duration) []string {
	t.Helper()
	var got []string
	timeout := time.After(d)
	for len(got) < n {
		select {
		case r, ok := <-c.reports:
			if !ok {
				t.Fatalf("the child exited after %d of %d reports: %v", len(got), n, c.kill())
			}
			got = append(got, r)
		case <-timeout:
			c.kill()
			t.Fatalf("the child made %d of %d reports in %v", len(got), n, d)
		}
	}
	return got
}

// Kill kills the child and its process group with SIGKILL, waits for it,
// and returns the steps it reported that Reports did not return.
func (c *Child) Kill(t testing.TB) []string {
	t.Helper()
	if c.waited {
		t.Fatalf("killing the child: it has already been waited for")
	}
	killGroup(c.cmd)
	var rest []string
	for r := range c.reports {
		rest = append(rest, r)
	}
	c.kill()
	return rest
}

// kill kills the child and its group if it has not been waited for, waits
// for it and returns how it ended.
func (c *Child) kill() error {
	if c.waited {
		return c.waitErr
	}
	killGroup(c.cmd)
	// Wait closes the pipe: only once the reader is done with it.
	for range c.reports {
	}
	c.waitErr, c.waited = c.cmd.Wait(), true
	return c.waitErr
}
