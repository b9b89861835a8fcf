package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestFromEnv: telemetry is off unless an exporter is configured, and an
// environment it cannot follow is an error wrapping ErrConfig.
func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		metrics bool // serves /metrics
		err     bool
	}{
		{name: "nothing set"},
		{name: "service name only", env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, on: true},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, on: true},
		{name: "endpoint, both none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}},
		{name: "prometheus", env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, on: true, metrics: true},
		{name: "otlp and prometheus", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp, prometheus", "OTEL_TRACES_EXPORTER": "otlp"}, on: true, metrics: true},
		{name: "disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_METRICS_EXPORTER": "prometheus"}},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, err: true},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
		{name: "console", env: map[string]string{"OTEL_METRICS_EXPORTER": "console"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel, err := fromEnv(context.Background(), func(k string) string { return tc.env[k] })
			if tc.err {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("error %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tel != nil) != tc.on {
				t.Fatalf("telemetry on: %v, want %v", tel != nil, tc.on)
			}
			if tel == nil {
				return
			}
			defer tel.Shutdown(context.Background())
			if (tel.MetricsHandler() != nil) != tc.metrics {
				t.Errorf("metrics handler: %v, want %v", tel.MetricsHandler() != nil, tc.metrics)
			}
		})
	}
}

// TestSpans: Begin continues the trace context of the request's _meta;
// Downstream puts its own span's in the downstream _meta; End sets the
// facts, and marks a failed request as an error.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel, err := New(tp, metricnoop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := &mcpproxy.Request{Method: "tools/call", Server: "s", Name: "t"}
	ctx := tel.Begin(context.Background(), r, mcp.Meta{"traceparent": parent, "other": 1})
	down := mcp.Meta{"k": "v"}
	_, end := tel.Downstream(ctx, r, down)
	end(io.ErrUnexpectedEOF)
	r.ErrorClass = mcpproxy.ErrorConnection
	tel.End(ctx, r)

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	client, server := spans[0], spans[1]
	if server.Parent().SpanID().String() != "00f067aa0ba902b7" || server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span: parent %v, want the _meta's", server.Parent())
	}
	if client.Parent().SpanID() != server.SpanContext().SpanID() || client.SpanKind() != trace.SpanKindClient {
		t.Errorf("client span: parent %v kind %v", client.Parent(), client.SpanKind())
	}
	sc := propagation.TraceContext{}.Extract(context.Background(), metaCarrier(down))
	if got := trace.SpanContextFromContext(sc); got.SpanID() != client.SpanContext().SpanID() {
		t.Errorf("downstream _meta %v: want the client span's context", down)
	}
	if server.Status().Code.String() != "Error" || client.Status().Code.String() != "Error" {
		t.Errorf("status: server %v, client %v; want errors", server.Status(), client.Status())
	}
	found := false
	for _, a := range server.Attributes() {
		if string(a.Key) == AttrErrorType && a.Value.AsString() == mcpproxy.ErrorConnection {
			found = true
		}
	}
	if !found {
		t.Errorf("server span attributes %v: no %s", server.Attributes(), AttrErrorType)
	}
}

// TestMetricsHandler: the Prometheus handler serves the instruments by
// their documented names.
func TestMetricsHandler(t *testing.T) {
	tel, err := fromEnv(context.Background(), func(k string) string {
		return map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	r := &mcpproxy.Request{Method: "tools/call", Server: "s", Name: "x", Stored: 1, BytesReturned: 100, BytesToModel: 10, Refs: 2, RefBytes: 7, ErrorClass: mcpproxy.ErrorTool}
	tel.End(tel.Begin(context.Background(), r, nil), r)
	w := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body := w.Body.String()
	for _, want := range []string{
		`agentvalues_requests_total{agentvalues_server="s",gen_ai_tool_name="x",mcp_method_name="tools/call"`,
		`agentvalues_errors_total{agentvalues_server="s",error_type="tool_error",`,
		`agentvalues_request_duration_seconds_count{`,
		`agentvalues_values_stored_total{`,
		`agentvalues_bytes_stored_total{`,
		`agentvalues_bytes_to_model_total{`,
		`agentvalues_bytes_kept_out_total{`,
		`agentvalues_refs_resolved_total{`,
		`agentvalues_refs_bytes_total{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if !strings.Contains(body, `"} 90`+"\n") {
		t.Errorf("/metrics: want 90 bytes kept out:\n%s", body)
	}
}

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkTelemetry is the cost Telemetry adds to one call forwarded by
// the proxy when it is on: Begin, Downstream (with the trace context put in
// the downstream _meta) and End, with the SDK's batching span processor
// (its exporter dropping the spans) and a meter provider whose instruments
// a reader collects, as OTEL_* configures them; "off" is the nil Telemetry
// of the proxy, which calls nothing. Compare with the proxy's CPU per call
// in BenchmarkProxySmallCall (cmd/agentvalues).
//
//	go test -run='^$' -bench=Telemetry ./mcpproxy/telemetry
func BenchmarkTelemetry(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	defer tp.Shutdown(context.Background())
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	tel, err := New(tp, mp)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := &mcpproxy.Request{Method: "tools/call", Server: "blobs", Name: "ping"}
		ctx := tel.Begin(context.Background(), r, nil)
		_, end := tel.Downstream(ctx, r, mcp.Meta{})
		end(nil)
		r.Handle, r.Stored, r.BytesReturned, r.BytesToModel, r.Validation = "r1", 1, 11, 26, "ok"
		tel.End(ctx, r)
	}
}
