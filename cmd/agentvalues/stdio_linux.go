package main

import (
	"io"
	"os"
	"syscall"

	"github.com/agentvalues/values/mcpproxy"
)

// pollableStdin returns what the proxy and the gateway read the client's
// messages from on stdio: when stdin is the process's standard input and
// a pipe, the same pipe opened anew without blocking, so that the
// goroutine reading it waits in the runtime's poller rather than in a
// read that holds a thread (whose processor the scheduler then hands
// back and forth on every call: about a third fewer context switches per
// small call, see BenchmarkProxySmallCall), and read with raw system
// calls (mcpproxy.RawPipe; the line transport would see a pipe itself,
// but reads the client through the reader that replays its first
// message). The pipe is opened anew, rather than standard input set
// non-blocking, because the flag belongs to the open file, which the
// process that started the proxy may share. Anything else (a file, a
// terminal, a socket, another reader, or a pipe /proc does not reopen) is
// returned as it is. done closes what was opened.
func pollableStdin(stdin io.Reader) (r io.Reader, done func()) {
	if f, ok := stdin.(*os.File); ok && f == os.Stdin {
		if p := reopenPipe(os.Stdin, "/dev/stdin", os.O_RDONLY); p != nil {
			return mcpproxy.RawPipe(p), func() { p.Close() }
		}
	}
	return stdin, func() {}
}

// pollableStdout is pollableStdin for the standard output the proxy and
// the gateway write the client's messages to: a pipe is opened anew for
// writing without blocking, so that a write waits in the runtime's poller
// when the client does not read, written with raw system calls.
// done closes what was opened; every write has ended by then (each waits
// until the pipe has taken all of it).
func pollableStdout(stdout io.Writer) (w io.Writer, done func()) {
	if f, ok := stdout.(*os.File); ok && f == os.Stdout {
		if p := reopenPipe(os.Stdout, "/dev/stdout", os.O_WRONLY); p != nil {
			return mcpproxy.RawPipe(p), func() { p.Close() }
		}
	}
	return stdout, func() {}
}

// reopenPipe returns the pipe f reads or writes, opened anew by name (its
// /dev name, which errors then show) in mode without blocking, or nil when
// it is not a pipe or it cannot be opened so (a pipe whose other end is
// closed, for one).
func reopenPipe(f *os.File, name string, mode int) *os.File {
	fi, err := f.Stat()
	if err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		return nil
	}
	// Not f.Fd(), which would make its file blocking.
	p, err := os.OpenFile(name, mode|syscall.O_NONBLOCK, 0)
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
