package testkit

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"time"
)

// StartReady starts cmd in a process group of its own (on Unix), whose
// output (a pipe from StdoutPipe or StderrPipe, taken before) is out, and
// waits up to wait for a line holding ready. It returns "" once that line
// came (the rest of out is read and dropped, so that cmd never blocks on a
// full pipe): the caller ends cmd with [KillGroup]. Else it kills cmd's
// group, waits for cmd and returns what cmd wrote (at most 64 KiB), or the
// error of Start.
func StartReady(cmd *exec.Cmd, out io.Reader, ready string, wait time.Duration) string {
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	came := make(chan bool, 1)
	var seen strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if seen.Len() < 64<<10 {
				seen.WriteString(sc.Text() + "\n")
			}
			if strings.Contains(sc.Text(), ready) {
				came <- true
				for sc.Scan() {
				}
				return
			}
		}
		came <- false
	}()
	select {
	case ok := <-came:
		if ok {
			return ""
		}
	case <-time.After(wait):
		killGroup(cmd)
		<-came // its output ends
	}
	KillGroup(cmd)
	return seen.String()
}

// KillGroup kills a command started by [StartReady] or [StartChild] and
// every process of its process group (those it started and that did not
// leave the group: npx's node, a shell's commands) with SIGKILL, and
// waits for the command. Killing the command alone would leave such a
// process running, holding its port or files, after the test.
func KillGroup(cmd *exec.Cmd) error {
	killGroup(cmd)
	return cmd.Wait()
}
