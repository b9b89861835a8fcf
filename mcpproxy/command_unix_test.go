//go:build unix

package mcpproxy

import (
	"context"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
)

// TestCommandTransportCloseEndsGroup checks that Close ends processes the
// command left in its process group when the command exits first.
func TestCommandTransportCloseEndsGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sleep 300 </dev/null >/dev/null 2>&1 & "$0"`, os.Args[0])
	cmd.Env = testkit.ChildEnv(testServerEnv + "=1")
	// The sleep dies at SIGTERM, but, no child of the test's, it stays in
	// the group as a zombie until init reaps it: Close need not wait the
	// whole terminate duration for it before it sends SIGKILL.
	ct := &CommandTransport{Command: cmd, TerminateDuration: time.Second, groupWait: 50 * time.Millisecond}
	p, err := Connect(context.Background(), ct, &Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// Killed processes are reaped by init a moment later.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(-pgid, syscall.SIGKILL) // what this test started
			t.Fatalf("process group %d still has members after Close", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
