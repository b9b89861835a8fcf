//go:build linux

package mcpproxy

import (
	"os"
	"syscall"
)

// pipeSize is the buffer size asked for the pipe that carries the
// server's output. Linux pipes hold 64 KiB by default, so a 20 MiB result
// takes 320 round trips between the two processes; 1 MiB (the default
// /proc/sys/fs/pipe-max-size) cuts that to 20.
const pipeSize = 1 << 20

// growPipe enlarges the pipe behind f if the system allows; failing is
// harmless.
func growPipe(f *os.File) {
	const fSetPipeSize = 1031 // F_SETPIPE_SZ
	if sc, err := f.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) {
			syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, pipeSize)
		})
	}
}
