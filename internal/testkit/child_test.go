package testkit

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestChildEnv(t *testing.T) {
	t.Setenv("GORACE", "halt_on_error=1")
	env := ChildEnv("TESTKIT_A=1", "GORACE=history_size=2")
	// exec.Cmd keeps the last of duplicates.
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	if last["TESTKIT_A"] != "1" || last["GORACE"] != "history_size=2" {
		t.Errorf("kv does not win: TESTKIT_A=%q GORACE=%q", last["TESTKIT_A"], last["GORACE"])
	}
	if !slices.Contains(env, "GORACE=atexit_sleep_ms=0 halt_on_error=1") {
		t.Errorf("env lacks the race detector's options, the test's after the child's: %q", env)
	}
}

// childEnv makes the test binary, run by TestChild, report steps: forever,
// or, set to "early", two and then exit with status 3.
const childEnv = "TESTKIT_TEST_CHILD"

func TestChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "":
	case "early":
		fmt.Print("step 0\nstep 1\n")
		os.Exit(3)
	default:
		for i := 0; ; i++ {
			fmt.Printf("noise %d\nstep %d\n", i, i)
			time.Sleep(time.Millisecond)
		}
	}
	c := StartChild(t, ChildCommand("TestChild", childEnv+"=forever"), "step ")
	got := c.Reports(t, 3, time.Minute)
	if !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("Reports = %q, want the first three steps", got)
	}
	rest := c.Kill(t)
	for i, r := range rest {
		if r != strconv.Itoa(3+i) {
			t.Fatalf("after Reports, Kill returned %q: want the steps from 3 on", rest)
		}
	}
	if err := c.kill(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the child ended with %v, want killed", err)
	}

	// A child that exits before it has reported enough fails the test at
	// once, saying how it ended.
	c = StartChild(t, ChildCommand("TestChild", childEnv+"=early"), "step ")
	start := time.Now()
	msg := fatalOf(func(t testing.TB) { c.Reports(t, 5, time.Minute) }, t)
	if !strings.Contains(msg, "exited after 2 of 5 reports: exit status 3") || time.Since(start) > 30*time.Second {
		t.Errorf("after %v, Reports failed with %q", time.Since(start), msg)
	}
}

// fatalOf runs f with a testing.TB whose Fatalf ends f, and returns the
// message f failed with, or "".
func fatalOf(f func(testing.TB), t testing.TB) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			m, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			msg = string(m)
		}
	}()
	f(fatalTB{t})
	return ""
}

type fatal string

// fatalTB is t, but its Fatalf panics with the message.
type fatalTB struct{ testing.TB }

func (fatalTB) Helper() {}

func (fatalTB) Fatalf(format string, args ...any) { panic(fatal(fmt.Sprintf(format, args...))) }
