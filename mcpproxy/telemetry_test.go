package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder is a Telemetry that keeps what it is told.
type recorder struct {
	mu    sync.Mutex
	reqs  []Request
	began []mcp.Meta
	downs []string // each downstream request's outcome: "ok" or its error
}

func (r *recorder) Begin(ctx context.Context, req *Request, meta mcp.Meta) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.began = append(r.began, meta)
	return ctx
}

// downTrace is what recorder puts in the _meta of a downstream request.
const downTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func (r *recorder) Downstream(ctx context.Context, req *Request, meta mcp.Meta) (context.Context, func(error)) {
	meta["traceparent"] = downTrace
	return ctx, func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.downs = append(r.downs, "error")
		} else {
			r.downs = append(r.downs, "ok")
		}
	}
}

func (r *recorder) End(ctx context.Context, req *Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, *req)
}

// observedOutcome is what the telemetry of one call saw.
type observedOutcome struct {
	Reqs  []Request
	Downs []string
	Sent  bool // the downstream server read the trace context put in _meta
	Raw   bool // the raw call route took the call
	Last  string
}

// runObserved makes the calls lines (the last observed) on a fresh proxy
// with a recorder, over the raw call route or (rawOff) the SDK route.
func runObserved(t *testing.T, rawOff, v2 bool, script map[string]string, lines ...string) observedOutcome {
	t.Helper()
	srv := &scriptServer{script: script, cancel: make(chan struct{}, 16), gone: make(chan struct{}), v2: v2}
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	go srv.serve(sr, sw)
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{}
	opts := &Options{Log: io.Discard, Telemetry: rec}
	if v2 { // the server at the client's version, as the command asks it (protocol.go)
		opts.ProtocolVersion = "2026-07-28"
	}
	p, err := Connect(ctx, lineDownstream{pr, pw}, opts)
	if err != nil {
		t.Fatal(err)
	}
	p.rawOff = rawOff
	c := newLineClient(func(lt *LineTransport) { p.Run(ctx, lt) })
	defer func() {
		cancel()
		c.w.Close()
		<-c.ran
		sw.Close()
	}()
	if v2 {
		c.discover(t)
	} else {
		c.initialize(t)
	}
	var last string
	for _, line := range lines {
		if v2 {
			line = strings.Replace(line, `"params":{`, `"params":{"_meta":`+v2Meta+`,`, 1)
		}
		c.send(t, line)
		last = c.next(t)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return observedOutcome{Reqs: rec.reqs, Downs: rec.downs, Sent: len(srv.lines(downTrace)) > 0, Raw: p.rawN.Load() > 0, Last: last}
}

// TestTelemetryRoutes: the raw call route and the SDK route tell the
// Telemetry the same facts of every call, for every downstream answer,
// and both send downstream the _meta it added.
func TestTelemetryRoutes(t *testing.T) {
	script := scriptCases()
	// r1 is the text "json text", which a reference then passes as the
	// case to answer.
	script["source"] = `{"jsonrpc":"2.0","id":%ID%,"result":{"content":[{"type":"text","text":"json text"}]}}`
	cases := map[string][]string{}
	for name := range scriptCases() {
		cases[name] = []string{callLine(name)}
	}
	cases["die"] = []string{callLine("die")}
	cases["reference"] = []string{callLine("source"), callLine("$r1")}
	cases["invalid"] = []string{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"result","arguments":{"case":5}}}`}
	cases["unknown reference"] = []string{callLine("$r9")}
	for _, v2 := range []bool{false, true} {
		for name, lines := range cases {
			sdk := runObserved(t, true, v2, script, lines...)
			raw := runObserved(t, false, v2, script, lines...)
			if !raw.Raw {
				t.Errorf("v2=%v %s: the raw call route did not take the call", v2, name)
			}
			raw.Raw = false
			if diff := cmp.Diff(sdk, raw); diff != "" {
				t.Errorf("v2=%v %s: the raw call route's telemetry differs from the SDK route's (-sdk +raw):\n%s", v2, name, diff)
			}
			if n := len(sdk.Reqs); n != len(lines) {
				t.Fatalf("v2=%v %s: %d requests observed, want %d", v2, name, n, len(lines))
			}
			if r := sdk.Reqs[len(lines)-1]; r.Method != "tools/call" || r.Name != "result" || r.Server != "script" {
				t.Errorf("v2=%v %s: observed %+v", v2, name, r)
			}
			if name != "invalid" && name != "unknown reference" && !sdk.Sent {
				t.Errorf("v2=%v %s: the downstream request did not carry the _meta the Telemetry added", v2, name)
			}
		}
	}

	// The facts themselves, for a few answers.
	for name, want := range map[string]Request{
		"reference": {Method: "tools/call", Server: "script", Name: "result", Handle: "r2", Stored: 1,
			BytesReturned: 23, Refs: 1, RefBytes: int64(len(`"json text"`)), Validation: "ok"},
		"big text":          {Method: "tools/call", Server: "script", Name: "result", Handle: "r1", Stored: 1, Validation: "ok"},
		"is error":          {Method: "tools/call", Server: "script", Name: "result", Handle: "r1", Stored: 1, Validation: "ok", ErrorClass: ErrorTool},
		"error":             {Method: "tools/call", Server: "script", Name: "result", Validation: "ok", ErrorClass: ErrorDownstream},
		"die":               {Method: "tools/call", Server: "script", Name: "result", Validation: "ok", ErrorClass: ErrorConnection},
		"not json":          {Method: "tools/call", Server: "script", Name: "result", Validation: "ok", ErrorClass: ErrorResult},
		"invalid":           {Method: "tools/call", Server: "script", Name: "result", Validation: "invalid", ErrorClass: ErrorInvalidArguments},
		"unknown reference": {Method: "tools/call", Server: "script", Name: "result", Validation: "invalid", ErrorClass: ErrorInvalidArguments},
	} {
		got := runObserved(t, false, false, script, cases[name]...)
		r := got.Reqs[len(got.Reqs)-1]
		if name == "reference" {
			var resp struct {
				Result struct{ Content []struct{ Text string } }
			}
			if err := json.Unmarshal([]byte(got.Last), &resp); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range resp.Result.Content {
				n += len(c.Text)
			}
			if r.BytesToModel != int64(n) {
				t.Errorf("reference: %d bytes to the model, want %d, the text of %s", r.BytesToModel, n, got.Last)
			}
			r.BytesToModel = 0
		}
		if name == "big text" {
			if r.BytesReturned < 20000 || r.BytesToModel >= r.BytesReturned/4 {
				t.Errorf("big text: returned %d bytes, %d to the model: want a large value previewed", r.BytesReturned, r.BytesToModel)
			}
			r.BytesReturned, r.BytesToModel = 0, 0
		}
		if name != "reference" && name != "big text" {
			r.BytesReturned, r.BytesToModel, r.Handle, r.Stored = 0, 0, "", 0
			if name == "is error" {
				r.Handle, r.Stored = "r1", 1
			}
		}
		if diff := cmp.Diff(want, r); diff != "" {
			t.Errorf("%s: observed (-want +got):\n%s", name, diff)
		}
	}
}

// TestTelemetryTraceContext: the client's _meta reaches Begin.
func TestTelemetryTraceContext(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"traceparent":%q},"name":"result","arguments":{"case":"text"}}}`, parent)
	srv := &scriptServer{script: scriptCases(), cancel: make(chan struct{}, 16), gone: make(chan struct{})}
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	go srv.serve(sr, sw)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	p, err := Connect(ctx, lineDownstream{pr, pw}, &Options{Log: io.Discard, Telemetry: rec})
	if err != nil {
		t.Fatal(err)
	}
	c := newLineClient(func(lt *LineTransport) { p.Run(ctx, lt) })
	defer func() { cancel(); c.w.Close(); <-c.ran; sw.Close() }()
	c.initialize(t)
	c.send(t, line)
	c.next(t)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.began) != 1 || rec.began[0]["traceparent"] != parent {
		t.Errorf("Begin was given %v, want the client's traceparent", rec.began)
	}
	if got := srv.lines(`"traceparent":"` + downTrace + `"`); len(got) != 1 {
		t.Errorf("the downstream server read %d requests with the Telemetry's traceparent, want 1", len(got))
	}
	if got := srv.lines(parent); len(got) != 0 {
		t.Errorf("the client's own traceparent went downstream: %q", got)
	}
}

// TestTelemetryOwnTools: calls of read_value and query_value are observed
// as calls of OwnServer: what the model got, what query_value stored, and
// a bad reference as invalid arguments.
func TestTelemetryOwnTools(t *testing.T) {
	script := scriptCases()
	got := runObserved(t, false, false, script,
		callLine("big text"),
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_value","arguments":{"ref":"r1","limit":300}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"query_value","arguments":{"ref":"r1","jq":"length"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"read_value","arguments":{"ref":"r9"}}}`,
	)
	if len(got.Reqs) != 4 {
		t.Fatalf("%d requests observed, want 4: %+v", len(got.Reqs), got.Reqs)
	}
	read, query, bad := got.Reqs[1], got.Reqs[2], got.Reqs[3]
	if read.Server != OwnServer || read.Name != "read_value" || read.BytesToModel < 100 || read.BytesToModel > 300 || read.Stored != 0 || read.ErrorClass != "" {
		t.Errorf("read_value: %+v", read)
	}
	if query.Server != OwnServer || query.Name != "query_value" || query.Handle != "r2" || query.Stored != 1 || query.BytesReturned == 0 || query.ErrorClass != "" {
		t.Errorf("query_value: %+v", query)
	}
	if bad.ErrorClass != ErrorInvalidArguments {
		t.Errorf("read_value of r9: %+v, want %s", bad, ErrorInvalidArguments)
	}
	if len(got.Downs) != 1 {
		t.Errorf("%d downstream requests observed, want 1 (the own tools send none)", len(got.Downs))
	}
}
