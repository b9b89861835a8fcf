package main

import (
	"io"
	"os"
	"syscall"
)

// pollableStdin returns what the proxy and the gateway read the client's
// messages from on stdio: when stdin is the process's standard input and
// a pipe, the same pipe opened anew without blocking, so that the
// goroutine reading it waits in the runtime's poller rather than in a
// read that holds a thread (whose processor the scheduler then hands
// back and forth on every call: about a third fewer context switches per
// small call, see BenchmarkProxySmallCall). The pipe is opened anew,
// rather than standard input set non-blocking, because the flag belongs
// to the open file, which the process that started the proxy may share.
// Anything else (a file, a terminal, a socket, another reader, or a pipe
// /proc does not reopen) is returned as it is. done closes what was
// opened.
func pollableStdin(stdin io.Reader) (r io.Reader, done func()) {
	if f, ok := stdin.(*os.File); ok && f == os.Stdin {
		if p := reopenStdinPipe(); p != nil {
			return p, func() { p.Close() }
		}
	}
	return stdin, func() {}
}

// reopenStdinPipe returns the pipe standard input reads, opened anew for
// reading without blocking, or nil when it is not a pipe or it cannot be
// opened so.
func reopenStdinPipe() *os.File {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		return nil
	}
	// Not os.Stdin.Fd(), which would make its file blocking.
	p, err := os.OpenFile("/proc/self/fd/0", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	// The same pipe, not whatever the name reaches now.
	pi, err := p.Stat()
	if err != nil || !os.SameFile(fi, pi) {
		p.Close()
		return nil
	}
	return p
}
