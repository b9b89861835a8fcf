//go:build unix

package mcpproxy

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command in a process group of its own, so that
// the signals sent at shutdown also reach the processes it starts (npx, for
// one, runs the server as a child).
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// signalProcess sends sig to the command's process group.
func signalProcess(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		return syscall.Kill(-cmd.Process.Pid, sig)
	}
	return cmd.Process.Signal(sig)
}

// groupAlive reports whether the command's process group has members left.
func groupAlive(cmd *exec.Cmd) bool {
	return cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid && syscall.Kill(-cmd.Process.Pid, 0) == nil
}
