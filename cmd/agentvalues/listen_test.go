package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
)

// This file drives the built command serving over Streamable HTTP
// (-listen) with raw HTTP requests, as hostile and careless clients send
// them: the bounds of mcpproxy's HTTP layer, seen from outside.

// A listener is the command as a child serving HTTP.
type listener struct {
	cmd  *exec.Cmd
	url  string      // http://127.0.0.1:PORT/mcp
	errs *syncWriter // its standard error (and its servers'), as it arrives
}

// stderr returns what the command has written to its standard error so
// far.
func (l *listener) stderr() string { return l.errs.String() }

// waitStderr waits until the command has written s to its standard error,
// failing the test after a minute (a bound on a hang, not a timing): a
// line logged as a reply is sent may arrive after the reply.
func (l *listener) waitStderr(t *testing.T, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !l.errs.waitFor(ctx, s) {
		t.Errorf("stderr never said %q:\n%s", s, l.stderr())
	}
}

// startListener runs the command with args (which serve over HTTP) and
// returns it once it says where it serves. It is stopped when the test
// ends.
func startListener(t *testing.T, args ...string) *listener {
	t.Helper()
	return startListenerEnv(t, nil, args...)
}

// startListenerEnv is startListener with the variables env (KEY=VALUE) set
// in the command's environment; AGENTVALUES_TOKEN is unset unless env sets
// it.
func startListenerEnv(t *testing.T, env []string, args ...string) *listener {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = testkit.ChildEnv(append([]string{runMainEnv + "=1", tokenEnv + "="}, env...)...)
	// A pipe of our own, not exec's: cmd.Wait does not wait for the
	// command's servers, which hold it too, to close it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	l := &listener{cmd: cmd, errs: &syncWriter{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang, not a timing
	defer cancel()
	go func() {
		io.Copy(l.errs, r)
		r.Close()
		cancel() // the command, and its servers, have ended
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	if l.errs.waitFor(ctx, " at http://") {
		l.url = servingAt.FindStringSubmatch(l.stderr())[1] // one write, one line
	} else {
		t.Fatalf("agentvalues %s never said where it serves; stderr:\n%s", args[0], l.stderr())
	}
	return l
}

// peak returns the child's peak resident memory in bytes so far.
func (l *listener) peak(t *testing.T) int64 {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads the peak resident memory in /proc/PID/status, which only Linux has")
	}
	p := vmHWM(l.cmd.Process.Pid)
	if p == 0 {
		t.Fatalf("the command is gone; stderr:\n%s", l.stderr())
	}
	return p
}

// An httpReply is what the server answered one request.
type httpReply struct {
	status int
	header http.Header
	body   string
	err    error // the request failed
}

// rpcError is the JSON-RPC error in the reply's body (a JSON response, or
// the last event of a stream), if any.
func (r httpReply) rpcError() (code int, msg string, id json.RawMessage) {
	data := r.body
	if i := strings.LastIndex(data, "data: "); i >= 0 {
		data = strings.TrimSpace(data[i+len("data: "):])
	}
	var m struct {
		ID    json.RawMessage
		Error *struct {
			Code    int
			Message string
		}
	}
	if json.Unmarshal([]byte(data), &m) != nil || m.Error == nil {
		return 0, "", nil
	}
	return m.Error.Code, m.Error.Message, m.ID
}

// post sends one MCP POST to url: body of size bytes (-1: chunked), in
// session sid ("" for none), with extra headers (name, value pairs).
func post(url, sid string, body io.Reader, size int64, headers ...string) httpReply {
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		return httpReply{err: err}
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return httpReply{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return httpReply{status: resp.StatusCode, header: resp.Header, body: string(data), err: err}
}

// postString is post of a whole body.
func postString(url, sid, body string, headers ...string) httpReply {
	return post(url, sid, strings.NewReader(body), int64(len(body)), headers...)
}

const initializeRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize opens a session on url and returns its id.
func initialize(t *testing.T, url string, headers ...string) string {
	t.Helper()
	r := postString(url, "", initializeRequest, headers...)
	sid := r.header.Get("Mcp-Session-Id")
	if r.err != nil || r.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %v %.300s", r.status, r.err, r.body)
	}
	if r := postString(url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers...); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %v %.300s", r.status, r.err, r.body)
	}
	return sid
}

// holdHelperArg makes the test binary (with runMainEnv set) read its
// standard input whole into one buffer of the size its argument gives and
// print its peak resident memory before and after, in bytes: the memory
// of a body held once, by this build (the race detector's shadow
// included), for the bounds of the HTTP tests.
const holdHelperArg = "test-hold"

func init() {
	testHelpers[holdHelperArg] = func(args []string) int {
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return 2
		}
		before := vmHWM(os.Getpid())
		buf := make([]byte, n)
		if _, err := io.ReadFull(os.Stdin, buf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(before, vmHWM(os.Getpid()), buf[n-1])
		return 0
	}
}

// heldOnce returns how much a process of this build grows to hold body
// once.
func heldOnce(t *testing.T, body []byte) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], holdHelperArg, strconv.Itoa(len(body)))
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", holdHelperArg, err)
	}
	var before, after int64
	if _, err := fmt.Sscan(string(out), &before, &after); err != nil {
		t.Fatalf("%s printed %q", holdHelperArg, out)
	}
	return after - before
}

// awaitReply returns the next reply of replies, failing the test if none
// comes in two minutes.
func awaitReply(t *testing.T, replies <-chan httpReply, l *listener) httpReply {
	t.Helper()
	select {
	case r := <-replies:
		return r
	case <-time.After(2 * time.Minute):
		t.Fatalf("no reply in two minutes; stderr:\n%s", l.stderr())
		return httpReply{}
	}
}

// bigCall returns a tools/call of the tool name whose arguments hold a
// string of n bytes.
func bigCall(id int, name string, n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 200)
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"pad":"`, id, name)
	b.Write(bytes.Repeat([]byte("x"), n))
	b.WriteString(`"}}}`)
	return b.Bytes()
}

// TestHTTPBodyMemory sends the proxy over HTTP a 200 MiB tools/call: its
// peak grows by about the body once (the SDK alone would have taken
// seven times it), against the growth of a process of the same build that
// holds the body once. Then eight such calls at once: the default bound on
// the bytes of bodies held at once (512 MiB) takes two, and answers the
// others 503 with Retry-After and a JSON-RPC error saying why, at once;
// the two taken are answered once their bodies are in.
func TestHTTPBodyMemory(t *testing.T) {
	const size = 200 << 20
	l := startListener(t, "proxy", "--listen", "0", "-max-message", strconv.Itoa(size+1<<20), "--", os.Args[0], blobServerArg)
	sid := initialize(t, l.url)
	body := bigCall(10, "no_such_tool", size)
	once := heldOnce(t, body)

	before := l.peak(t)
	r := post(l.url, sid, bytes.NewReader(body), int64(len(body)))
	if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "no_such_tool") {
		t.Fatalf("the 200 MiB call: %d %v %.300s\nstderr:\n%s", r.status, r.err, r.body, l.stderr())
	}
	grew := l.peak(t) - before
	t.Logf("a 200 MiB body: peak grew by %d MiB; holding it once grows a process by %d MiB", grew>>20, once>>20)
	if grew > 2*once+32<<20 {
		t.Errorf("the proxy's peak grew by %d MiB for a 200 MiB body; want at most twice what holding it once takes (%d MiB)", grew>>20, once>>20)
	}

	// Eight at once: each sends its first MiB, then waits on gate.
	gate := make(chan struct{})
	replies := make(chan httpReply, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		pr, pw := io.Pipe()
		wg.Go(func() {
			defer pw.Close()
			head := bytes.Replace(body[:1<<20], []byte(`"id":10,`), fmt.Appendf(nil, `"id":%d,`, 20+i), 1)
			if _, err := pw.Write(head); err != nil {
				return // refused, and the connection closed
			}
			<-gate
			pw.Write(body[1<<20:])
		})
		go func() { replies <- post(l.url, sid, pr, int64(len(body))) }()
	}
	before = l.peak(t)
	var busy, served int
	for range 6 {
		r := awaitReply(t, replies, l)
		code, msg, _ := r.rpcError()
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || code != -32051 || !strings.Contains(msg, "the server is busy: the request bodies it is handling hold 512 MiB, the most it holds at once") {
			t.Errorf("a call past the bound: %d %v Retry-After %q, %.300s", r.status, r.err, r.header.Get("Retry-After"), r.body)
		}
		busy++
	}
	close(gate)
	for range 2 {
		r := awaitReply(t, replies, l)
		if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "no_such_tool") {
			t.Errorf("a call within the bound: %d %v %.300s", r.status, r.err, r.body)
		}
		served++
	}
	wg.Wait()
	grew = l.peak(t) - before
	t.Logf("eight 200 MiB calls at once: %d served, %d refused; peak grew by %d MiB", served, busy, grew>>20)
	if grew > 4*once+64<<20 {
		t.Errorf("the proxy's peak grew by %d MiB for eight 200 MiB calls at once; want about two bodies held (%d MiB each)", grew>>20, once>>20)
	}
	l.waitStderr(t, "agentvalues: refused 1 over HTTP since the last such line: the request bodies being handled hold 512 MiB, the most this server holds at once (MaxBodyBytes)")
	if r := postString(l.url, sid, `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"ping","arguments":{}}}`); r.status != http.StatusOK || !strings.Contains(r.body, `"result"`) {
		t.Errorf("a call after: %d %v %.300s", r.status, r.err, r.body)
	}
}

// TestHTTPOrigin checks the Origin header of requests to the gateway on a
// loopback address: none (a client that is not a browser), the server's
// own origin (any loopback host, the port it serves on) and an origin
// allowed with -allow-origin are served; any other is refused with 403
// and a JSON-RPC error saying why, whatever Host says — the page of a
// DNS-rebound name would send its own name as both.
func TestHTTPOrigin(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers":{"blobs":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(blobServerArg) + `]}}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	l := startListener(t, "gateway", "--config", path, "--listen", "0", "-allow-origin", "https://app.example.com", "-allow-origin", "http://LOCALTOOL.test:3000")
	port := l.url[strings.LastIndex(l.url, ":")+1 : strings.LastIndex(l.url, "/")]
	for _, tc := range []struct {
		origin, host string
		ok           bool
	}{
		{"", "", true},
		{"http://127.0.0.1:" + port, "", true},
		{"http://localhost:" + port, "", true},
		{"http://[::1]:" + port, "", true},
		{"https://app.example.com", "", true},
		{"https://app.example.com:443", "", true},
		{"http://localtool.test:3000", "", true},
		{"http://evil.example:" + port, "", false},
		{"http://127.0.0.1:1", "", false},
		{"https://127.0.0.1:" + port, "", false},
		{"http://app.example.com", "", false},
		{"null", "", false},
		{"http://localhost.evil.example:" + port, "localhost:" + port, false},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			var headers []string
			if tc.origin != "" {
				headers = []string{"Origin", tc.origin}
			}
			r := postString(l.url, "", initializeRequest, headers...)
			code, msg, _ := r.rpcError()
			switch {
			case tc.ok && (r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == ""):
				t.Errorf("Origin %q: %d %.300s; want it served", tc.origin, r.status, r.body)
			case !tc.ok && (r.status != http.StatusForbidden || code != -32600 || !strings.Contains(msg, fmt.Sprintf("Forbidden: the Origin %q is not allowed", tc.origin))):
				t.Errorf("Origin %q: %d %.300s; want 403 and a JSON-RPC error naming it", tc.origin, r.status, r.body)
			}
		})
	}
	// Every request, not only the first of a session.
	sid := initialize(t, l.url)
	r := postString(l.url, sid, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, "Origin", "http://evil.example:"+port)
	if r.status != http.StatusForbidden {
		t.Errorf("a request of a session from another origin: %d %.300s", r.status, r.body)
	}
}

// TestHTTPSessionCap opens sessions on the proxy up to -max-sessions: one
// more is refused with 503 and a JSON-RPC error saying how one ends, until
// a client ends its session (DELETE); then, once more at the bound, until
// an idle session has been ended by -session-idle.
func TestHTTPSessionCap(t *testing.T) {
	t.Parallel()
	l := startListener(t, "proxy", "--listen", "0", "-max-sessions", "3", "-session-idle", "2s", "--", os.Args[0], blobServerArg)
	var sids []string
	for range 3 {
		sids = append(sids, initialize(t, l.url))
	}
	refused := func() {
		t.Helper()
		r := postString(l.url, "", initializeRequest)
		code, msg, _ := r.rpcError()
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || code != -32051 ||
			!strings.Contains(msg, "the server has 3 sessions open, the most it keeps: a new one can start once one ends (a client ends its session with DELETE; an idle one ends after 2s)") {
			t.Fatalf("a fourth session: %d %v %.300s", r.status, r.err, r.body)
		}
	}
	refused()
	// The open sessions go on.
	if r := postString(l.url, sids[0], `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{}}}`); r.status != http.StatusOK || !strings.Contains(r.body, `"result"`) {
		t.Fatalf("a call in an open session: %d %.300s", r.status, r.body)
	}
	req, _ := http.NewRequest("DELETE", l.url, nil)
	req.Header.Set("Mcp-Session-Id", sids[1])
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	initialize(t, l.url) // in the place of the one ended
	refused()
	// Now idle: the sessions end after 2s without a request, each saying
	// so, and a new one starts in a place freed.
	l.waitStderr(t, "an HTTP session ended after 2s without a request (SessionTimeout); its place is free")
	if r := postString(l.url, "", initializeRequest); r.status != http.StatusOK {
		t.Fatalf("a new session once one idled out: %d %v %.300s", r.status, r.err, r.body)
	}
	l.waitStderr(t, "3 sessions are open, the most this server keeps (MaxSessions)")
}

// TestHTTPSlowClients: connections past -max-conns are answered 503 and
// closed at once, and a place frees as soon as a connection closes; with
// -read-timeout, a client that never sends a request, one that trickles
// its headers and one that trickles its body are cut off (the last with
// 408 and a JSON-RPC error saying how much arrived), so that clients held
// in their place by nothing but their slowness give it back, and a
// legitimate initialize is served.
func TestHTTPSlowClients(t *testing.T) {
	t.Parallel()
	dial := func(t *testing.T, url string) net.Conn {
		t.Helper()
		host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("connection cap", func(t *testing.T) {
		t.Parallel()
		l := startListener(t, "proxy", "--listen", "0", "-max-conns", "3", "-read-timeout", "0", "--", os.Args[0], blobServerArg)
		var idle []net.Conn
		for range 3 {
			idle = append(idle, dial(t, l.url)) // accepted before the request below: in order
		}
		r := postString(l.url, "", initializeRequest)
		code, msg, _ := r.rpcError()
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || code != -32051 ||
			msg != "mcpproxy: the server is busy: 3 connections are open, the most it keeps; try again in a moment" {
			t.Fatalf("initialize with three connections open: %d %v %.300s", r.status, r.err, r.body)
		}
		idle[0].Close() // the server sees the close, and says the place is free
		l.waitStderr(t, "a connection closed, and a place under MaxConns (3) is free again")
		if r := postString(l.url, "", initializeRequest); r.status != http.StatusOK {
			t.Fatalf("initialize after a connection closed: %d %v %.300s", r.status, r.err, r.body)
		}
		l.waitStderr(t, "3 connections are open, the most this server keeps (MaxConns)")
	})
	t.Run("read timeout", func(t *testing.T) {
		t.Parallel()
		l := startListener(t, "proxy", "--listen", "0", "-max-conns", "3", "-read-timeout", "1s", "--", os.Args[0], blobServerArg)
		host := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://"), "/mcp")
		body := initializeRequest
		slow := []struct {
			name, sent, trickle string
		}{
			{"silent", "", ""},
			{"headers", "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\n", "X-Slow: " + strings.Repeat("a", 10000)},
			{"body", "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n", body},
		}
		ended := make(chan string, len(slow))
		for _, s := range slow {
			c := dial(t, l.url)
			io.WriteString(c, s.sent)
			go func() { // a byte every 50 ms, while the server listens: the pace of a slow client, not a wait (a slower machine sends fewer bytes before the timeout, and the client is cut off all the same)
				pace := time.NewTicker(50 * time.Millisecond)
				defer pace.Stop()
				for i := 0; i < len(s.trickle); i++ {
					if _, err := c.Write([]byte{s.trickle[i]}); err != nil {
						return
					}
					<-pace.C
				}
			}()
			go func() {
				got, _ := io.ReadAll(c) // until the server closes
				ended <- s.name + ": " + string(got)
			}()
		}
		for range slow {
			select {
			case e := <-ended:
				name, got, _ := strings.Cut(e, ": ")
				t.Logf("%s client cut off: %.200q", name, got)
				if name == "body" && (!strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, `"error":{"code":-32600,"message":"mcpproxy: Invalid Request: the body did not arrive in time: `) || !strings.Contains(got, fmt.Sprintf(" of %d bytes in ", len(body)))) {
					t.Errorf("the body trickler got %q, want 408 and a JSON-RPC error", got)
				}
			case <-time.After(time.Minute):
				t.Fatalf("a slow client is still served after a minute; stderr:\n%s", l.stderr())
			}
		}
		initialize(t, l.url)
	})
}

// vmHWM returns the peak resident memory of a running process in bytes, or
// 0 once it has exited.
func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
