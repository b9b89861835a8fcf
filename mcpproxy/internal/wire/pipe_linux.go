package wire

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// A Pipe reads and writes a pipe the runtime polls (os.Pipe's ends, a
// command's pipes, standard input or output opened anew without blocking)
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
// The pipe's open file must be the process's own, and stay non-blocking:
// a raw call on a descriptor made blocking behind its back (by another
// process sharing it, or by [os.File.Fd]) would hold a thread and its
// processor, and could stall the whole process. So [NewPipe] refuses the
// standard descriptors, and the proxy takes raw only the pipes it makes
// or opens itself.
//
// A Pipe waits as an [os.File] does, in the runtime's poller, and fails
// as one does for a read or write: a closed file's error wraps
// [os.ErrClosed], others are an [*os.PathError], and the end of the
// stream is [io.EOF]. Under the race detector it reports what it reads
// and writes as ordered after every write before it, as the syscall
// package does, but not the buffer's bytes themselves.
type Pipe struct {
	f  *os.File
	rc syscall.RawConn

	// The state of a read and a write, and their callbacks, made once
	// (a callback made on every call, and its state, would be
	// allocated on every call).
	rmu   sync.Mutex
	rbuf  []byte
	rn    uintptr
	rerr  syscall.Errno
	rdo   func(fd uintptr) bool
	wmu   sync.Mutex
	wbuf  []byte
	wn    int
	wwait bool
	werr  syscall.Errno
	wdo   func(fd uintptr) bool
}

// NewPipe returns f read and written raw, or nil when f is not a pipe the
// runtime polls without blocking (a regular file, a terminal, a pipe
// whose descriptor blocks), or is a standard descriptor (0, 1, 2), whose
// open file other processes share: then f is to be used as it is. f's
// deadlines, which nothing sets on such a pipe, are cleared.
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
	ok := false
	rc.Control(func(fd uintptr) {
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		ok = fd > 2 && errno == 0 && flags&syscall.O_NONBLOCK != 0
	})
	// Only a file the runtime polls takes a deadline: waiting on one it
	// does not poll fails at once.
	if !ok || f.SetDeadline(time.Time{}) != nil {
		return nil
	}
	p := &Pipe{f: f, rc: rc}
	p.rdo = p.readRaw
	p.wdo = p.writeRaw
	return p
}

// File returns the file p reads and writes.
func (p *Pipe) File() *os.File { return p.f }

// Read reads what the pipe holds, up to len(b) bytes, waiting for some
// when it holds none.
func (p *Pipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return p.f.Read(b)
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	p.rbuf = b
	err := p.rc.Read(p.rdo)
	n, errno := p.rn, p.rerr
	p.rbuf, p.rn, p.rerr = nil, 0, 0
	switch {
	case err != nil:
		return 0, p.fileErr("read", err)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	ioAcquire()
	return int(n), nil
}

// readRaw is Read's callback: one read of p.rbuf, or false to wait.
func (p *Pipe) readRaw(fd uintptr) bool {
	b := p.rbuf
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
		switch errno {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait for more
		}
		p.rn, p.rerr = n, errno
		return true
	}
}

// Write writes all of b, waiting while the pipe is full.
func (p *Pipe) Write(b []byte) (int, error) { return p.write(b, true) }

// WriteSome writes what of b the pipe takes without waiting: n < len(b)
// with a nil error when it is full. (It is not named TryWrite: a [Conn]
// gives a writer with TryWrite the semantics of a server's input.)
func (p *Pipe) WriteSome(b []byte) (int, error) { return p.write(b, false) }

func (p *Pipe) write(b []byte, wait bool) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	ioRelease()
	p.wbuf, p.wwait = b, wait
	err := p.rc.Write(p.wdo)
	n, errno := p.wn, p.werr
	p.wbuf, p.wn, p.werr = nil, 0, 0
	switch {
	case err != nil:
		return n, p.fileErr("write", err)
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
	}
	return n, nil
}

// writeRaw is write's callback: it writes what is left of p.wbuf, and
// reports false to wait for room when it must.
func (p *Pipe) writeRaw(fd uintptr) bool {
	b := p.wbuf
	for p.wn < len(b) {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[p.wn])), uintptr(len(b)-p.wn))
		switch errno {
		case 0:
			p.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return !p.wwait // full: wait for room, or stop here
		default:
			p.werr = errno
			return true
		}
	}
	return true
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
// leaves the goroutine reading a line or that goroutine is about to take
// a large one; it costs about a microsecond, and more when the monitor
// slept.
func Kick() { syscall.Syscall(syscall.SYS_GETPPID, 0, 0, 0) }
