package mcpproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

// durableProxy starts a proxy whose HTTP sessions keep their values in the
// directory store at dir, as a process of its own would, and returns it
// and the URL of its handler with opts, and the func that stops serving
// and closes the store.
func durableProxy(t *testing.T, dir string, opts *HTTPOptions) (*fixture, string, func()) {
	t.Helper()
	d, err := store.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil, &Options{PerSession: true, SessionStore: func(id string, opts ...values.Option) (*values.SessionValues, error) {
		return values.Open(d, id, opts...)
	}})
	srv := httptest.NewServer(f.proxy.HTTPHandler(opts))
	stop := func() {
		srv.Close()
		d.Close()
	}
	t.Cleanup(stop)
	return f, srv.URL, stop
}

// TestHTTPContinue: with Options.SessionStore durable, a session that
// stored values is continued by another proxy over the same store (a
// restarted process) when its client names it: its handles name the same
// values. A session that stored nothing, and an ID no session had, are
// 404 there. Continuing takes a place under MaxSessions; a continued
// session is ended by its DELETE.
func TestHTTPContinue(t *testing.T) {
	dir := t.TempDir()
	f1, url1, stop1 := durableProxy(t, dir, &HTTPOptions{Log: io.Discard})
	put := func(c *httpClient, v any) string {
		t.Helper()
		s := f1.proxy.stores.byID(c.id)
		if s == nil {
			t.Fatal("the session is not known")
		}
		h, err := f1.proxy.stores.of(s.ss).Put(v)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := openHTTPSession(t, url1)
	if h := put(a, map[string]any{"id": 7, "name": "seven"}); h != "r1" {
		t.Fatalf("the first value of a durable session is %s, want r1", h)
	}
	b := openHTTPSession(t, url1)
	hb := put(b, []int{1, 2, 3})      // r1 or r2: a new session starts past the handles handed out before it
	empty := openHTTPSession(t, url1) // stores nothing

	// Another process over the same store, once the first has stopped. The
	// fixture's own client is one session: MaxSessions 2 leaves room for
	// one more.
	stop1()
	f2, url2, _ := durableProxy(t, dir, &HTTPOptions{MaxSessions: 2, Log: f1.log})
	post := func(c *httpClient, body string) (int, string) {
		t.Helper()
		c.url = url2
		resp, err := c.do(context.Background(), http.MethodPost, "", body)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(data)
	}
	readR1 := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_value","arguments":{"ref":"$r1.name"}}}`
	if status, body := post(empty, readR1); status != http.StatusNotFound {
		t.Errorf("a session that stored nothing, in the new process: %d %.300s, want 404", status, body)
	}
	if status, body := post(&httpClient{id: "AAAAAAAAAAAAAAAAAAAAAAAAAA"}, readR1); status != http.StatusNotFound {
		t.Errorf("a session no one had: %d %.300s, want 404", status, body)
	}
	status, body := post(a, readR1)
	if status != http.StatusOK || !strings.Contains(body, `seven`) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("$r1.name in the continued session: %d %.500s", status, body)
	}
	if s := f2.proxy.stores.byID(a.id); s == nil {
		t.Fatal("the continued session is not known by its ID")
	}
	if status, body := post(a, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != http.StatusOK || !strings.Contains(body, "read_value") {
		t.Errorf("tools/list in the continued session: %d %.300s", status, body)
	}
	// At MaxSessions: neither a new session nor another continued one.
	if status, body := post(&httpClient{}, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); status != http.StatusServiceUnavailable {
		t.Errorf("a new session at MaxSessions: %d %.300s, want 503", status, body)
	}
	if status, body := post(b, readR1); status != http.StatusServiceUnavailable || !strings.Contains(body, "the server has 2 sessions open, the most it keeps") {
		t.Errorf("continuing a session at MaxSessions: %d %.300s, want 503", status, body)
	}
	// The continued session's DELETE ends it, and frees its place.
	resp, err := a.do(context.Background(), http.MethodDelete, "", "")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE of the continued session: %v %v", resp, err)
	}
	resp.Body.Close()
	if status, body := post(b, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_value","arguments":{"ref":"`+hb+`"}}}`); status != http.StatusOK || !strings.Contains(body, "[1,2,3]") {
		t.Errorf("b continued once a's place is free: %d %.500s", status, body)
	}
	// A session its client ended here is not continued again: 404, as the
	// specification asks of a session ended.
	if status, body := post(a, readR1); status != http.StatusNotFound {
		t.Errorf("the continued session after its DELETE: %d %.300s, want 404", status, body)
	}
	if !strings.Contains(f1.log.String(), "agentvalues: continued HTTP session "+a.id[:6]+"… from its store (1 values)") || strings.Contains(f1.log.String(), a.id) {
		t.Errorf("the log says nothing of the session continued, or names its whole ID:\n%s", f1.log.String())
	}
}

// TestEndedIDs: the IDs of ended sessions are remembered up to
// maxEndedIDs, the oldest forgotten first.
func TestEndedIDs(t *testing.T) {
	var e endedIDs
	id := func(i int) string { return fmt.Sprintf("S%025d", i) }
	for i := range maxEndedIDs + 1 {
		e.add(id(i))
		e.add(id(i)) // twice: counted once
	}
	if e.has(id(0)) {
		t.Error("the oldest ID is remembered past the bound")
	}
	for _, i := range []int{1, maxEndedIDs / 2, maxEndedIDs} {
		if !e.has(id(i)) {
			t.Errorf("ID %d is forgotten", i)
		}
	}
	if len(e.order) != maxEndedIDs || len(e.set) != maxEndedIDs {
		t.Errorf("%d ordered, %d in the set; want %d", len(e.order), len(e.set), maxEndedIDs)
	}
}
