package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An httpClient speaks to a Streamable HTTP endpoint in raw requests, as
// one session.
type httpClient struct {
	url, id string
}

// openHTTPSession initializes a session at url.
func openHTTPSession(t testing.TB, url string) *httpClient {
	t.Helper()
	c := &httpClient{url: url}
	resp, err := c.do(context.Background(), http.MethodPost, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	c.id = resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c.id == "" {
		t.Fatalf("initialize: %s, no session", resp.Status)
	}
	resp, err = c.do(context.Background(), http.MethodPost, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c
}

// do sends a request of the session; host, when set, is its Host.
func (c *httpClient) do(ctx context.Context, method, host, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	if host != "" {
		req.Host = host
	}
	return http.DefaultClient.Do(req)
}

// callHang starts a call of the test server's hang tool in the session,
// whose request is abandoned (the connection closed, no cancellation
// sent) when the returned func is called, and waits for it to start.
func (c *httpClient) callHang(t *testing.T, f *fixture) (abandon func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := c.do(ctx, http.MethodPost, "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hang","arguments":{}}}`)
		if err == nil {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
			}
			resp.Body.Close()
		}
	}()
	select {
	case <-f.calls.hangStarted:
	case <-time.After(time.Minute):
		t.Fatal("hang never started")
	}
	return func() { cancel(); <-done }
}

// hangFixture is a proxy with a store per session over the in-process
// test server, served by its HTTPHandler with opts; cancelled receives
// each notifications/cancelled the test server gets.
func hangFixture(t *testing.T, opts *HTTPOptions, s *seams) (f *fixture, url string, cancelled chan struct{}) {
	t.Helper()
	f = newFixture(t, nil, &Options{PerSession: true, seams: s})
	cancelled = make(chan struct{}, 16)
	f.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				cancelled <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	srv := httptest.NewServer(f.proxy.HTTPHandler(opts))
	t.Cleanup(func() {
		close(f.calls.hangRelease)
		srv.Close()
	})
	return f, srv.URL, cancelled
}

// testIdleTimers is the idleTimer seam of tests that fire the idle timers
// themselves: each arming of a timer (its making, each Reset) sends a
// firing to fires, which expires the timer (a later Stop returns false,
// as a real timer's does once it fired) and runs its callback.
func testIdleTimers(fires chan<- func()) func(time.Duration, func()) sessionTimer {
	return func(_ time.Duration, callback func()) sessionTimer {
		t := &testTimer{callback: callback, fires: fires}
		t.Reset(0)
		return t
	}
}

// A testTimer is an idle timer that fires when the test says (see
// testIdleTimers).
type testTimer struct {
	mu       sync.Mutex
	active   bool
	callback func()
	fires    chan<- func()
}

func (t *testTimer) Reset(time.Duration) bool {
	t.mu.Lock()
	was := t.active
	t.active = true
	t.mu.Unlock()
	t.fires <- func() { t.expire(); t.callback() }
	return was
}

func (t *testTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

// expire marks the timer fired, its callback not yet run.
func (t *testTimer) expire() {
	t.mu.Lock()
	t.active = false
	t.mu.Unlock()
}

// waitCancelled waits for the test server to be told a call is cancelled.
func waitCancelled(t *testing.T, cancelled chan struct{}) {
	t.Helper()
	select {
	case <-cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the downstream server was never told the call is cancelled")
	}
}

// TestHTTPSessionDelete: a DELETE of a session whose call the server never
// answers is answered, cancels the call downstream and drops the session's
// store; one for another Host (DNS rebinding) is refused and ends nothing.
func TestHTTPSessionDelete(t *testing.T) {
	f, url, cancelled := hangFixture(t, nil, nil)
	c := openHTTPSession(t, url)
	defer c.callHang(t, f)()
	s := f.proxy.stores.byID(c.id)
	if s == nil {
		t.Fatal("the session is not known")
	}
	f.proxy.stores.of(s.ss).Put("x")

	resp, err := c.do(context.Background(), http.MethodDelete, "evil.example", "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || s.ctx.Err() != nil {
		t.Errorf("a DELETE for another Host: %s, session ended: %v; want 403 and the session going on", resp.Status, s.ctx.Err())
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err = c.do(ctx, http.MethodDelete, "", "")
	if err != nil {
		t.Fatalf("DELETE with a call in flight: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s, want 204", resp.Status)
	}
	waitCancelled(t, cancelled)
	waitFor(t, func() bool { _, ok := f.proxy.stores.live.all.Load(s.ss); return !ok })
	if f.proxy.stores.byID(c.id) != nil {
		t.Error("the session is still known by its id")
	}
}

// TestHTTPSessionIdle: a session whose client abandoned a call the server
// never answers is ended by its idle timeout, which cancels the call
// downstream; a timer armed before a later request is ignored, as is one
// that fired as a request began.
func TestHTTPSessionIdle(t *testing.T) {
	fires := make(chan func(), 16) // the idle timer's firings, in the order armed
	f, url, cancelled := hangFixture(t, &HTTPOptions{SessionTimeout: time.Hour}, &seams{
		idleTimer: testIdleTimers(fires),
	})
	c := openHTTPSession(t, url)
	s := f.proxy.stores.byID(c.id)
	if s == nil {
		t.Fatal("the session is not known")
	}
	next := func() func() {
		t.Helper()
		select {
		case fire := <-fires:
			return fire
		case <-time.After(time.Minute):
			t.Fatal("the idle timer was not armed")
			return nil
		}
	}
	stale := next() // armed once initialize was answered
	next()          // and again after notifications/initialized
	// A firing under way when a request begins (the timer expired, its
	// callback not yet run) is stale: run once the request has ended and
	// the timer is armed again, it is ignored.
	s.http.mu.Lock()
	timer := s.http.idle.(*testTimer)
	s.http.mu.Unlock()
	timer.expire()
	if resp, err := c.do(context.Background(), http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ping: %v %v", resp, err)
	}
	next() // armed when the ping's request ended
	timer.callback()
	if s.ctx.Err() != nil {
		t.Fatal("an idle timer that fired before a request ended the session after it")
	}
	abandon := c.callHang(t, f)
	stale() // armed before the call: ignored
	if s.ctx.Err() != nil {
		t.Fatal("a stale idle timer ended the session during a call")
	}
	abandon()
	fire := next() // armed when the call's request ended
	go fire()
	waitCancelled(t, cancelled)
	waitFor(t, func() bool { _, ok := f.proxy.stores.live.all.Load(s.ss); return !ok })
	if resp, err := c.do(context.Background(), http.MethodPost, "", `{"jsonrpc":"2.0","id":8,"method":"ping"}`); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the ended session: %v %v, want 404", err, resp)
	}
	if !bytes.Contains([]byte(context.Cause(s.ctx).Error()), []byte("idle")) {
		t.Errorf("the session ended for %v", context.Cause(s.ctx))
	}
}
