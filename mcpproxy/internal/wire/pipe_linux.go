package wire

import (
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A Pipe reads and writes a pipe the runtime polls (os.Pipe's ends, a
// command's pipes, standard input or output reopened without blocking)
// with raw system calls, which do not enter the scheduler's system call
// state: its descriptor never blocks, so no call can hold a thread, and
// what the state costs is saved on every message. Chiefly, the first
// system call after the process has been idle wakes the runtime's monitor
// thread (sysmon), which sleeps while no goroutine runs: a futex wake on
// the path of every small call, and the monitor's own cycles on a core
// the peers need. Through a proxy at one call in flight that was a fifth
// of its CPU (BenchmarkProxySmallCall, with perf). What the monitor does
// for a busy process (preempting a goroutine that runs long) is asked of
// it with [Kick] where work leaves the line's goroutine.
//
// A Pipe waits as an [os.File] does, in the runtime's poller, and fails
// as one does: a closed file's error wraps [os.ErrClosed], others are an
// [*os.PathError], and the end of the stream is [io.EOF].
type Pipe struct {
	f  *os.File
	rc syscall.RawConn
}

// NewPipe returns f read and written raw, or nil when f is not a file the
// runtime polls without blocking (a regular file, a terminal, a pipe
// whose descriptor blocks): then f is to be used as it is.
func NewPipe(f *os.File) *Pipe {
	if f == nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	rc.Control(func(fd uintptr) {
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblocking = errno == 0 && flags&syscall.O_NONBLOCK != 0
	})
	if !nonblocking || !polled(f) {
		return nil
	}
	return &Pipe{f: f, rc: rc}
}

// polled reports whether the runtime polls f: only a polled file takes a
// deadline (clearing one, which nothing sets on these files, changes
// nothing).
func polled(f *os.File) bool { return f.SetDeadline(time.Time{}) == nil }

// File returns the file p reads and writes.
func (p *Pipe) File() *os.File { return p.f }

// Read reads what the pipe holds, up to len(b) bytes, waiting for some
// when it holds none.
func (p *Pipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
			switch errno {
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait for more
			default:
				return true
			}
		}
	})
	switch {
	case err != nil:
		return 0, p.fileErr("read", err)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// Write writes all of b, waiting while the pipe is full.
func (p *Pipe) Write(b []byte) (int, error) { return p.write(b, true) }

// WriteSome writes what of b the pipe takes without waiting: n < len(b)
// with a nil error when it is full. (It is not named TryWrite: a [Conn]
// gives a writer with TryWrite the semantics of a server's input.)
func (p *Pipe) WriteSome(b []byte) (int, error) { return p.write(b, false) }

func (p *Pipe) write(b []byte, wait bool) (int, error) {
	n := 0
	var errno syscall.Errno
	err := p.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(w)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return !wait // full: wait for room, or stop here
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, p.fileErr("write", err)
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
	}
	return n, nil
}

// fileErr returns the error of the file itself that made waiting on it
// fail (closed, or a deadline passed) as the file's own methods word it:
// a call of no bytes fails for the same reason.
func (p *Pipe) fileErr(op string, err error) error {
	var ferr error
	if op == "read" {
		_, ferr = p.f.Read(nil)
	} else {
		_, ferr = p.f.Write(nil)
	}
	if ferr != nil {
		return ferr
	}
	return &os.PathError{Op: op, Path: p.f.Name(), Err: err}
}

// Close closes the file.
func (p *Pipe) Close() error { return p.f.Close() }

// Kick makes one ordinary system call, which wakes the runtime's monitor
// thread if it sleeps (see [Pipe]), so that a goroutine about to run long
// is preempted on time and the goroutines waiting behind it (with
// GOMAXPROCS=1, all of them) are not held up. It is called where work
// leaves the goroutine reading a line: a large line taken apart, a
// message for the SDK, a call sent from a worker; it costs about a
// microsecond, and more when the monitor slept.
func Kick() { syscall.Syscall(syscall.SYS_GETPPID, 0, 0, 0) }
