//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
)

// This file drives the built proxy command over stdio with raw JSON-RPC
// lines, in front of a hostile downstream server written for the test: it
// checks that nothing a client or a server sends stops the proxy, and what
// the agent is told instead.

// hostileServerArg makes the test binary (with runMainEnv set) a downstream
// MCP server that speaks raw JSON-RPC and misbehaves on purpose. Its one
// argument is a mode: "serve", or "exit3" (exit at once with status 3).
const hostileServerArg = "test-hostile-server"

func init() { testHelpers[hostileServerArg] = hostileServer }

// hostileNoise is the log line the hostile server writes to its standard
// output at start and before some results, as careless servers do.
const hostileNoise = "Server listening on port 3000"

// deepSchemaDepth is how deep the input schema of the hostile server's tool
// deep_schema nests: past what the SDK decodes in one message.
const deepSchemaDepth = 1100

// filterTreeSchema is the input schema of the hostile server's tool filter:
// a filter tree whose validation, without a budget, doubles with every
// level of nesting (both the and and the or branch of the oneOf recurse
// into a node's args). The root package's tests validate the same schema
// (filterTreeSchema in schema_test.go).
const filterTreeSchema = `{"type":"object","properties":{"filter":{"$ref":"#/$defs/node"}},"required":["filter"],"$defs":{` +
	`"node":{"oneOf":[{"$ref":"#/$defs/and"},{"$ref":"#/$defs/or"},{"$ref":"#/$defs/leaf"}]},` +
	`"and":{"type":"object","properties":{"op":{"const":"and"},"args":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["op","args"]},` +
	`"or":{"type":"object","properties":{"op":{"const":"or"},"args":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["op","args"]},` +
	`"leaf":{"type":"object","properties":{"field":{"type":"string"},"eq":{"type":["string","number"]}},"required":["field","eq"]}}}`

// filterTree returns filter arguments depth levels deep, alternating and
// and or: valid, and exponential to validate without a budget.
func filterTree(depth int) string {
	node := `{"field":"x","eq":1}`
	for i := range depth {
		op := "and"
		if i%2 == 1 {
			op = "or"
		}
		node = `{"op":"` + op + `","args":[` + node + `]}`
	}
	return `{"filter":` + node + `}`
}

// nested returns a JSON value nested n arrays deep around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func hostileServer(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: test-hostile-server serve|exit3")
		return 2
	}
	if args[0] == "exit3" {
		fmt.Fprintln(os.Stderr, "hostile-server: giving up at start")
		return 3
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	send := func(s string) {
		out.WriteString(s)
		out.WriteByte('\n')
		out.Flush()
	}
	send(hostileNoise)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue // notifications
		}
		id := string(req.ID)
		result := func(r string) { send(`{"jsonrpc":"2.0","id":` + id + `,"result":` + r + `}`) }
		switch req.Method {
		case "initialize":
			result(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`)
		case "tools/list":
			deep := strings.Repeat(`{"type":"object","properties":{"a":`, deepSchemaDepth/2) + `{}` + strings.Repeat(`}}`, deepSchemaDepth/2)
			var tools []string
			for _, name := range []string{"echo", "noise", "deep_result", "not_object", "bad_content", "long_error", "huge", "stall"} {
				tools = append(tools, `{"name":"`+name+`","inputSchema":{"type":"object"}}`)
			}
			tools = append(tools, `{"name":"deep_schema","inputSchema":`+deep+`}`)
			tools = append(tools, `{"name":"filter","inputSchema":`+filterTreeSchema+`}`)
			result(`{"tools":[` + strings.Join(tools, ",") + `]}`)
		case "tools/call":
			switch req.Params.Name {
			case "echo":
				text, _ := json.Marshal(string(req.Params.Arguments))
				result(`{"content":[{"type":"text","text":` + string(text) + `}]}`)
			case "noise":
				send(hostileNoise)
				result(`{"content":[{"type":"text","text":"after the noise"}]}`)
			case "deep_result":
				result(`{"content":[{"type":"text","text":"deep"}],"structuredContent":{"tree":` + nested(1200, "1") + `}}`)
			case "not_object":
				result(`[1,2,3]`)
			case "bad_content":
				result(`{"content":"not an array"}`)
			case "long_error":
				msg, _ := json.Marshal("failure: " + strings.Repeat("detail ", 100<<10/7))
				send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":` + string(msg) + `}}`)
			case "filter":
				result(`{"content":[{"type":"text","text":"filtered"}]}`)
			case "stall":
				// Answers, then reads nothing until the file named by until
				// exists (two minutes at most), as a server busy elsewhere.
				var a struct{ Until string }
				json.Unmarshal(req.Params.Arguments, &a)
				result(`{"content":[{"type":"text","text":"stalling"}]}`)
				for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
					if _, err := os.Stat(a.Until); err == nil {
						break
					}
				}
			case "huge":
				// The id last, as the TypeScript SDK writes it.
				var a struct{ MiB int }
				json.Unmarshal(req.Params.Arguments, &a)
				out.WriteString(`{"result":{"content":[{"type":"text","text":"`)
				chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
				for range a.MiB {
					out.Write(chunk)
				}
				send(`"}]},"jsonrpc":"2.0","id":` + id + `}`)
			default:
				send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"unknown tool"}}`)
			}
		default:
			send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
}

// A rawProxy is the proxy command as a child, spoken to in raw lines.
type rawProxy struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // the proxy's stdout, line by line
	exited chan struct{}
	stderr func() string
}

// startRawProxy starts `agentvalues proxy FLAGS -- <hostile server> mode`
// and completes the MCP handshake.
func startRawProxy(t *testing.T, mode string, flags ...string) *rawProxy {
	t.Helper()
	args := append([]string{"proxy"}, flags...)
	args = append(args, "--", os.Args[0], hostileServerArg, mode)
	return startRawCommand(t, args, mode == "serve")
}

// startRawCommand starts `agentvalues ARGS` and, with handshake, completes
// the MCP handshake.
func startRawCommand(t *testing.T, args []string, handshake bool) *rawProxy {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = testkit.ChildEnv(runMainEnv + "=1")
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { errFile.Close() })
	cmd.Stderr = errFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawProxy{cmd: cmd, stdin: stdin, lines: make(chan []byte, 64), exited: make(chan struct{}),
		stderr: func() string { b, _ := os.ReadFile(errFile.Name()); return string(b) }}
	go func() {
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				r.lines <- line
			}
			if err != nil {
				close(r.lines)
				return
			}
		}
	}()
	go func() {
		cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-r.exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-r.exited
		}
	})
	if !handshake {
		return r
	}
	r.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp := r.recv(t); resp.Error != nil {
		t.Fatalf("initialize: %+v", resp.Error)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawProxy) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatalf("writing to the proxy: %v\nstderr:\n%s", err, r.stderr())
	}
}

// A rawResponse is one JSON-RPC response line from the proxy.
type rawResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool                       `json:"isError"`
		Tools   []struct{ Name string }    `json:"tools"`
		Meta    map[string]json.RawMessage `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	line []byte
}

// text is the text of a tool result's content blocks.
func (r rawResponse) text() string {
	if r.Result == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Result.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// recv returns the proxy's next response line (notifications are skipped).
func (r *rawProxy) recv(t *testing.T) rawResponse {
	t.Helper()
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("the proxy closed its output\nstderr:\n%s", r.stderr())
			}
			var resp rawResponse
			if err := json.Unmarshal(line, &resp); err != nil {
				t.Fatalf("proxy wrote %q: %v", line, err)
			}
			if resp.ID == nil && resp.Error == nil {
				continue // a notification
			}
			resp.line = line
			return resp
		case <-time.After(time.Minute):
			t.Fatalf("no response from the proxy in a minute\nstderr:\n%s", r.stderr())
		}
	}
}

// call calls a tool and returns the response.
func (r *rawProxy) call(t *testing.T, id int, name, args string) rawResponse {
	t.Helper()
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args))
	resp := r.recv(t)
	if string(resp.ID) != strconv.Itoa(id) {
		t.Fatalf("call %d answered as %s: %s", id, resp.ID, resp.line)
	}
	return resp
}

// alive checks that the proxy still answers a call.
func (r *rawProxy) alive(t *testing.T, id int) {
	t.Helper()
	resp := r.call(t, id, "echo", `{"still":"here"}`)
	if resp.Error != nil || resp.Result == nil || !strings.Contains(resp.text(), `{\"still\":\"here\"}`) && !strings.Contains(resp.text(), `{"still":"here"}`) {
		t.Fatalf("the proxy no longer works: %s\nstderr:\n%s", resp.line, r.stderr())
	}
}

// peakRSS returns the proxy's peak resident memory in bytes so far.
func (r *rawProxy) peakRSS(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}

// TestProxyMalformedClientLines sends the proxy every kind of malformed
// line a client may write: each gets the JSON-RPC error the specification
// names (or, for a byte order mark, is accepted), and the proxy carries on.
func TestProxyMalformedClientLines(t *testing.T) {
	t.Parallel()
	r := startRawProxy(t, "serve", "-max-message", "1048576")
	deepArgs := `{"a":` + nested(998, "1") + `}`
	for _, tc := range []struct {
		name, line string
		id         string // "null" or the request's id
		code       int
		says       string
	}{
		{"not JSON", `hello`, "null", -32700, "Parse error"},
		{"truncated", `{"jsonrpc":"2.0","id":7,"method":`, "null", -32700, "not valid JSON"},
		{"batch", `[{"jsonrpc":"2.0","id":10,"method":"ping"}]`, "null", -32600, "batches are not supported"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":11,"method":"ping"}`, "11", -32600, `"jsonrpc" must be "2.0"`},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", -32600, "an id is a string or a number"},
		{"two messages on a line", `{"jsonrpc":"2.0","id":12,"method":"ping"}{"jsonrpc":"2.0","id":13,"method":"ping"}`, "null", -32700, "one message per line"},
		{"not an object", `"ping"`, "null", -32600, "not a string"},
		{"arguments 998 deep", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo","arguments":` + deepArgs + `}}`, "14", -32602, "the message nests 1001 levels deep; at most 1000 can be decoded"},
		{"over the message bound", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"echo","arguments":{"s":"` + strings.Repeat("x", 2<<20) + `"}}}`, "15", -32600, "over the limit of 1048576"},
		{"over the bound, id last", `{"method":"tools/call","params":{"name":"echo","arguments":{"s":"` + strings.Repeat("x", 2<<20) + `"}},"jsonrpc":"2.0","id":"s16"}`, `"s16"`, -32600, "over the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.send(t, tc.line)
			resp := r.recv(t)
			if resp.Error == nil || string(resp.ID) != tc.id || resp.Error.Code != tc.code || !strings.Contains(resp.Error.Message, tc.says) {
				t.Errorf("got %.300s\nwant id %s, code %d, a message saying %q", resp.line, tc.id, tc.code, tc.says)
			}
		})
	}
	t.Run("byte order mark", func(t *testing.T) {
		r.send(t, "\ufeff"+`{"jsonrpc":"2.0","id":20,"method":"ping"}`)
		if resp := r.recv(t); string(resp.ID) != "20" || resp.Error != nil {
			t.Errorf("ping after a BOM: %s", resp.line)
		}
	})
	// Notifications cannot be answered: they are logged.
	r.send(t, `{"jsonrpc":"1.0","method":"notifications/cancelled"}`)
	r.alive(t, 30)
	if !strings.Contains(r.stderr(), `ignored a malformed message from the client: Invalid Request: "jsonrpc" must be "2.0"`) {
		t.Errorf("the malformed notification was not logged; stderr:\n%s", r.stderr())
	}
}

// TestProxyHostileServer checks what the agent is told when the downstream
// server misbehaves, and that the proxy keeps serving it.
func TestProxyHostileServer(t *testing.T) {
	r := startRawProxy(t, "serve", "-max-message", "1048576")

	t.Run("tool list without the too deep tool", func(t *testing.T) {
		r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		resp := r.recv(t)
		var names []string
		for _, tool := range resp.Result.Tools {
			names = append(names, tool.Name)
		}
		if got := strings.Join(names, ","); got != "echo,noise,deep_result,not_object,bad_content,long_error,huge,stall,filter,read_value,query_value" && got != "bad_content,deep_result,echo,filter,huge,long_error,noise,not_object,query_value,read_value,stall" {
			t.Errorf("tools offered: %s", got)
		}
		if !strings.Contains(r.stderr(), `not offering the downstream tool "deep_schema": its definition nests 1102 levels deep, more than 512`) {
			t.Errorf("stderr does not say why deep_schema is left out:\n%s", r.stderr())
		}
	})
	t.Run("log lines on stdout", func(t *testing.T) {
		if resp := r.call(t, 2, "noise", `{}`); resp.Result == nil || resp.Result.IsError || !strings.Contains(resp.text(), "after the noise") {
			t.Errorf("noise: %s", resp.line)
		}
		if n := strings.Count(r.stderr(), "not JSON-RPC: \""+hostileNoise+"\""); n != 2 {
			t.Errorf("want the two noise lines logged, got %d; stderr:\n%s", n, r.stderr())
		}
	})
	t.Run("result nested 1200 deep", func(t *testing.T) {
		resp := r.call(t, 3, "deep_result", `{}`)
		if resp.Result == nil || resp.Result.IsError || !strings.Contains(resp.text(), "r2 = json(keys=1, bytes=") && !strings.Contains(resp.text(), "stored as r2") {
			t.Fatalf("deep_result: %s", resp.line)
		}
		read := r.call(t, 4, "read_value", `{"ref":"$r2.tree"}`)
		if !strings.HasPrefix(read.text(), nested(1200, "1")) {
			t.Errorf("read_value of the deep result: %.200s", read.text())
		}
	})
	before := r.peakRSS(t)
	for _, tc := range []struct {
		id         int
		tool, says string
	}{
		{5, "not_object", `not_object ran, but the proxy could not take its result: the downstream server's result is an array "[1,2,3]", not a CallToolResult object`},
		{6, "bad_content", "bad_content ran, but its result is not a valid MCP tool result"},
		{7, "huge", "huge ran, but the proxy could not take its result: the downstream server's response was dropped: the message is 209715273 bytes, over the limit of 1048576"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			start := time.Now()
			resp := r.call(t, tc.id, tc.tool, `{"MiB":200}`)
			if resp.Result == nil || !resp.Result.IsError || !strings.Contains(resp.text(), tc.says) {
				t.Errorf("%s: %.500s\nwant an isError result saying %q", tc.tool, resp.line, tc.says)
			}
			t.Logf("%s answered in %v", tc.tool, time.Since(start).Round(time.Millisecond))
		})
	}
	t.Run("long error message", func(t *testing.T) {
		resp := r.call(t, 8, "long_error", `{}`)
		if resp.Result == nil || !resp.Result.IsError || len(resp.line) > 4<<10 || !strings.Contains(resp.text(), "(the message is stored)\nr4 = text(len=100 KiB") {
			t.Errorf("long_error: %d bytes: %.600s", len(resp.line), resp.line)
		}
		read := r.call(t, 9, "read_value", `{"ref":"r4","limit":200}`)
		if !strings.HasPrefix(read.text(), "failure: detail detail") {
			t.Errorf("read_value of the stored message: %s", read.line)
		}
	})
	// The 200 MiB line of huge, over the 1 MiB bound, was read through and
	// never held: the peak grew by far less than it (the race detector's
	// own memory included).
	if grew := r.peakRSS(t) - before; grew > 48<<20 {
		t.Errorf("the proxy's peak RSS grew by %d MiB while it dropped a 200 MiB result; want it bounded by the 1 MiB message bound", grew>>20)
	} else {
		t.Logf("peak RSS grew by %d MiB to %d MiB", grew>>20, (before+grew)>>20)
	}
	r.alive(t, 10)
}

// TestProxyServerExitsAtStart checks that a server that exits before the
// handshake is reported with its exit status.
// TestProxyServerStopsReading: a server that stops reading its input while
// the client goes on calling it (past what a pipe holds) does not stop the
// proxy reading the client: what the proxy answers itself still is, and the
// calls that waited are answered once the server reads again.
func TestProxyServerStopsReading(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	r := startRawProxy(t, "serve")
	if resp := r.call(t, 2, "stall", fmt.Sprintf(`{"until":%q}`, release)); !strings.HasPrefix(resp.text(), "stalling") {
		t.Fatalf("stall: %s", resp.line)
	}
	const n = 64 // 128 KiB of requests, past a pipe's 64 KiB
	pad := strings.Repeat("x", 2000)
	go func() { // a proxy that stopped reading would hold these writes up too
		for i := range n {
			io.WriteString(r.stdin, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"pad":%q}}}`+"\n", 100+i, pad))
		}
		io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`+"\n")
	}()
	if resp := r.recv(t); string(resp.ID) != "3" || resp.Error != nil {
		t.Fatalf("while the server does not read, got %s; want the tools/list the proxy answers itself", resp.line)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range n {
		resp := r.recv(t)
		if resp.Error != nil || !strings.Contains(resp.text(), pad) {
			t.Fatalf("an echo after the stall: %s", resp.line)
		}
		seen[string(resp.ID)] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct echoes answered, want %d", len(seen), n)
	}
	r.alive(t, 4)
}

func TestProxyServerExitsAtStart(t *testing.T) {
	t.Parallel()
	r := startRawProxy(t, "exit3")
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy still runs 30s after its server exited")
	}
	ws, _ := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.ExitStatus() != 1 || !strings.Contains(r.stderr(), "exited (exit status 3) before the MCP handshake completed") {
		t.Errorf("exit %v, stderr:\n%s", r.cmd.ProcessState, r.stderr())
	}
}

// TestProxyExponentialSchema checks that validation against a schema whose
// cost doubles with depth is cut off by its budget, that the proxy serves
// the next call, and that closing its input while such a validation runs
// ends the proxy at once.
func TestProxyExponentialSchema(t *testing.T) {
	t.Parallel()
	r := startRawProxy(t, "serve")
	if resp := r.call(t, 1, "filter", filterTree(3)); resp.Result == nil || resp.Result.IsError || !strings.Contains(resp.text(), "filtered") {
		t.Fatalf("a shallow filter: %s", resp.line)
	}
	start := time.Now()
	resp := r.call(t, 2, "filter", filterTree(40))
	if resp.Result == nil || !resp.Result.IsError || !strings.Contains(resp.text(), "filter was not called") || !strings.Contains(resp.text(), "too complex to validate") {
		t.Errorf("a filter 40 deep: %.600s", resp.line)
	}
	t.Logf("refused in %v", time.Since(start).Round(time.Millisecond))
	r.alive(t, 3)

	// A validation in flight ends with the input.
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"filter","arguments":%s}}`, filterTree(40)))
	r.stdin.Close()
	select {
	case <-r.exited:
		if !r.cmd.ProcessState.Success() {
			t.Errorf("the proxy exited with %v after its input closed\nstderr:\n%s", r.cmd.ProcessState, r.stderr())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the proxy still runs 15s after its input closed during a validation\nstderr:\n%s", r.stderr())
	}
}
