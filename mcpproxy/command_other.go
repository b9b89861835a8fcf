//go:build !unix

package mcpproxy

import (
	"os/exec"
	"syscall"
)

func setProcessGroup(cmd *exec.Cmd) {}

// signalProcess kills the command: other systems have no SIGTERM to send.
func signalProcess(cmd *exec.Cmd, sig syscall.Signal) error {
	return cmd.Process.Kill()
}
