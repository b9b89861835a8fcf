//go:build unix

package testkit

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestKillGroup starts a shell that starts a process of its own (as npx
// starts node) through StartReady and StartChild, ends it as the tests do,
// and checks that the shell's child has ended too: it holds the write end
// of a pipe, whose read end sees EOF only once every holder has exited.
func TestKillGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, cmd *exec.Cmd) // starts cmd, waits for "ready" and ends it
	}{
		{"StartReady and KillGroup", func(t *testing.T, cmd *exec.Cmd) {
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if msg := StartReady(cmd, out, "ready", time.Minute); msg != "" {
				t.Fatalf("the shell did not start: %s", msg)
			}
			if err := KillGroup(cmd); err == nil {
				t.Errorf("the shell was not killed")
			}
		}},
		{"StartChild and Kill", func(t *testing.T, cmd *exec.Cmd) {
			c := StartChild(t, cmd, "")
			c.Reports(t, 1, time.Minute)
			c.Kill(t)
		}},
		{"StartChild and the test's end", func(t *testing.T, cmd *exec.Cmd) {
			t.Run("child", func(t *testing.T) { // its cleanup kills the child
				StartChild(t, cmd, "").Reports(t, 1, time.Minute)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// The shell's background sleep inherits descriptor 3 (its output goes
			// elsewhere, so that reading the shell's ends) and stays in
			// the shell's process group (a shell without job control).
			cmd := exec.Command("sh", "-c", "sleep 100000 >/dev/null & echo ready; wait")
			cmd.ExtraFiles = []*os.File{w}
			tc.start(t, cmd)
			w.Close()
			// Not a timing: a process that outlives the group's kill holds the
			// pipe forever; this bounds how long the test waits to say so.
			r.SetReadDeadline(time.Now().Add(time.Minute))
			if n, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Errorf("the shell's child still holds its pipe after the shell was killed (read %d, %v)", n, err)
			}
		})
	}
}
