package mcpproxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestReadEvents(t *testing.T) {
	stream := ": a comment\r\n" +
		"id: 1\r\n" +
		"data: {\"a\":\r\n" +
		"data: 1}\r\n" +
		"\r\n" +
		"event: message\n" +
		"data:no space\n" +
		"\n" +
		"retry: 100\n" +
		"id\n" + // an empty id resets it
		"data\n" + // a field without a colon: empty data
		"\n" +
		"id: 3\n" +
		"data: last, without a blank line after it\n"
	var got []string
	err := readEvents(strings.NewReader(stream), func(id string, data []byte) bool {
		got = append(got, id+"|"+string(data))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1|{\"a\":\n1}", "1|no space", "|"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReadEventsTooLarge(t *testing.T) {
	stream := "data: " + strings.Repeat("x", maxStandaloneEvent/2) + "\n" +
		"data: " + strings.Repeat("y", maxStandaloneEvent/2) + "\n\n"
	calls := 0
	err := readEvents(strings.NewReader(stream), func(string, []byte) bool { calls++; return true })
	if err == nil || !strings.Contains(err.Error(), "over") || calls != 0 {
		t.Errorf("an event over the limit: err %v after %d events", err, calls)
	}
}

func TestReadEventsStops(t *testing.T) {
	calls := 0
	err := readEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(string, []byte) bool { calls++; return false })
	if err != nil || calls != 1 {
		t.Errorf("stopped after the first: err %v, %d events", err, calls)
	}
}

// FuzzReadEvents reads any bytes as an event stream: no panic, every
// event within the bound.
func FuzzReadEvents(f *testing.F) {
	f.Add("id: 1\ndata: {}\n\n")
	f.Add("data: a\r\ndata: b\r\n\r\n: c\n")
	f.Add("data\n\nid\x00: 2\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = readEvents(strings.NewReader(s), func(id string, data []byte) bool {
			if len(data) > maxStandaloneEvent {
				t.Fatalf("an event of %d bytes", len(data))
			}
			return true
		})
	})
}

// TestStandaloneRetries opens a standalone stream on a server that first
// refuses it with 409 (it still holds an earlier stream), then serves it:
// the stream is tried again and its message arrives, the headers carrying
// the session and protocol version; a 404 ends it.
func TestStandaloneRetries(t *testing.T) {
	var mu sync.Mutex
	gets := 0
	var headers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gets++
		n := gets
		headers = append(headers, r.Header.Get("Mcp-Session-Id")+" "+r.Header.Get("Mcp-Protocol-Version"))
		mu.Unlock()
		if n == 1 {
			http.Error(w, "conflict", http.StatusConflict)
			return
		}
		if n > 2 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
	}))
	defer srv.Close()
	log := &syncBuffer{}
	s := newStandalone(&mcp.StreamableClientTransport{Endpoint: srv.URL}, log)
	s.wait = time.Millisecond // no need to wait a second between attempts here
	defer s.close()
	s.start("sid-1", "2025-11-25")
	select {
	case msg := <-s.msgs:
		if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "notifications/tools/list_changed" {
			t.Errorf("message %#v", msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no message; log:\n%s", log.String())
	}
	waitLog(t, log, "the session is gone")
	mu.Lock()
	defer mu.Unlock()
	if gets != 3 || headers[1] != "sid-1 2025-11-25" {
		t.Errorf("%d GETs, headers %q", gets, headers)
	}
	if !strings.Contains(log.String(), "409 Conflict; trying again") {
		t.Errorf("log:\n%s", log.String())
	}
}
