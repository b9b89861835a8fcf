package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestRawCancelWhileStarting: a call cancelled while Start is storing it
// ends once, with the context's error, and leaves nothing behind: no
// request written, no call waiting for a response.
func TestRawCancelWhileStarting(t *testing.T) {
	var out syncBuffer
	c := NewConn(strings.NewReader(""), &out, nil, -1, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 2)
	c.storing = func() {
		cancel()
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Errorf("the call ended with %v, want the context's error", err)
		}
	}
	startTestCall(c, ctx, false, func(_ *jsonrpc.Response, err error) { ended <- err })
	c.notes.Wait() // a note, had one been sent, is written by a goroutine
	if got := out.String(); got != "" {
		t.Errorf("wrote %q for a call cancelled before it was sent", got)
	}
	c.rawMu.Lock()
	n := len(c.rawWait)
	c.rawMu.Unlock()
	c.calls.mu.Lock()
	pending := len(c.calls.pending)
	c.calls.mu.Unlock()
	if n != 0 || pending != 0 {
		t.Errorf("after the call ended: %d raw calls waiting, %d calls pending", n, pending)
	}
	select {
	case err := <-ended:
		t.Errorf("the call ended twice, again with %v", err)
	default:
	}
}

// startTestCall starts a call of tools/call with params {"name":"x"} on
// c, onReader as given, cancelled when ctx is done.
func startTestCall(c *Conn, ctx context.Context, onReader bool, done func(*jsonrpc.Response, error)) {
	id := c.NextID()
	frame := [][]byte{fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`+"\n", id.Raw())}
	stop := new(Cancel)
	stop.Watch(ctx)
	c.Start(stop, id, "tools/call", frame, Call{Inline: true, OnReader: onReader, Cancelled: testNote, Done: func(resp *jsonrpc.Response, _ *Batch, err error) { done(resp, err) }})
}

// testNote is the line of the cancellation of call id.
func testNote(id jsonrpc.ID, why string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":%q,"requestId":%d}}`+"\n", why, id.Raw())
}

// TestRawCancelNoteAfterRequest: the server is never sent a cancellation
// before the request it names, even when the request waits for another
// write; a call cancelled before its request is written is not sent at all.
func TestRawCancelNoteAfterRequest(t *testing.T) {
	for i := range 200 {
		var out syncBuffer
		c := NewConn(strings.NewReader(""), &out, nil, -1, false, nil)
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan error, 1)
		c.wmu.Lock() // another write under way
		returned := make(chan struct{})
		go func() { // on the reader (even i) or a worker, which waits for the lock
			defer close(returned)
			startTestCall(c, ctx, i%2 == 0, func(_ *jsonrpc.Response, err error) { ended <- err })
		}()
		cancel()
		<-ended
		c.wmu.Unlock()
		<-returned
		c.notes.Wait() // the note's goroutine waits for the request's
		got := out.String()
		req, note := strings.Index(got, `"tools/call"`), strings.Index(got, "notifications/cancelled")
		if req >= 0 || note >= 0 {
			t.Fatalf("a call cancelled before it was sent: wrote %q", got)
		}
	}
	// Sent, then cancelled: the note follows the request.
	var out syncBuffer
	c := NewConn(strings.NewReader(""), &out, nil, -1, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	startTestCall(c, ctx, false, func(_ *jsonrpc.Response, err error) { ended <- err })
	cancel()
	<-ended
	c.notes.Wait()
	got := out.String()
	if req, note := strings.Index(got, `"tools/call"`), strings.Index(got, "notifications/cancelled"); req < 0 || note < req {
		t.Errorf("sent and then cancelled: wrote %q, want the request, then the note", got)
	}
}

// TestCancel: a Cancel cancelled before Start ends the call at once, on
// the caller's goroutine, with nothing written; cancelled after the
// request was written, the server is sent the cancellation with the
// cause's text as its reason, once, however often it is cancelled.
func TestCancel(t *testing.T) {
	var out syncBuffer
	c := NewConn(strings.NewReader(""), &out, nil, -1, false, nil)
	stop := new(Cancel)
	stop.Cancel(errors.New("first"))
	stop.Cancel(errors.New("second"))
	var ended error
	id := c.NextID()
	c.Start(stop, id, "tools/call", [][]byte{[]byte("{}\n")}, Call{Cancelled: testNote, Done: func(_ *jsonrpc.Response, _ *Batch, err error) { ended = err }})
	if !errors.Is(ended, context.Canceled) || !errors.Is(stop.Err(), context.Canceled) {
		t.Errorf("cancelled before Start: the call ended with %v (Err %v), want context.Canceled at once", ended, stop.Err())
	}
	if got := out.String(); got != "" {
		t.Errorf("cancelled before Start: wrote %q", got)
	}

	stop = new(Cancel)
	done := make(chan error, 2)
	id = c.NextID()
	c.Start(stop, id, "tools/call", [][]byte{[]byte("{}\n")}, Call{Cancelled: testNote, Done: func(_ *jsonrpc.Response, _ *Batch, err error) { done <- err }})
	if stop.Err() != nil {
		t.Fatalf("Err before the cancellation: %v", stop.Err())
	}
	stop.Cancel(errors.New("the user changed their mind"))
	stop.Cancel(nil)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled after Start: the call ended with %v", err)
	}
	c.notes.Wait()
	want := "{}\n" + string(testNote(id, "the user changed their mind"))
	if got := out.String(); got != want {
		t.Errorf("cancelled after Start: wrote %q, want %q", got, want)
	}
	select {
	case err := <-done:
		t.Errorf("the call ended twice, again with %v", err)
	default:
	}
}
