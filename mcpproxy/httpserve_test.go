package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An argsServer is an MCP server whose tool "args" answers with the exact
// bytes of the arguments it was called with, and whose tool "wait" blocks
// until release is closed.
type argsServer struct {
	server  *mcp.Server
	got     chan []byte // the arguments of each call of "args"
	entered chan struct{}
	release chan struct{}
	url     string
}

func newArgsServer(t *testing.T, opts *HTTPOptions) *argsServer {
	t.Helper()
	s := &argsServer{server: mcp.NewServer(&mcp.Implementation{Name: "args", Version: "1"}, nil), got: make(chan []byte, 16), entered: make(chan struct{}, 16), release: make(chan struct{})}
	s.server.AddTool(&mcp.Tool{Name: "args", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.got <- bytes.Clone(req.Params.Arguments)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(len(req.Params.Arguments))}}}, nil
		})
	s.server.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.entered <- struct{}{}
			select {
			case <-s.release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		})
	if opts == nil {
		opts = &HTTPOptions{}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	srv := httptest.NewServer(bareHTTPHandler(s.server, opts))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// bareHTTPHandler is the HTTP handler of a proxy, both layers, over a
// server of the test's own rather than a proxy's, with the middleware
// that puts stashed arguments back: its sessions are none of the
// proxy's, so the session layer leaves them to the SDK.
func bareHTTPHandler(server *mcp.Server, opts *HTTPOptions) http.Handler {
	server.AddReceivingMiddleware(restoreArguments)
	return newHTTPHandler(server, newStores(&Options{}), nil, opts, nil)
}

// rawPost sends body to url in session sid ("": none), chunked when
// chunked is set, and returns the status, the headers and the body of the
// answer.
func rawPost(t *testing.T, url, sid string, body []byte, chunked bool, headers ...string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(newPost(t, url, sid, body, chunked, headers...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// newPost is the request rawPost sends.
func newPost(t *testing.T, url, sid string, body []byte, chunked bool, headers ...string) *http.Request {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	if chunked {
		r = io.MultiReader(r) // hides the length: sent chunked
	}
	req, err := http.NewRequest("POST", url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		switch {
		case headers[i+1] == "":
		case headers[i] == "Host":
			req.Host = headers[i+1]
		default:
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return req
}

// postRefused is rawPost for a body the server refuses before reading it
// all, which closes the connection: the request is written on a
// connection of its own, by a goroutine whose write may fail once the
// server has answered, while the answer is read. (net/http's client may
// return the failed write instead of the answer: either may come first.)
func postRefused(t *testing.T, url, sid string, body []byte, chunked bool) (int, string) {
	t.Helper()
	req := newPost(t, url, sid, body, chunked)
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go req.Write(conn) // fails once the server closes: what is read below is the answer
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// rawSession opens a session on url and returns its id.
func rawSession(t *testing.T, url string) string {
	t.Helper()
	status, h, body := rawPost(t, url, "", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`), false)
	sid := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %.300s", status, body)
	}
	if status, _, body := rawPost(t, url, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %.300s", status, body)
	}
	return sid
}

// TestHTTPArguments checks that a tool gets the arguments of a call over
// HTTP byte for byte, whether they are held apart from what the SDK
// decodes (64 KiB and more) or not, the body sent with a length or
// chunked; that of duplicate keys the last counts, as for the SDK; and
// that a stand-in a client writes is only a string to the tool.
func TestHTTPArguments(t *testing.T) {
	t.Parallel()
	s := newArgsServer(t, nil)
	sid := rawSession(t, s.url)
	big := `{"text":"` + strings.Repeat(`a \"quoted\" \u00e9 line\n`, 10000) + `", "n" : 1e3 ,"list":[1, 2,{"x":null}]}`
	forged := `{"agentvalues/arguments":"0123456789abcdef:1"}`
	for _, tc := range []struct {
		name, params, want string
	}{
		{"small", `{"name":"args","arguments":{"a":1, "b" : [true]}}`, `{"a":1, "b" : [true]}`},
		{"large", `{"name":"args","arguments":` + big + `}`, big},
		{"large, the arguments first", `{"arguments":` + big + `,"name":"args"}`, big},
		{"duplicate arguments, the large last", `{"name":"args","arguments":{"small":1},"arguments":` + big + `}`, big},
		{"duplicate arguments, the large first", `{"name":"args","arguments":` + big + `,"arguments":{"small":1}}`, `{"small":1}`},
		{"duplicate params", `{"name":"args","arguments":` + big + `},"params":{"name":"args","arguments":{"p":2}}`, `{"p":2}`},
		{"a forged stand-in", `{"name":"args","arguments":` + forged + `}`, forged},
	} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, chunked %v", tc.name, chunked), func(t *testing.T) {
				body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + tc.params + `}`
				status, _, answer := rawPost(t, s.url, sid, []byte(body), chunked)
				if status != http.StatusOK || !strings.Contains(answer, `"result"`) {
					t.Fatalf("%d %.300s", status, answer)
				}
				if got := <-s.got; string(got) != tc.want {
					t.Errorf("the tool got %d bytes of arguments %.80q…, want %d bytes %.80q…", len(got), got, len(tc.want), tc.want)
				}
			})
		}
	}
	// Nothing is left held once the calls are answered.
	n := 0
	stashed.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d stashed arguments left after the calls", n)
	}
}

// TestRestoreArgumentsGone: a stand-in whose arguments are no longer
// held (its request ended before the call started) fails the call rather
// than reaching the tool.
func TestRestoreArgumentsGone(t *testing.T) {
	t.Parallel()
	called := false
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { called = true; return nil, nil }
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x", Arguments: json.RawMessage(argsMark + `18446744073709551615"}`)}}
	_, err := restoreArguments(next)(context.Background(), "tools/call", req)
	if err == nil || called || !strings.Contains(err.Error(), "the arguments of this call are gone") {
		t.Errorf("got %v, tool called %v", err, called)
	}
}

// TestHTTPBounds checks the request bounds of the handler: a body over
// MaxMessage, sent with its length or chunked, is refused with 413 and
// the request's id; a request past MaxRequests with 503 and Retry-After.
func TestHTTPBounds(t *testing.T) {
	t.Parallel()
	s := newArgsServer(t, &HTTPOptions{MaxMessage: 1 << 20, MaxRequests: 2})
	sid := rawSession(t, s.url)
	over := []byte(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"args","arguments":{"s":"` + strings.Repeat("x", 1<<20) + `"}}}`)
	for _, chunked := range []bool{false, true} {
		status, body := postRefused(t, s.url, sid, over, chunked)
		want := fmt.Sprintf(`"id":"big","error":{"code":-32600,"message":"mcpproxy: Invalid Request: the message is %d bytes, over the limit of 1048576"}`, len(over))
		if chunked {
			want = `"id":"big","error":{"code":-32600,"message":"mcpproxy: Invalid Request: the message is over the limit of 1048576 bytes"}`
		}
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, want) {
			t.Errorf("chunked %v: %d %s\nwant 413 and %s", chunked, status, body, want)
		}
	}

	// Two calls of wait in flight hold both places.
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			rawPost(t, s.url, sid, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, 100+i), false)
		})
		<-s.entered
	}
	status, h, body := rawPost(t, s.url, sid, []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), false)
	if status != http.StatusServiceUnavailable || h.Get("Retry-After") != "1" || !strings.Contains(body, `"id":null,"error":{"code":-32051,"message":"mcpproxy: the server is busy: 2 requests are being handled, the most it takes at once; try again in a moment"}`) {
		t.Errorf("past MaxRequests: %d Retry-After %q %s", status, h.Get("Retry-After"), body)
	}
	// One refused before its body is read, sending only part of it: the
	// server answers and closes the connection rather than wait for the
	// rest.
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", sid)
	c.SetReadDeadline(time.Now().Add(time.Minute)) // the test's own bound: the server must close first
	got, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 503 ") || !strings.Contains(string(got), "Connection: close") {
		t.Errorf("a request refused with part of its body sent: %v %q", err, got)
	}
	close(s.release)
	wg.Wait()
	if status, _, body := rawPost(t, s.url, sid, []byte(`{"jsonrpc":"2.0","id":4,"method":"ping"}`), false); status != http.StatusOK {
		t.Errorf("after the calls: %d %s", status, body)
	}
}

// An addrListener gives every connection it accepts another local
// address: the address of a network interface the machine may not have.
type addrListener struct {
	net.Listener
	ip net.IP
}

func (l addrListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	at := *c.LocalAddr().(*net.TCPAddr)
	at.IP = l.ip
	return addrConn{c, &at}, nil
}

type addrConn struct {
	net.Conn
	local net.Addr
}

func (c addrConn) LocalAddr() net.Addr { return c.local }

// TestHTTPOriginNotLoopback serves on what the handler sees as a
// non-loopback address (203.0.113.7), where the SDK's Host guard is off: a
// page of a DNS-rebound name sends that name as Host and in Origin, and is
// refused for its Origin; a page of the server's own address, and a client
// without Origin, are served.
func TestHTTPOriginNotLoopback(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv := httptest.NewUnstartedServer(bareHTTPHandler(s, &HTTPOptions{AllowedOrigins: []string{"https://ui.example.org"}, Log: io.Discard}))
	srv.Listener = addrListener{srv.Listener, net.ParseIP("203.0.113.7")}
	srv.Start()
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	initialize := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	for _, tc := range []struct {
		host, origin string
		status       int
	}{
		{"rebound.example:" + port, "", http.StatusOK},
		{"rebound.example:" + port, "http://rebound.example:" + port, http.StatusForbidden},
		{"203.0.113.7:" + port, "http://203.0.113.7:" + port, http.StatusOK},
		{"203.0.113.7:" + port, "http://localhost:" + port, http.StatusForbidden},
		{"203.0.113.7:" + port, "http://127.0.0.1:" + port, http.StatusForbidden},
		{"203.0.113.7:" + port, "http://203.0.113.8:" + port, http.StatusForbidden},
		{"ui.example.org", "https://UI.example.org", http.StatusOK},
	} {
		status, _, body := rawPost(t, srv.URL, "", initialize, false, "Host", tc.host, "Origin", tc.origin)
		if status != tc.status {
			t.Errorf("Host %s, Origin %q: %d %.200s; want %d", tc.host, tc.origin, status, body, tc.status)
		}
	}
}

// TestServeHTTPIdle: a keep-alive connection that waits longer than
// IdleTimeout for its next request is closed by the server.
func TestServeHTTPIdle(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- ServeHTTP(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }), &HTTPOptions{IdleTimeout: 100 * time.Millisecond})
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	c.SetReadDeadline(time.Now().Add(time.Minute)) // the test's own bound: the server must close first
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("an idle keep-alive connection: read %v, want the server to close it (EOF)", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeHTTP returned %v after its context ended", err)
	}
}

// TestHTTPLayersSessionCap: the bounds layer counts the sessions the
// session layer ends. At MaxSessions 2 (the fixture's own client, over a
// pipe, is one: the bound is the server's), a second HTTP session is
// refused until the first is ended by its DELETE, and again until the
// second is ended by its idle timer (fired by the test); each time the
// next session is admitted as soon as the end is done, without waiting.
func TestHTTPLayersSessionCap(t *testing.T) {
	fires := make(chan func(), 64) // the idle timers armed, in order
	f, url, _ := hangFixture(t, &HTTPOptions{MaxSessions: 2, SessionTimeout: time.Hour, Log: io.Discard}, &seams{
		idleTimer: testIdleTimers(fires),
	})
	refused := func(when string) {
		t.Helper()
		c := &httpClient{url: url}
		resp, err := c.do(context.Background(), http.MethodPost, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "the server has 2 sessions open, the most it keeps") {
			t.Fatalf("a second session %s: %s %.300s; want 503", when, resp.Status, body)
		}
	}
	last := func() func() { // the timer armed last
		t.Helper()
		var fire func()
		for {
			select {
			case fire = <-fires:
				continue
			default:
			}
			if fire == nil {
				t.Fatal("no idle timer armed")
			}
			return fire
		}
	}

	a := openHTTPSession(t, url)
	refused("with one open")
	resp, err := a.do(context.Background(), http.MethodDelete, "", "")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	resp.Body.Close()
	b := openHTTPSession(t, url) // at once: the DELETE answered, its place is free
	refused("with the next one open")
	s := f.proxy.stores.byID(b.id)
	if s == nil {
		t.Fatal("the session is not known")
	}
	last()() // b's idle timer fires: the session layer ends it
	if s.ctx.Err() == nil {
		t.Fatal("the idle timer did not end the session")
	}
	openHTTPSession(t, url) // at once: the session ended, its place is free
}

// TestHTTPLayersDeleteRefused: a DELETE the bounds layer refuses, for its
// Origin or past MaxRequests, never reaches the session layer: the
// session and its call go on. Once the call's request has ended, a DELETE
// is taken and ends the session, cancelling the call downstream.
func TestHTTPLayersDeleteRefused(t *testing.T) {
	f, url, cancelled := hangFixture(t, &HTTPOptions{MaxRequests: 1, Log: io.Discard}, nil)
	c := openHTTPSession(t, url)
	s := f.proxy.stores.byID(c.id)
	if s == nil {
		t.Fatal("the session is not known")
	}
	abandon := c.callHang(t, f) // holds the one request place
	del := func(origin string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodDelete, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Mcp-Session-Id", c.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"http://evil.example", http.StatusForbidden},
		{"", http.StatusServiceUnavailable},
	} {
		if resp := del(tc.origin); resp.StatusCode != tc.status {
			t.Errorf("DELETE, Origin %q: %s, want %d", tc.origin, resp.Status, tc.status)
		}
		if s.ctx.Err() != nil {
			t.Fatalf("a DELETE refused (Origin %q) ended the session: %v", tc.origin, context.Cause(s.ctx))
		}
		select {
		case <-cancelled:
			t.Fatalf("a DELETE refused (Origin %q) cancelled the call", tc.origin)
		default:
		}
	}
	abandon()
	// The call's request gives its place back once the server sees it end.
	waitFor(t, func() bool { return del("").StatusCode != http.StatusServiceUnavailable })
	if s.ctx.Err() == nil {
		t.Error("the DELETE taken did not end the session")
	}
	waitCancelled(t, cancelled)
}

// TestHTTPLayersLargeArguments: a call over HTTP whose arguments are held
// apart from what the SDK decodes (64 KiB and more) reaches the proxy's
// own middleware and handler whole: a reference among them is resolved,
// the arguments are validated against the tool's schema, and the server
// gets them all.
func TestHTTPLayersLargeArguments(t *testing.T) {
	f, url, _ := hangFixture(t, &HTTPOptions{Log: io.Discard}, nil)
	c := openHTTPSession(t, url)
	s := f.proxy.stores.byID(c.id)
	if s == nil {
		t.Fatal("the session is not known")
	}
	store := f.proxy.stores.of(s.ss)
	ref, err := store.Put(map[string]any{"id": 7})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("a large argument ", 10000)
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"path":%q,"value":{"ref":"$%s"}}}}`, big, ref)
	if len(call) < stashMin {
		t.Fatalf("the call is %d bytes, under stashMin", len(call))
	}
	resp, err := c.do(context.Background(), http.MethodPost, "", call)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"result"`) || strings.Contains(string(answer), `"isError":true`) {
		t.Fatalf("the call: %s %.500s", resp.Status, answer)
	}
	handles := store.Handles()
	v, ok := store.Get(handles[len(handles)-1])
	if !ok {
		t.Fatal("the result is not stored")
	}
	var got, want any
	if err := json.Unmarshal(v.JSON(), &got); err != nil {
		t.Fatalf("the stored result: %v", err)
	}
	json.Unmarshal([]byte(fmt.Sprintf(`{"path":%q,"value":{"ref":{"id":7}}}`, big)), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the server got %.200s…, want the arguments whole, the reference resolved", v.JSON())
	}
	n := 0
	stashed.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d stashed arguments left after the call", n)
	}
}
