package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/telemetry"
)

// spanFlush bounds how long a stopping worker tries to send the spans it
// still holds.
const spanFlush = 5 * time.Second

// telemetryFlags configure the export of the tasks' traces as
// OpenTelemetry spans.
type telemetryFlags struct {
	endpoint string
}

func (f *telemetryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "otlp-endpoint", "", "export each task's trace as spans to this OTLP/HTTP collector, such as http://otel-collector:4318 (default: OTEL_EXPORTER_OTLP_ENDPOINT; none: no export)")
}

// traceLog returns inner, exporting every event it is given as a span when
// an OTLP endpoint is configured, and the function that sends what is
// left when the worker stops.
func (f telemetryFlags) traceLog(ctx context.Context, inner runner.TraceLog, env Env, log *slog.Logger) (runner.TraceLog, func(), error) {
	if f.endpoint == "" && env.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && env.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return inner, func() {}, nil
	}
	// The SDK reports failed exports through its process-wide handler;
	// route them into the JSON log.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("export spans", "err", err) }))
	x, err := telemetry.New(ctx, inner, telemetry.Options{Endpoint: f.endpoint})
	if err != nil {
		return nil, nil, err
	}
	log.Info("exporting task traces over OTLP", "endpoint", f.endpoint)
	return x, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spanFlush)
		defer cancel()
		if err := x.Shutdown(ctx); err != nil {
			log.Warn("export spans", "err", err)
		}
	}, nil
}
