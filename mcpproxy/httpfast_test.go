package mcpproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A blockServer is a go-sdk MCP server, reached over the proxy's own line
// connection (so that the raw call route can take its calls), with two
// tools: "hello" answers at once, "block" blocks until its call is
// cancelled.
type blockServer struct {
	entered   chan struct{}             // receives when a call of block starts
	cancelled chan *mcp.CancelledParams // each notifications/cancelled it gets
	ended     chan struct{}             // receives when a call of block returns
	proxy     *Proxy
}

// newBlockProxy starts a blockServer behind a proxy (rawOff: every call on
// the SDK route) with opts, served over Streamable HTTP with hopts (nil:
// the defaults), and returns its URL.
func newBlockProxy(t testing.TB, rawOff bool, opts *Options, hopts *HTTPOptions) (*blockServer, string) {
	t.Helper()
	b, down, stop := startBlockServer()
	if opts == nil {
		opts = &Options{}
	}
	opts.Log = io.Discard
	p, err := Connect(context.Background(), down, opts)
	if err != nil {
		t.Fatal(err)
	}
	p.rawOff = rawOff
	b.proxy = p
	if hopts == nil {
		hopts = &HTTPOptions{}
	}
	hopts.Log = io.Discard
	srv := httptest.NewServer(p.HTTPHandler(hopts))
	t.Cleanup(func() {
		srv.Close()
		p.Close()
		stop()
	})
	return b, srv.URL
}

// startBlockServer starts a blockServer in this process and returns the
// transport that reaches it over a line connection of the proxy's own,
// and the func that stops it.
func startBlockServer() (*blockServer, mcp.Transport, func()) {
	b := &blockServer{entered: make(chan struct{}, 16), cancelled: make(chan *mcp.CancelledParams, 16), ended: make(chan struct{}, 16)}
	s := mcp.NewServer(&mcp.Implementation{Name: "block", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello <world> & ✓"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b.entered <- struct{}{}
			<-ctx.Done()
			b.ended <- struct{}{}
			return nil, ctx.Err()
		})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				b.cancelled <- req.GetParams().(*mcp.CancelledParams)
			}
			return next(ctx, method, req)
		}
	})
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx, &mcp.IOTransport{Reader: sr, Writer: sw})
	return b, lineDownstream{pr, pw}, func() {
		cancel()
		sw.Close()
	}
}

// post sends body in the session of c and returns the answer, whose body
// the caller reads and closes.
func (c *httpClient) post(t *testing.T, body string) *http.Response {
	t.Helper()
	resp, err := c.do(context.Background(), http.MethodPost, "", body)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// callBody is a tools/call request of tool, with id.
func callBody(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
}

// responseOf returns the JSON-RPC message of an answer to a POST: its body
// when it is JSON, else the data of each event of its stream.
func responseOf(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return []string{strings.TrimSpace(string(data))}
	}
	var msgs []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			msgs = append(msgs, data)
		}
	}
	return msgs
}

// TestHTTPFastPath: a nominal call over Streamable HTTP takes the raw call
// route and is answered as one JSON object, the same result, byte for
// byte, as the SDK's handler gives on its event stream; a call with a
// progress token, and one of a client that declared sampling, take the
// SDK's route; a request id already in flight is refused.
func TestHTTPFastPath(t *testing.T) {
	results := map[bool]string{}
	for _, rawOff := range []bool{true, false} {
		b, url := newBlockProxy(t, rawOff, &Options{PerSession: true}, nil)
		c := openHTTPSession(t, url)
		resp := c.post(t, callBody(3, "hello"))
		ct := resp.Header.Get("Content-Type")
		msgs := responseOf(t, resp)
		if len(msgs) != 1 || resp.StatusCode != http.StatusOK {
			t.Fatalf("rawOff=%v: %s, messages %q", rawOff, resp.Status, msgs)
		}
		results[rawOff] = msgs[0]
		if json := strings.HasPrefix(ct, "application/json"); json == rawOff {
			t.Errorf("rawOff=%v: Content-Type %q", rawOff, ct)
		}
		if took := b.proxy.rawN.Load() > 0; took == rawOff {
			t.Errorf("rawOff=%v: raw call route taken: %v", rawOff, took)
		}
	}
	if results[true] != results[false] {
		t.Errorf("the fast path answered\n%s\nthe SDK's handler\n%s", results[false], results[true])
	}
	if !strings.Contains(results[false], `"id":3,"result":{"_meta":{"agentvalues/handle":"r1"},"content":[{"type":"text","text":"hello \u003cworld\u003e \u0026 ✓"}`) {
		t.Errorf("answer: %s", results[false])
	}

	b, url := newBlockProxy(t, false, nil, nil)
	c := openHTTPSession(t, url)
	resp := c.post(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hello","arguments":{},"_meta":{"progressToken":"p"}}}`)
	if msgs := responseOf(t, resp); len(msgs) != 1 || !strings.Contains(msgs[0], "hello") || b.proxy.rawN.Load() != 0 {
		t.Errorf("a call with a progress token: %q, raw calls %d; want an answer of the SDK's route", msgs, b.proxy.rawN.Load())
	}

	sampling := &httpClient{url: url}
	init, err := sampling.do(context.Background(), http.MethodPost, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	sampling.id = init.Header.Get("Mcp-Session-Id")
	init.Body.Close()
	sampling.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	resp = sampling.post(t, callBody(5, "hello"))
	if msgs := responseOf(t, resp); len(msgs) != 1 || !strings.Contains(msgs[0], "hello") || b.proxy.rawN.Load() != 0 {
		t.Errorf("a call of a client that declared sampling: %q, raw calls %d; want an answer of the SDK's route", msgs, b.proxy.rawN.Load())
	}

	first := make(chan []string, 1)
	go func() { first <- responseOf(t, c.post(t, callBody(6, "block"))) }()
	<-b.entered
	resp = c.post(t, callBody(6, "hello"))
	if msgs := responseOf(t, resp); resp.StatusCode != http.StatusBadRequest || len(msgs) != 1 || !strings.Contains(msgs[0], "duplicate") {
		t.Errorf("a request whose id is in flight: %s %q, want 400", resp.Status, msgs)
	}
	c.post(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`).Body.Close()
	<-first
}

// TestHTTPCancelled: a call the client cancels over Streamable HTTP (with
// notifications/cancelled in a POST of its own) is not answered: its POST
// is answered with an event stream that ends without a message; the
// server is told, with the client's reason on the fast path; the
// session goes on. On either route.
func TestHTTPCancelled(t *testing.T) {
	for _, rawOff := range []bool{false, true} {
		b, url := newBlockProxy(t, rawOff, nil, nil)
		c := openHTTPSession(t, url)
		got := make(chan *http.Response, 1)
		go func() { got <- c.post(t, callBody(7, "block")) }()
		select {
		case <-b.entered:
		case <-time.After(time.Minute):
			t.Fatalf("rawOff=%v: the call never reached the server", rawOff)
		}
		resp := c.post(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user changed their mind"}}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("rawOff=%v: the cancellation was answered %s, want 202", rawOff, resp.Status)
		}
		var note *mcp.CancelledParams
		select {
		case note = <-b.cancelled:
		case <-time.After(time.Minute):
			t.Fatalf("rawOff=%v: the server was never told the call is cancelled", rawOff)
		}
		if !rawOff && note.Reason != "the user changed their mind" {
			t.Errorf("fast path: the server was given the reason %q, want the client's", note.Reason)
		}
		<-b.ended
		resp = <-got
		msgs := responseOf(t, resp)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || len(msgs) != 0 {
			t.Errorf("rawOff=%v: the cancelled call was answered %s %q with %q; want 200, an event stream and no message", rawOff, resp.Status, resp.Header.Get("Content-Type"), msgs)
		}
		resp = c.post(t, callBody(8, "hello"))
		if msgs := responseOf(t, resp); len(msgs) != 1 || !strings.Contains(msgs[0], `"id":8,"result"`) {
			t.Errorf("rawOff=%v: the next call: %s %q", rawOff, resp.Status, msgs)
		}
	}
}

// TestHTTPFastPathClientGone: a client that goes away during a call on the
// fast path (its connection closed, no cancellation sent: the
// specification says that is none) frees its place under MaxRequests,
// as on the SDK's route, while the call goes on downstream until its
// session ends.
func TestHTTPFastPathClientGone(t *testing.T) {
	b, url := newBlockProxy(t, false, nil, &HTTPOptions{MaxRequests: 1})
	c := openHTTPSession(t, url)
	ctx, abandon := context.WithCancel(context.Background())
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		if resp, err := c.do(ctx, http.MethodPost, "", callBody(7, "block")); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-b.entered
	abandon()
	<-gone
	var msgs []string
	waitFor(t, func() bool { // once the server has seen the connection close
		resp := c.post(t, callBody(8, "hello"))
		msgs = responseOf(t, resp)
		return resp.StatusCode != http.StatusServiceUnavailable
	})
	if len(msgs) != 1 || !strings.Contains(msgs[0], `"id":8,"result"`) || b.proxy.rawN.Load() != 2 {
		t.Errorf("the next call: %q (raw calls %d)", msgs, b.proxy.rawN.Load())
	}
	select {
	case <-b.cancelled:
		t.Fatal("the server was told the abandoned call is cancelled")
	default:
	}
	resp, err := c.do(context.Background(), http.MethodDelete, "", "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case note := <-b.cancelled:
		if note.Reason != errSessionDeleted.Error() {
			t.Errorf("ending the session cancelled the call downstream with the reason %q, want %q", note.Reason, errSessionDeleted.Error())
		}
	case <-time.After(time.Minute):
		t.Fatal("ending the session did not cancel the abandoned call downstream")
	}
}

// TestHTTPFastPathGateway: a gateway over Streamable HTTP takes the fast
// path for a nominal call of a server's tool, by its name, and a
// cancellation of one reaches that server with the client's reason.
func TestHTTPFastPathGateway(t *testing.T) {
	b, down, stop := startBlockServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := ConnectGateway(ctx, []Downstream{{Name: "blocks", Transport: down}}, &Options{Log: io.Discard, PerSession: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.HTTPHandler(&HTTPOptions{Log: io.Discard}))
	defer srv.Close()
	c := openHTTPSession(t, srv.URL)
	resp := c.post(t, callBody(3, "hello"))
	if msgs := responseOf(t, resp); !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || len(msgs) != 1 || !strings.Contains(msgs[0], `"id":3,"result"`) || !strings.Contains(msgs[0], "hello") {
		t.Errorf("a call through the gateway: %s %q %q", resp.Status, resp.Header.Get("Content-Type"), msgs)
	}
	if n := g.served()[0].rawN.Load(); n != 1 {
		t.Errorf("raw calls: %d, want 1", n)
	}
	got := make(chan *http.Response, 1)
	go func() { got <- c.post(t, callBody(4, "block")) }()
	<-b.entered
	c.post(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"enough"}}`).Body.Close()
	if note := <-b.cancelled; note.Reason != "enough" {
		t.Errorf("the server was given the reason %q", note.Reason)
	}
	resp = <-got
	if msgs := responseOf(t, resp); len(msgs) != 0 {
		t.Errorf("the cancelled call was answered %q", msgs)
	}
}

// TestHTTPCancelledSDKClient: a go-sdk client that cancels a call over
// Streamable HTTP (by its context) gets on with its session: the POST's
// stream that ends without a message does not fail its connection, on
// either route.
func TestHTTPCancelledSDKClient(t *testing.T) {
	for _, rawOff := range []bool{false, true} {
		b, url := newBlockProxy(t, rawOff, nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		callCtx, abandon := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
			done <- err
		}()
		<-b.entered
		abandon()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("rawOff=%v: the cancelled call returned %v", rawOff, err)
		}
		select {
		case <-b.cancelled:
		case <-time.After(time.Minute):
			t.Fatalf("rawOff=%v: the server was never told the call is cancelled", rawOff)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Errorf("rawOff=%v: the next call: %v %v", rawOff, err, res)
		}
		if took := b.proxy.rawN.Load() > 0; took == rawOff {
			t.Errorf("rawOff=%v: raw call route taken: %v", rawOff, took)
		}
	}
}
