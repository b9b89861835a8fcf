package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/agentvalues/values/mcpproxy/telemetry"
)

// telemetryFlushWait bounds how long the command, as it exits, waits for
// the spans and metrics not yet exported to reach the OTLP endpoint; past
// it they are dropped, with a line on stderr.
const telemetryFlushWait = 5 * time.Second

// startTelemetry turns on the OpenTelemetry export the OTEL_* environment
// variables configure (telemetry.FromEnv; off when they configure none)
// for the proxy or gateway of opts. It returns the handler of /metrics,
// nil unless OTEL_METRICS_EXPORTER names prometheus, and the function that
// flushes and stops the export, to call as the command exits.
func startTelemetry(opts *mcpproxy.Options, listen bool, stderr io.Writer) (metrics http.Handler, stop func(), err error) {
	t, err := telemetry.FromEnv(context.Background())
	if err != nil || t == nil {
		return nil, func() {}, err
	}
	opts.Telemetry = t
	metrics = t.MetricsHandler()
	if metrics != nil && !listen {
		fmt.Fprintf(stderr, "agentvalues: OTEL_METRICS_EXPORTER names prometheus, whose metrics are served at /metrics with -listen only\n")
	}
	return metrics, func() {
		ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushWait)
		defer cancel()
		if err := t.Shutdown(ctx); err != nil {
			fmt.Fprintf(stderr, "agentvalues: telemetry: %v\n", err)
		}
	}, nil
}
