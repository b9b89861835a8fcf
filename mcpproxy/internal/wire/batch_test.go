package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// writeLog is a writer that keeps each write apart, and, as a server's
// input does, has TryWrite (see NewConn); fail, when set, fails them.
type writeLog struct {
	mu     sync.Mutex
	writes []string
	fail   error
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeLog) TryWrite(p []byte) (int, error) { return w.Write(p) }

func (w *writeLog) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

// lines returns n request lines of tools/call, with ids from 1.
func requestLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`+"\n", i)
	}
	return b.String()
}

// TestBatchedRequests: the requests a client sends together, read at once
// and each sent to the server by the goroutine reading the client, reach
// the server in one write, in the order they came, as a relay copying
// bytes would pass them; not one write (and one wake-up of the server)
// each.
func TestBatchedRequests(t *testing.T) {
	down := &writeLog{}
	server := NewConn(strings.NewReader(""), down, nil, -1, false, nil)
	var up *Conn
	up = NewConn(strings.NewReader(requestLines(3)), io.Discard, nil, -1, true, nil)
	up.SetHooks(Hooks{Take: func(req *jsonrpc.Request, _ bool) bool {
		id := server.NextID()
		frame := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x","n":%v}}`+"\n", id.Raw(), req.ID.Raw())
		server.Start(nil, id, "tools/call", [][]byte{frame}, Call{
			Inline: true, OnReader: true, Batch: up.Batch(), Cancelled: testNote,
			Done: func(*jsonrpc.Response, *Batch, error) {},
		})
		return true
	}})
	if _, err := up.Read(context.Background()); err != io.EOF {
		t.Fatalf("Read: %v, want io.EOF once every request was taken", err)
	}
	got := down.all()
	want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","n":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","n":2}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","n":3}}` + "\n"
	if len(got) != 1 || got[0] != want {
		t.Errorf("the server was sent %d writes %q, want one: %q", len(got), got, want)
	}
}

// TestBatchedResponses: the responses a server sends together, read at
// once and each answered to the client on the goroutine reading the
// server (Inline), reach the client in one write, in the order they came.
func TestBatchedResponses(t *testing.T) {
	r, w := io.Pipe()
	server := NewConn(r, io.Discard, nil, -1, false, nil)
	client := &writeLog{}
	up := NewConn(strings.NewReader(""), client, nil, -1, true, nil)
	for range 3 {
		id := server.NextID()
		server.Start(nil, id, "tools/call", [][]byte{[]byte("{}\n")}, Call{
			Inline: true, Cancelled: testNote,
			Done: func(resp *jsonrpc.Response, b *Batch, err error) {
				if err != nil {
					t.Errorf("call %v: %v", id.Raw(), err)
					return
				}
				up.WriteLineIn(b, fmt.Appendf(nil, "answer %v: %s\n", id.Raw(), resp.Result))
			},
		})
	}
	read := make(chan error)
	go func() {
		_, err := server.Read(context.Background())
		read <- err
	}()
	fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`+"\n"+`{"jsonrpc":"2.0","id":2,"result":{"n":2}}`+"\n"+`{"jsonrpc":"2.0","id":3,"result":{"n":3}}`+"\n")
	w.Close()
	<-read
	got := client.all()
	want := "answer 1: {\"n\":1}\nanswer 2: {\"n\":2}\nanswer 3: {\"n\":3}\n"
	if len(got) != 1 || got[0] != want {
		t.Errorf("the client was sent %d writes %q, want one: %q", len(got), got, want)
	}
}

// TestHeldLinesGoFirst: a line held for a batch is written before any line
// written to the connection after it, and by Close on the client's side,
// which writes the responses to the calls it waited for.
func TestHeldLinesGoFirst(t *testing.T) {
	out := &writeLog{}
	c := NewConn(strings.NewReader(""), out, nil, -1, true, nil)
	var b Batch
	c.WriteLineIn(&b, []byte("held 1\n"))
	c.WriteLineIn(&b, []byte("held 2\n"))
	if got := out.all(); len(got) != 0 {
		t.Fatalf("wrote %q before the batch was flushed", got)
	}
	c.WriteLine([]byte("direct\n"))
	if got := strings.Join(out.all(), ""); got != "held 1\nheld 2\ndirect\n" {
		t.Errorf("wrote %q, want the held lines, then the direct one", got)
	}
	b.Flush() // nothing left: no write
	c.WriteLineIn(&b, []byte("held 3\n"))
	c.Close()
	if got := strings.Join(out.all(), ""); got != "held 1\nheld 2\ndirect\nheld 3\n" {
		t.Errorf("after Close: wrote %q, want the line held 3 last", got)
	}
	if n := len(out.all()); n != 2 {
		t.Errorf("%d writes, want 2", n)
	}
}

// TestHeldRequestFails: a call whose request was held ends with the error
// of the write that should have sent it.
func TestHeldRequestFails(t *testing.T) {
	broken := errors.New("broken pipe")
	down := &writeLog{fail: broken}
	c := NewConn(strings.NewReader(""), down, nil, -1, false, nil)
	var b Batch
	ended := make(chan error, 1)
	id := c.NextID()
	c.Start(nil, id, "tools/call", [][]byte{[]byte("{}\n")}, Call{
		Inline: true, OnReader: true, Batch: &b, Cancelled: testNote,
		Done: func(_ *jsonrpc.Response, _ *Batch, err error) { ended <- err },
	})
	b.Flush()
	if err := <-ended; !errors.Is(err, broken) {
		t.Errorf("the call ended with %v, want the write's error", err)
	}
}
