package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/agentvalues/values/mcpproxy/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// traceServerArg makes the test binary a go-sdk MCP server over stdio
// with two tools: rows returns traceRows() as text (a value large enough
// to be previewed); count takes {"rows": array} and returns, as text, the
// number of rows and the traceparent its request's _meta carried. And a
// resource, traceNotesURI.
const traceServerArg = "test-trace-server"

const traceNotesURI = "file:///notes.txt"

func init() { testHelpers[traceServerArg] = traceServer }

// traceRows is the JSON array the rows tool returns.
func traceRows() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"row %d"}`, i, i)
	}
	b.WriteByte(']')
	return b.String()
}

func traceServer([]string) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "traceserver", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "rows", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: traceRows()}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "count", InputSchema: json.RawMessage(`{"type":"object","properties":{"rows":{"type":"array"}},"required":["rows"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Rows []json.RawMessage }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			tp, _ := req.Params.Meta["traceparent"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d rows; traceparent=%s", len(in.Rows), tp)}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: traceNotesURI, Name: "notes", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: traceNotesURI, MIMEType: "text/plain", Text: strings.Repeat("a note\n", 2000)}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// otlpReceiver is an OTLP/HTTP endpoint that keeps the spans exported to
// it, decoded with the protocol's own protobuf types.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []*commonpb.KeyValue // the resource attributes of the last export
	got   chan struct{}        // receives after each export
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.URL.Path == "/v1/traces" {
		var ex coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			r.res = rs.GetResource().GetAttributes()
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		select {
		case r.got <- struct{}{}:
		default:
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// waitSpans waits until the receiver holds spans named each of names and
// returns them all; it fails after two minutes (a bound on a hang).
func (r *otlpReceiver) waitSpans(t *testing.T, names ...string) []*tracepb.Span {
	t.Helper()
	backstop := time.After(2 * time.Minute)
	for {
		r.mu.Lock()
		spans := append([]*tracepb.Span(nil), r.spans...)
		r.mu.Unlock()
		seen := map[string]int{}
		for _, s := range spans {
			seen[s.Name]++
		}
		missing := ""
		for _, n := range names {
			if seen[n] == 0 {
				missing = n
			}
			seen[n]--
		}
		if missing == "" {
			return spans
		}
		select {
		case <-r.got:
		case <-backstop:
			t.Fatalf("no span %q exported within two minutes; got %v", missing, seen)
		}
	}
}

// spanAttrs returns a span's attributes as Go values (strings and int64s).
func spanAttrs(attrs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range attrs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = v.IntValue
		default:
			out[kv.Key] = kv.Value.String()
		}
	}
	return out
}

// traceGatewayConfig writes a gateway config with the trace server as
// "tr" and returns its path.
func traceGatewayConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers":{"tr":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(traceServerArg) + `]}}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTelemetryTraces runs the gateway over HTTP with OTLP export to an
// in-process receiver; a client calls rows, then count with the rows by
// reference and a traceparent in _meta, then reads a resource. The spans
// carry the facts of each call; the count call's span continues the
// client's trace, its downstream request's span is its child, and the
// server was given that span's context.
func TestTelemetryTraces(t *testing.T) {
	t.Parallel()
	rcv := &otlpReceiver{got: make(chan struct{}, 1)}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	l := startListenerEnv(t, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL,
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_SERVICE_NAME=gateway-under-test",
	}, "gateway", "--config", traceGatewayConfig(t), "--listen", "0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "rows", "count")

	rows, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rows", Arguments: json.RawMessage(`{}`)})
	if err != nil || rows.Meta[mcpproxy.MetaHandle] != "r1" {
		t.Fatalf("rows: %v %v", err, rows)
	}
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	count, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"},
		Name: "count", Arguments: json.RawMessage(`{"rows":"$r1"}`),
	})
	if err != nil || !strings.HasPrefix(textOf(count), "1000 rows; traceparent=00-"+traceID+"-") {
		t.Fatalf("count: %v %s", err, textOf(count))
	}
	seen := strings.Fields(strings.SplitN(textOf(count), "traceparent=", 2)[1])[0]
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: traceNotesURI}); err != nil {
		t.Fatal(err)
	}

	spans := rcv.waitSpans(t, "tools/call rows", "tools/call count", "resources/read "+traceNotesURI)
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	// Each request has its server span and, under it, the client span of
	// its downstream request, of the same name.
	pair := func(name string) (server, client *tracepb.Span) {
		t.Helper()
		for _, s := range rcv.waitSpans(t, name, name) {
			if s.Name != name {
				continue
			}
			switch s.Kind {
			case tracepb.Span_SPAN_KIND_SERVER:
				server = s
			case tracepb.Span_SPAN_KIND_CLIENT:
				client = s
			}
		}
		if server == nil || client == nil {
			t.Fatalf("%s: want a server and a client span, got %v", name, byName[name])
		}
		if !bytes.Equal(client.ParentSpanId, server.SpanId) || !bytes.Equal(client.TraceId, server.TraceId) {
			t.Errorf("%s: the downstream span is not the child of the request's", name)
		}
		return server, client
	}

	rowsSpan, _ := pair("tools/call rows")
	rowsBytes := int64(len(traceRows()))
	a := spanAttrs(rowsSpan.Attributes)
	for k, want := range map[string]any{
		telemetry.AttrServer: "tr", telemetry.AttrTool: "rows", telemetry.AttrMethod: "tools/call",
		telemetry.AttrHandle: "r1", telemetry.AttrBytesReturned: rowsBytes, telemetry.AttrRefs: int64(0),
		telemetry.AttrValidation: "ok",
	} {
		if a[k] != want {
			t.Errorf("rows span: %s = %v, want %v", k, a[k], want)
		}
	}
	if got := a[telemetry.AttrBytesToModel].(int64); got != int64(len(textOf(rows))) || got >= rowsBytes {
		t.Errorf("rows span: %d bytes to the model, want %d (the preview the client got), under %d", got, len(textOf(rows)), rowsBytes)
	}
	if len(rowsSpan.ParentSpanId) != 0 {
		t.Errorf("rows span has a parent, but the client sent no trace context")
	}

	countSpan, countDown := pair("tools/call count")
	if got := hex.EncodeToString(countSpan.TraceId); got != traceID {
		t.Errorf("count span: trace %s, want the client's %s", got, traceID)
	}
	if got := hex.EncodeToString(countSpan.ParentSpanId); got != parentID {
		t.Errorf("count span: parent %s, want the client's span %s", got, parentID)
	}
	if want := "00-" + traceID + "-" + hex.EncodeToString(countDown.SpanId) + "-01"; seen != want {
		t.Errorf("the server was given traceparent %s, want %s (the downstream span's)", seen, want)
	}
	a = spanAttrs(countSpan.Attributes)
	for k, want := range map[string]any{
		telemetry.AttrServer: "tr", telemetry.AttrTool: "count", telemetry.AttrHandle: "r2",
		telemetry.AttrRefs: int64(1), telemetry.AttrRefBytes: rowsBytes, telemetry.AttrValidation: "ok",
		telemetry.AttrBytesReturned: int64(len(strings.SplitN(textOf(count), "\n", 2)[0])),
	} {
		if a[k] != want {
			t.Errorf("count span: %s = %v, want %v", k, a[k], want)
		}
	}
	if _, ok := a[telemetry.AttrErrorType]; ok {
		t.Errorf("count span has %s", telemetry.AttrErrorType)
	}

	readSpan, _ := pair("resources/read " + traceNotesURI)
	a = spanAttrs(readSpan.Attributes)
	for k, want := range map[string]any{
		telemetry.AttrServer: "tr", telemetry.AttrResource: traceNotesURI, telemetry.AttrMethod: "resources/read",
		telemetry.AttrHandle: "r3", telemetry.AttrBytesReturned: int64(len("a note\n") * 2000),
	} {
		if a[k] != want {
			t.Errorf("read span: %s = %v, want %v", k, a[k], want)
		}
	}
	rcv.mu.Lock()
	res := spanAttrs(rcv.res)
	rcv.mu.Unlock()
	if res["service.name"] != "gateway-under-test" {
		t.Errorf("resource: service.name = %v, want OTEL_SERVICE_NAME's", res["service.name"])
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// promGet queries the Prometheus HTTP API at base for path and decodes
// its data.
func promGet(t *testing.T, base, path string, data any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string
		Data   json.RawMessage
		Error  string
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("GET %s: %v %s %s", path, err, out.Status, out.Error)
	}
	if err := json.Unmarshal(out.Data, data); err != nil {
		t.Fatal(err)
	}
}

// TestTelemetryPrometheus runs the gateway over HTTP with a token and
// OTEL_METRICS_EXPORTER=prometheus, makes known calls, and has a real
// Prometheus scrape its /metrics with the token; the values read back
// through Prometheus's HTTP API are those of the calls. /metrics without
// the token is 401.
func TestTelemetryPrometheus(t *testing.T) {
	t.Parallel()
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("this test needs Prometheus (Debian's prometheus package): %v", err)
	}
	const token = "s3cret-scrape-token"
	l := startListenerEnv(t, []string{
		tokenEnv + "=" + token,
		"OTEL_METRICS_EXPORTER=prometheus",
	}, "gateway", "--config", traceGatewayConfig(t), "--listen", "0")
	metricsURL := strings.TrimSuffix(l.url, "/mcp") + "/metrics"

	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong", http.StatusUnauthorized}, {"Bearer " + token, http.StatusOK}} {
		req, _ := http.NewRequest("GET", metricsURL, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET /metrics with %q: %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: l.url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitTools(t, cs, "rows", "count")
	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	rows := call("rows", `{}`)
	call("rows", `{}`)
	count := call("count", `{"rows":"$r1"}`)
	if res := call("count", `{"rows":"$r9"}`); !res.IsError {
		t.Fatalf("a call with an unknown reference: %s", textOf(res))
	}
	rowsBytes := len(traceRows())
	countBytes := len(strings.SplitN(textOf(count), "\n", 2)[0])

	// Prometheus, scraping the gateway with the token.
	dir := t.TempDir()
	promPort := freePort(t)
	target := strings.TrimPrefix(strings.TrimSuffix(l.url, "/mcp"), "http://")
	config := fmt.Sprintf(`global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: agentvalues
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: %s
    static_configs:
      - targets: [%q]
`, token, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort))
	var promLog syncWriter
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		prom.Process.Kill()
		prom.Wait()
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(promPort)
	if !promLog.waitFor(ctx, "Server is ready to receive web requests") {
		t.Fatalf("Prometheus never got ready; its log:\n%s", promLog.String())
	}
	// Wait for a scrape of the target that succeeded.
	for {
		var targets struct {
			ActiveTargets []struct {
				Health    string
				LastError string
				ScrapeURL string
			}
		}
		promGet(t, base, "/api/v1/targets", &targets)
		if len(targets.ActiveTargets) == 1 && targets.ActiveTargets[0].Health == "up" {
			break
		}
		if len(targets.ActiveTargets) == 1 && targets.ActiveTargets[0].Health == "down" {
			t.Fatalf("Prometheus failed to scrape %s: %s", targets.ActiveTargets[0].ScrapeURL, targets.ActiveTargets[0].LastError)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Prometheus never scraped the gateway: %+v\n%s", targets, promLog.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	// value reads the one sample of the query q, waiting until Prometheus has it.
	value := func(q string) float64 {
		t.Helper()
		for {
			var res struct {
				Result []struct {
					Metric map[string]string
					Value  [2]any
				}
			}
			promGet(t, base, "/api/v1/query?query="+url.QueryEscape(q), &res)
			if len(res.Result) > 1 {
				t.Fatalf("%s: %d series, want 1: %+v", q, len(res.Result), res.Result)
			}
			if len(res.Result) == 1 {
				v, err := strconv.ParseFloat(res.Result[0].Value[1].(string), 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: no sample within two minutes", q)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	const sel = `agentvalues_server="tr",mcp_method_name="tools/call"`
	for q, want := range map[string]float64{
		`agentvalues_requests_total{` + sel + `,gen_ai_tool_name="rows"}`:                               2,
		`agentvalues_requests_total{` + sel + `,gen_ai_tool_name="count"}`:                              2,
		`agentvalues_errors_total{` + sel + `,gen_ai_tool_name="count",error_type="invalid_arguments"}`: 1,
		`agentvalues_request_duration_seconds_count{` + sel + `,gen_ai_tool_name="rows"}`:               2,
		`agentvalues_values_stored_total{` + sel + `,gen_ai_tool_name="rows"}`:                          2,
		`agentvalues_bytes_stored_total{` + sel + `,gen_ai_tool_name="rows"}`:                           float64(2 * rowsBytes),
		`agentvalues_bytes_to_model_total{` + sel + `,gen_ai_tool_name="rows"}`:                         float64(2 * len(textOf(rows))),
		`agentvalues_bytes_kept_out_total{` + sel + `,gen_ai_tool_name="rows"}`:                         float64(2 * (rowsBytes - len(textOf(rows)))),
		`agentvalues_bytes_stored_total{` + sel + `,gen_ai_tool_name="count"}`:                          float64(countBytes),
		`agentvalues_refs_resolved_total{` + sel + `,gen_ai_tool_name="count"}`:                         1,
		`agentvalues_refs_bytes_total{` + sel + `,gen_ai_tool_name="count"}`:                            float64(rowsBytes),
		`sum(agentvalues_requests_total)`:                                                               4,
	} {
		if got := value(q); got != want {
			t.Errorf("%s = %v, want %v", q, got, want)
		}
	}
}
