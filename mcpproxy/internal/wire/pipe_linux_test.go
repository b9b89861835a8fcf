package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// newPipes returns both ends of an os.Pipe read and written raw.
func newPipes(t *testing.T) (r, w *Pipe) {
	t.Helper()
	rf, wf, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rf.Close(); wf.Close() })
	r, w = NewPipe(rf), NewPipe(wf)
	if r == nil || w == nil {
		t.Fatalf("NewPipe of os.Pipe's ends: %v, %v", r, w)
	}
	return r, w
}

// TestPipeCarries: what is written raw arrives whole and in order, through
// a pipe far smaller than the data (each side waits for the other in the
// runtime's poller), in writes and reads of every size, and the reader
// sees the end of the stream when the writer closes.
func TestPipeCarries(t *testing.T) {
	t.Parallel()
	r, w := newPipes(t)
	data := make([]byte, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	werr := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(3, 4))
		rest := data
		for len(rest) > 0 {
			n := min(len(rest), 1+rng.IntN(300<<10))
			if m, err := w.Write(rest[:n]); err != nil || m != n {
				werr <- errors.Join(err, errors.New("short write"))
				return
			}
			rest = rest[n:]
		}
		werr <- w.Close()
	}()
	var got bytes.Buffer
	buf := make([]byte, 200<<10)
	for {
		n, err := r.Read(buf[:1+rng.IntN(len(buf))])
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read after %d bytes: %v", got.Len(), err)
		}
		if n == 0 {
			t.Fatal("read 0 bytes without an error")
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("read %d bytes, not the %d written", got.Len(), len(data))
	}
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v; want 0, nil", n, err)
	}
}

// TestPipeWriteSome: WriteSome writes what a full pipe takes and returns,
// with no error, rather than waiting; what it wrote reads back.
func TestPipeWriteSome(t *testing.T) {
	t.Parallel()
	r, w := newPipes(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, past a pipe's 64 KiB
	n, err := w.WriteSome(data)
	if err != nil || n <= 0 || n >= len(data) {
		t.Fatalf("WriteSome of %d bytes to an empty pipe = %d, %v; want part of it and no error", len(data), n, err)
	}
	if m, err := w.WriteSome(data[n:]); m != 0 || err != nil {
		t.Fatalf("WriteSome to a full pipe = %d, %v; want 0, nil", m, err)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, data[:n]) {
		t.Fatalf("read back %v: not what WriteSome wrote", err)
	}
}

// TestPipeErrors: a pipe fails as its file would. Closed, a read or write
// fails with os.ErrClosed, a read waiting for data among them; writing to
// a pipe no one reads fails with EPIPE (and does not kill the process).
func TestPipeErrors(t *testing.T) {
	t.Parallel()
	r, w := newPipes(t)
	read := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		read <- err
	}()
	r.Close() // before or while the read waits: either way it fails so
	if err := <-read; !errors.Is(err, os.ErrClosed) {
		t.Errorf("read of a closed pipe: %v, want os.ErrClosed", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write with the reader closed: %v, want EPIPE", err)
	}
	var perr *os.PathError
	if _, err := w.WriteSome([]byte("x")); !errors.As(err, &perr) || perr.Op != "write" {
		t.Errorf("WriteSome with the reader closed: %v, want an *os.PathError of write", err)
	}
	w.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("write of a closed pipe: %v, want os.ErrClosed", err)
	}
}

// TestNewPipeRefuses: only a pipe the runtime polls without blocking is
// taken raw; a pipe whose descriptor blocks, a regular file and nil are
// not (a raw call on a blocking descriptor could hold a thread and its
// processor).
func TestNewPipeRefuses(t *testing.T) {
	t.Parallel()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	br, bw := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer br.Close()
	defer bw.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for name, f := range map[string]*os.File{"blocking read end": br, "blocking write end": bw, "regular file": file, "nil": nil} {
		if p := NewPipe(f); p != nil {
			t.Errorf("NewPipe(%s) = %v, want nil", name, p)
		}
	}
}

// kickEnv makes the test binary run TestKickPreempts's child.
const kickEnv = "WIRE_TEST_KICK_CHILD"

// TestKickPreempts: with GOMAXPROCS=1, a message a connection reads raw
// after the process has been idle (the runtime's monitor thread asleep)
// and hands to the layer above, which then runs long, does not hold up
// the other goroutines: the hand-off kicks the monitor awake, and it
// preempts the long run. Without the kick the monitor sleeps on (up to a
// minute) and the goroutine waiting behind the long run never runs; the
// child reports that after 20 s.
//
// The parent waits 100 ms between the child's "ready" and the message,
// for the child's monitor to fall asleep: on a slow machine it may still
// be awake, and a missing kick then goes unseen, but a kick present
// passes whatever the timing.
func TestKickPreempts(t *testing.T) {
	if os.Getenv(kickEnv) == "1" {
		kickChild()
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKickPreempts$")
	cmd.Env = append(os.Environ(), kickEnv+"=1", "GOMAXPROCS=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("child: %q, %v; stderr: %s", lines.Text(), lines.Err(), stderr.Bytes())
	}
	time.Sleep(100 * time.Millisecond) // see above: only how likely a missing kick is seen
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || lines.Text() != "preempted" {
		t.Fatalf("child: %q, %v; stderr: %s", lines.Text(), lines.Err(), stderr.Bytes())
	}
}

// kickChild is TestKickPreempts's child: it reads a request from its
// standard input, reopened without blocking and read raw, and runs long
// on receiving it, until a goroutine it readied runs.
func kickChild() {
	f, err := os.OpenFile("/proc/self/fd/0", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		fmt.Println("reopen:", err)
		os.Exit(1)
	}
	if NewPipe(f) == nil { // then NewConn would read it as it is
		fmt.Println("stdin is not read raw")
		os.Exit(1)
	}
	c := NewConn(f, io.Discard, nil, -1, true, nil)
	start := make(chan struct{})
	var ran atomic.Bool
	go func() {
		<-start
		ran.Store(true)
	}()
	fmt.Println("ready")
	if _, err := c.Read(context.Background()); err != nil {
		fmt.Println("read:", err)
		os.Exit(1)
	}
	close(start) // readies the goroutine, which only a preemption lets run
	deadline := time.Now().Add(20 * time.Second)
	for !ran.Load() {
		if time.Now().After(deadline) {
			fmt.Println("not preempted")
			os.Exit(1)
		}
	}
	fmt.Println("preempted")
	os.Exit(0)
}
