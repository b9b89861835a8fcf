//go:build unix

package testkit

import (
	"os/exec"
	"syscall"
)

// setGroup makes cmd start in a process group of its own, whose id is its
// pid, so that killGroup reaches the processes it starts too.
func setGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup kills cmd's process group with SIGKILL, or cmd alone when it
// was not started in a group of its own.
func killGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Process.Kill()
}
