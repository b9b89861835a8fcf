// Package telemetry exports what an mcpproxy [mcpproxy.Proxy] or
// [mcpproxy.Gateway] observes of the calls it forwards (an
// [mcpproxy.Telemetry]) as OpenTelemetry traces and metrics, configured by
// the standard OTEL_* environment variables ([FromEnv]), and serves the
// metrics for Prometheus to scrape ([Telemetry.MetricsHandler]).
//
// # Spans
//
// Each tool call and resource read is a server span named
// "tools/call TOOL" or "resources/read URI", continuing the trace context
// of the request's _meta ("traceparent", "tracestate") when the client
// sent one. Its request to the downstream server is a client span under
// it, of the same name with the downstream's name of the tool, whose
// context the downstream request carries in its _meta, for the server to
// continue. The attributes are listed with their keys (AttrServer, …).
//
// # Metrics
//
// The instruments are listed with their names (MetricRequests, …); their
// attributes are AttrServer, AttrMethod and, for tool calls, AttrTool
// (never a resource's URI, which would make a series per resource), and
// for errors AttrErrorType. Through Prometheus the names have their dots
// as underscores and a _total suffix for counters (agentvalues.requests is
// agentvalues_requests_total; agentvalues.bytes.stored is
// agentvalues_bytes_stored_total) and _seconds for the duration.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// The attribute keys of spans and metrics. The MCP ones are those of the
// OpenTelemetry semantic conventions for MCP.
const (
	AttrMethod    = "mcp.method.name"    // "tools/call" or "resources/read"
	AttrTool      = "gen_ai.tool.name"   // the tool's name as offered to the client
	AttrResource  = "mcp.resource.uri"   // a resource read's URI (spans only)
	AttrErrorType = "error.type"         // mcpproxy.Request.ErrorClass, on failure
	AttrServer    = "agentvalues.server" // the gateway's name of the server
	// Spans of the client's requests only:
	AttrHandle        = "agentvalues.handle"         // the handle the result was stored under
	AttrContentHandle = "agentvalues.content_handle" // that of its content blocks stored apart
	AttrBytesReturned = "agentvalues.bytes.returned" // bytes of the values stored
	AttrBytesToModel  = "agentvalues.bytes.to_model" // bytes of what the client got
	AttrRefs          = "agentvalues.refs.count"     // references resolved in the arguments
	AttrRefBytes      = "agentvalues.refs.bytes"     // bytes of the values they stood for
	AttrValidation    = "agentvalues.validation"     // "ok" or "invalid"; absent when not checked
)

// The metric instruments' names.
const (
	MetricRequests     = "agentvalues.requests"         // counter: requests served
	MetricErrors       = "agentvalues.errors"           // counter: requests that failed, by error.type
	MetricDuration     = "agentvalues.request.duration" // histogram, seconds: time to answer a request
	MetricValuesStored = "agentvalues.values.stored"    // counter: values stored
	MetricBytesStored  = "agentvalues.bytes.stored"     // counter, bytes: their size (the bytes servers returned)
	MetricBytesToModel = "agentvalues.bytes.to_model"   // counter, bytes: bytes of what the clients got
	MetricBytesKept    = "agentvalues.bytes.kept_out"   // counter, bytes: stored bytes that did not reach the client
	MetricRefs         = "agentvalues.refs.resolved"    // counter: references resolved in arguments
	MetricRefBytes     = "agentvalues.refs.bytes"       // counter, bytes: bytes of the values they stood for
)

// durationBuckets are the bounds, in seconds, of the buckets of
// MetricDuration: from the half millisecond of a small call through a
// gateway to the minute of a slow tool.
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// scope is the instrumentation scope of the spans and metrics.
const scope = "github.com/agentvalues/values/mcpproxy/telemetry"

// Telemetry is an [mcpproxy.Telemetry] that records spans and metrics
// through OpenTelemetry providers. It is safe for concurrent use.
type Telemetry struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator

	requests, errs, stored, bytesStored, toModel, kept, refs, refBytes metric.Int64Counter
	duration                                                           metric.Float64Histogram

	metrics  http.Handler // the Prometheus handler; nil when not asked for
	shutdown []func(context.Context) error
}

var _ mcpproxy.Telemetry = (*Telemetry)(nil)

// New returns a Telemetry that records spans through tp and metrics
// through mp. Trace context is read from and written to _meta as W3C
// Trace Context ("traceparent", "tracestate") and Baggage.
func New(tp trace.TracerProvider, mp metric.MeterProvider) (*Telemetry, error) {
	t := &Telemetry{
		tracer: tp.Tracer(scope),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	m := mp.Meter(scope)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	t.requests = counter(MetricRequests, "{request}", "Tool calls and resource reads served.")
	t.errs = counter(MetricErrors, "{request}", "Tool calls and resource reads that failed, by error.type.")
	t.stored = counter(MetricValuesStored, "{value}", "Values stored from results.")
	t.bytesStored = counter(MetricBytesStored, "By", "Bytes of the values stored: what the servers returned.")
	t.toModel = counter(MetricBytesToModel, "By", "Bytes of the results the clients got.")
	t.kept = counter(MetricBytesKept, "By", "Bytes stored that did not reach the clients: kept out of the transcript.")
	t.refs = counter(MetricRefs, "{reference}", "References resolved in tool arguments.")
	t.refBytes = counter(MetricRefBytes, "By", "Bytes of the values references in tool arguments stood for.")
	var err error
	t.duration, err = m.Float64Histogram(MetricDuration, metric.WithUnit("s"), metric.WithDescription("Time to answer a tool call or resource read."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return t, nil
}

// metaCarrier reads and writes trace context in a request's _meta.
type metaCarrier mcp.Meta

func (c metaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// begun is what Begin keeps in the request's context for End.
type begun struct {
	start time.Time
	span  trace.Span
}

type begunKey struct{}

// Begin implements [mcpproxy.Telemetry]: it starts the request's span,
// continuing the trace context of meta.
func (t *Telemetry) Begin(ctx context.Context, r *mcpproxy.Request, meta mcp.Meta) context.Context {
	if meta != nil {
		ctx = t.prop.Extract(ctx, metaCarrier(meta))
	}
	attrs := []attribute.KeyValue{attribute.String(AttrMethod, r.Method), attribute.String(AttrServer, r.Server)}
	if r.Method == "resources/read" {
		attrs = append(attrs, attribute.String(AttrResource, r.Name))
	} else {
		attrs = append(attrs, attribute.String(AttrTool, r.Name))
	}
	ctx, span := t.tracer.Start(ctx, r.Method+" "+r.Name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, begunKey{}, &begun{start: time.Now(), span: span})
}

// Downstream implements [mcpproxy.Telemetry]: it starts the span of the
// downstream request and puts its trace context in meta.
func (t *Telemetry) Downstream(ctx context.Context, r *mcpproxy.Request, meta mcp.Meta) (context.Context, func(error)) {
	ctx, span := t.tracer.Start(ctx, r.Method+" "+r.Name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String(AttrMethod, r.Method), attribute.String(AttrServer, r.Server)))
	t.prop.Inject(ctx, metaCarrier(meta))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// End implements [mcpproxy.Telemetry]: it ends the request's span with its
// facts and records its metrics.
func (t *Telemetry) End(ctx context.Context, r *mcpproxy.Request) {
	b, _ := ctx.Value(begunKey{}).(*begun)
	if b == nil {
		return // not begun by this Telemetry
	}
	span := b.span
	attrs := []attribute.KeyValue{
		attribute.Int64(AttrBytesReturned, r.BytesReturned),
		attribute.Int64(AttrBytesToModel, r.BytesToModel),
	}
	if r.Handle != "" {
		attrs = append(attrs, attribute.String(AttrHandle, r.Handle))
	}
	if r.ContentHandle != "" {
		attrs = append(attrs, attribute.String(AttrContentHandle, r.ContentHandle))
	}
	if r.Method == "tools/call" {
		attrs = append(attrs, attribute.Int(AttrRefs, r.Refs), attribute.Int64(AttrRefBytes, r.RefBytes))
	}
	if r.Validation != "" {
		attrs = append(attrs, attribute.String(AttrValidation, r.Validation))
	}
	if r.ErrorClass != "" {
		attrs = append(attrs, attribute.String(AttrErrorType, r.ErrorClass))
		span.SetStatus(codes.Error, r.ErrorClass)
	}
	span.SetAttributes(attrs...)
	span.End()

	// Metrics are recorded under a context without the span: no exemplars.
	mctx := context.WithoutCancel(context.Background())
	set := []attribute.KeyValue{attribute.String(AttrServer, r.Server), attribute.String(AttrMethod, r.Method)}
	if r.Method == "tools/call" {
		set = append(set, attribute.String(AttrTool, r.Name))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(set...))
	t.requests.Add(mctx, 1, opt)
	t.duration.Record(mctx, time.Since(b.start).Seconds(), opt)
	if r.ErrorClass != "" {
		t.errs.Add(mctx, 1, metric.WithAttributeSet(attribute.NewSet(append(set, attribute.String(AttrErrorType, r.ErrorClass))...)))
	}
	if r.Stored > 0 {
		t.stored.Add(mctx, int64(r.Stored), opt)
		t.bytesStored.Add(mctx, r.BytesReturned, opt)
		t.kept.Add(mctx, max(r.BytesReturned-r.BytesToModel, 0), opt)
	}
	t.toModel.Add(mctx, r.BytesToModel, opt)
	if r.Refs > 0 {
		t.refs.Add(mctx, int64(r.Refs), opt)
		t.refBytes.Add(mctx, r.RefBytes, opt)
	}
}

// MetricsHandler returns the handler that serves the metrics in the
// Prometheus text format, or nil when the environment did not ask for
// them (OTEL_METRICS_EXPORTER=prometheus).
func (t *Telemetry) MetricsHandler() http.Handler { return t.metrics }

// Shutdown flushes the spans and metrics not yet exported and stops the
// exporters. It returns once done or when ctx is.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// ErrConfig is wrapped by the errors of [FromEnv] for an environment it
// cannot follow.
var ErrConfig = errors.New("telemetry: unsupported configuration")

// FromEnv returns the Telemetry the OTEL_* environment variables
// configure, as the OpenTelemetry SDKs' autoconfiguration reads them, or
// nil when they configure none (the default: telemetry is off):
//
//   - OTEL_TRACES_EXPORTER: "otlp" or "none"; unset means "otlp" when
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
//     set, else "none".
//   - OTEL_METRICS_EXPORTER: a comma-separated list of "otlp",
//     "prometheus" (served by [Telemetry.MetricsHandler], on the HTTP
//     listener's /metrics) and "none"; unset as for traces.
//   - OTEL_EXPORTER_OTLP_PROTOCOL (and _TRACES_, _METRICS_): only
//     "http/protobuf", the default; "grpc" is refused with [ErrConfig].
//   - OTEL_SDK_DISABLED=true turns it all off.
//
// The OTLP exporters read their own variables (endpoint, headers,
// timeout, certificates), the trace SDK the sampler's (OTEL_TRACES_SAMPLER)
// and the batching's (OTEL_BSP_*), the metric reader its interval
// (OTEL_METRIC_EXPORT_INTERVAL), and the resource OTEL_SERVICE_NAME
// (default "agentvalues") and OTEL_RESOURCE_ATTRIBUTES.
func FromEnv(ctx context.Context) (*Telemetry, error) {
	return fromEnv(ctx, os.Getenv)
}

func fromEnv(ctx context.Context, getenv func(string) string) (*Telemetry, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	traces, err := exporters(getenv, "OTEL_TRACES_EXPORTER", endpoint || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", "otlp")
	if err != nil {
		return nil, err
	}
	metrics, err := exporters(getenv, "OTEL_METRICS_EXPORTER", endpoint || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "", "otlp", "prometheus")
	if err != nil {
		return nil, err
	}
	if len(traces) == 0 && len(metrics) == 0 {
		return nil, nil
	}
	for _, signal := range []string{"", "TRACES_", "METRICS_"} {
		key := "OTEL_EXPORTER_OTLP_" + signal + "PROTOCOL"
		if p := getenv(key); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%w: %s=%s: this build exports OTLP over http/protobuf only", ErrConfig, key, p)
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "agentvalues")), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}

	var shutdown []func(context.Context) error
	fail := func(err error) (*Telemetry, error) {
		for _, f := range shutdown {
			f(ctx)
		}
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	var tp trace.TracerProvider = tracenoop.NewTracerProvider()
	if traces["otlp"] {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return fail(err)
		}
		stp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		tp, shutdown = stp, append(shutdown, stp.Shutdown)
	}
	var mp metric.MeterProvider = metricnoop.NewMeterProvider()
	var handler http.Handler
	if len(metrics) > 0 {
		opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		if metrics["otlp"] {
			exp, err := otlpmetrichttp.New(ctx)
			if err != nil {
				return fail(err)
			}
			opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		}
		if metrics["prometheus"] {
			reg := prometheus.NewRegistry()
			exp, err := otelprom.New(otelprom.WithRegisterer(reg))
			if err != nil {
				return fail(err)
			}
			opts = append(opts, sdkmetric.WithReader(exp))
			handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		}
		smp := sdkmetric.NewMeterProvider(opts...)
		mp, shutdown = smp, append(shutdown, smp.Shutdown)
	}
	t, err := New(tp, mp)
	if err != nil {
		return fail(err)
	}
	t.metrics, t.shutdown = handler, shutdown
	return t, nil
}

// exporters reads the exporter list of the variable key: the names in
// known it holds, none for "none", def when unset and on.
func exporters(getenv func(string) string, key string, on bool, known ...string) (map[string]bool, error) {
	v := strings.TrimSpace(getenv(key))
	if v == "" {
		if !on {
			return nil, nil
		}
		v = "otlp"
	}
	out := map[string]bool{}
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "none":
			return nil, nil
		case slices.Contains(known, name):
			out[name] = true
		default:
			return nil, fmt.Errorf("%w: %s=%s: known are %s and none", ErrConfig, key, v, strings.Join(known, ", "))
		}
	}
	return out, nil
}
