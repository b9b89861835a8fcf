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

// groupAlive is false: without process groups only the command is ended.
func groupAlive(cmd *exec.Cmd) bool { return false }
