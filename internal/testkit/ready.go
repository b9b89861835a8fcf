package testkit

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"time"
)

// StartReady starts cmd, whose output (a pipe from StdoutPipe or
// StderrPipe, taken before) is out, and waits up to wait for a line
// holding ready. It returns "" once that line came (the rest of out is
// read and dropped, so that cmd never blocks on a full pipe); else it kills
// cmd, waits for it and returns what cmd wrote (at most 64 KiB), or the
// error of Start.
func StartReady(cmd *exec.Cmd, out io.Reader, ready string, wait time.Duration) string {
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
		cmd.Process.Kill()
		<-came // its output ends
	}
	cmd.Process.Kill()
	cmd.Wait()
	return seen.String()
}
