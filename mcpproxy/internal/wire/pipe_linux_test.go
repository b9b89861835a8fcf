package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	if m, err := w.WriteSome(data[:100]); m != 100 || err != nil {
		t.Errorf("WriteSome of 100 bytes to an empty pipe = %d, %v; want all of them", m, err)
	}
}

// TestPipeErrors: a pipe fails as its file would. Closed, a read or write
// fails with os.ErrClosed, a read already waiting for data among them;
// writing to a pipe no one reads fails with EPIPE (and does not kill the
// process).
func TestPipeErrors(t *testing.T) {
	t.Parallel()
	r, w := newPipes(t)
	read := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		read <- err
	}()
	waitIOWait(t, "wire.(*Pipe).Read")
	r.Close()
	if err := <-read; !errors.Is(err, os.ErrClosed) {
		t.Errorf("read waiting as the pipe closed: %v, want os.ErrClosed", err)
	}
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("read of a closed pipe: %v, want os.ErrClosed", err)
	}
	if _, err := r.Read(nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("read of nothing from a closed pipe: %v, want os.ErrClosed", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write with the reader closed: %v, want EPIPE", err)
	}
	var perr *os.PathError
	if _, err := w.WriteSome([]byte("x")); !errors.As(err, &perr) || perr.Op != "write" || !errors.Is(err, syscall.EPIPE) {
		t.Errorf("WriteSome with the reader closed: %v, want an *os.PathError of write, EPIPE", err)
	}
	w.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("write of a closed pipe: %v, want os.ErrClosed", err)
	}
}

// waitIOWait returns once a goroutine whose stack names fn waits in the
// runtime's poller.
func waitIOWait(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "[IO wait") && strings.Contains(g, fn) {
				return
			}
		}
		runtime.Gosched()
	}
}

// TestPipeOrdersForRace: under the race detector, what a goroutine wrote
// before writing to a pipe is seen by one that read it from the pipe, as
// through an os.File (raw system calls are not annotated: without
// ioRelease and ioAcquire this reports a race).
func TestPipeOrdersForRace(t *testing.T) {
	t.Parallel()
	r, w := newPipes(t)
	x := 0
	go func() {
		x = 1
		w.Write([]byte{1})
	}()
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if x != 1 {
		t.Errorf("x = %d after the byte came, want 1", x)
	}
}

// TestPipeAllocs: a read and a write of a small message allocate
// nothing, as an os.File's do.
func TestPipeAllocs(t *testing.T) {
	r, w := newPipes(t)
	msg, buf := bytes.Repeat([]byte("x"), 200), make([]byte, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := w.Write(msg); err != nil {
			t.Fatal(err)
		}
		if n, err := r.Read(buf); err != nil || n != len(msg) {
			t.Fatalf("read %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("a write and a read allocate %v times, want 0", allocs)
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
	// Non-blocking, but not polled: os.NewFile of a blocking descriptor
	// does not poll it, and the flag is set after.
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	ur, uw := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer ur.Close()
	defer uw.Close()
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*os.File{"blocking read end": br, "blocking write end": bw, "regular file": file, "nil": nil, "unpolled read end": ur} {
		if p := NewPipe(f); p != nil {
			t.Errorf("NewPipe(%s) = %v, want nil", name, p)
		}
	}
}

// kickEnv makes the test binary run TestKickPreempts's child, in the
// mode it names.
const kickEnv = "WIRE_TEST_KICK_CHILD"

// TestKickPreempts: with GOMAXPROCS=1, a message a connection reads raw
// after the process has been idle (the runtime's monitor thread asleep)
// does not hold up the other goroutines when taking it runs long: a small
// one handed to the layer above (deliver), or a large one taken apart on
// the read loop itself (here: its Take hook runs long). The connection
// kicks the monitor awake, and it preempts the long run. Without the kick
// the monitor sleeps on (up to a minute) and the goroutine waiting behind
// the long run never runs; the child reports that after 20 s.
//
// The parent sends the message once the child's monitor has fallen
// asleep (monitorAsleep); should that not be seen, it sends it anyway, and
// a missing kick may then go unseen, but a kick present passes whatever
// happens.
func TestKickPreempts(t *testing.T) {
	if mode := os.Getenv(kickEnv); mode != "" {
		kickChild(mode)
		return
	}
	t.Parallel()
	for mode, line := range map[string]string{
		"deliver": `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		"large":   `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", rawEnvelopeMin) + `"}}`,
	} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestKickPreempts$")
			cmd.Env = append(os.Environ(), kickEnv+"="+mode, "GOMAXPROCS=1")
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
			monitorAsleep(cmd.Process.Pid)
			if _, err := io.WriteString(in, line+"\n"); err != nil {
				t.Fatal(err)
			}
			if !lines.Scan() || lines.Text() != "preempted" {
				t.Fatalf("child: %q, %v; stderr: %s", lines.Text(), lines.Err(), stderr.Bytes())
			}
		})
	}
}

// monitorAsleep returns once every thread of the process pid is blocked
// in a system call and none in nanosleep, the runtime monitor's short
// sleep between its rounds: then the monitor is in its deep sleep, which
// only a system call entered (or a timer) ends. It reads
// /proc/PID/task/*/syscall, and gives up after maxPolls reads of them.
func monitorAsleep(pid int) {
	const maxPolls = 100000
	task := fmt.Sprintf("/proc/%d/task", pid)
	for range maxPolls {
		tids, err := os.ReadDir(task)
		if err != nil {
			return
		}
		asleep := len(tids) > 0
		for _, tid := range tids {
			b, err := os.ReadFile(filepath.Join(task, tid.Name(), "syscall"))
			nr, _, _ := strings.Cut(string(b), " ")
			if err != nil || nr == "running" || nr == strconv.Itoa(syscall.SYS_NANOSLEEP) || nr == strconv.Itoa(syscall.SYS_CLOCK_NANOSLEEP) {
				asleep = false
				break
			}
		}
		if asleep {
			return
		}
		runtime.Gosched()
	}
}

// kickChild is TestKickPreempts's child: it reads a request from its
// standard input, opened anew without blocking and read raw, and runs
// long on taking it (mode "large": in the Take hook; else after Read has
// returned it), until a goroutine it readied runs.
func kickChild(mode string) {
	f, err := os.OpenFile("/dev/stdin", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		fmt.Println("reopen:", err)
		os.Exit(1)
	}
	p := NewPipe(f)
	if p == nil {
		fmt.Println("stdin is not read raw")
		os.Exit(1)
	}
	start := make(chan struct{})
	var ran atomic.Bool
	go func() {
		<-start
		ran.Store(true)
	}()
	runLong := func() {
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
	c := NewConn(p, io.Discard, nil, -1, true, nil)
	if mode == "large" {
		c.SetHooks(Hooks{Take: func(*jsonrpc.Request, bool) bool { runLong(); return true }})
	}
	fmt.Println("ready")
	if _, err := c.Read(context.Background()); err != nil {
		fmt.Println("read:", err)
		os.Exit(1)
	}
	runLong()
}

// TestConnClientGone: on the server side, a write the client can no
// longer take (it closed its end of the pipe) closes the connection, so
// that the session ends rather than running the calls the client still
// sends for nothing; the log says why.
func TestConnClientGone(t *testing.T) {
	t.Parallel()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inR.Close(); inW.Close(); outW.Close() })
	var log syncBuffer
	c := NewConn(NewPipe(inR), NewPipe(outW), nil, -1, true, &log)
	outR.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a client gone: %v, want EPIPE", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only a failure waits for it
	defer cancel()
	if _, err := c.Read(ctx); err != io.EOF {
		t.Fatalf("read after the client went: %v, want io.EOF (the connection closed)", err)
	}
	if !strings.Contains(log.String(), "writing to the client failed") {
		t.Errorf("log: %q, want the write's failure", log.String())
	}
}
