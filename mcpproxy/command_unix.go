//go:build unix

package mcpproxy

import (
	"errors"
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

// tryWrite writes what of b the server's input takes at once, without
// waiting for the server to read: n < len(b) when the pipe is full. See
// sendRaw.
func (p *processCloser) TryWrite(b []byte) (n int, err error) {
	if p.in != nil {
		return p.in.WriteSome(b)
	}
	rc, err := p.stdin.SyscallConn()
	if err != nil {
		return 0, err
	}
	werr := rc.Write(func(fd uintptr) bool {
		for {
			n, err = syscall.Write(int(fd), b)
			if !errors.Is(err, syscall.EINTR) {
				return true // done, whatever happened: no waiting
			}
		}
	})
	if n < 0 {
		n = 0
	}
	if errors.Is(err, syscall.EAGAIN) {
		err = nil // full: the rest is for later
	}
	return n, errors.Join(werr, err)
}
