// Package telemetry exports each task's trace as OpenTelemetry spans over
// OTLP/HTTP, so that an operator's tracing backend (Jaeger, Tempo, an
// OpenTelemetry Collector) shows agentbot's tasks beside everything else.
//
// Exporter wraps the trace log the runner writes to: every event appended
// to a task's trace is kept there as before and becomes one span, named by
// its kind and name ("model_call gpt-4.1", "check test", "phase agent"),
// from its start (Time - Duration) to its end. All spans of a task share
// one trace id, derived from the task id, so that a task resumed on
// another worker continues the same trace. Spans are batched and sent in
// the background; a collector that is down loses spans, never a task.
package telemetry

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbot/agentbot/app"
)

// TraceLog is where the runner keeps each task's trace; queue.Traces
// satisfies it, and so does Exporter.
type TraceLog interface {
	Append(ctx context.Context, taskID string, e app.TraceEvent) error
	Trace(ctx context.Context, taskID string) ([]app.TraceEvent, error)
}

// Options configure New.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP URL, such as
	// http://otel-collector:4318; spans go to its /v1/traces unless the
	// URL has a path of its own. Empty: the OTEL_EXPORTER_OTLP_ENDPOINT
	// and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variables of the process, as
	// the OpenTelemetry SDK reads them.
	Endpoint string
	// Service is the service.name of the spans; empty: "agentbot".
	Service string
	// BatchTimeout is the longest a span waits to be sent; zero: the
	// SDK's five seconds.
	BatchTimeout time.Duration
}

// Exporter is a TraceLog that also exports every event as a span.
type Exporter struct {
	inner    TraceLog
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// New returns an Exporter over inner. Shut it down to send what is
// batched.
func New(ctx context.Context, inner TraceLog, o Options) (*Exporter, error) {
	var opts []otlptracehttp.Option
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("OTLP endpoint %q is not an http:// or https:// URL", o.Endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	client, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	service := o.Service
	if service == "" {
		service = "agentbot"
	}
	// The process's OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win
	// over ours, as operators expect of an OpenTelemetry SDK.
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", service)), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("OTLP resource: %w", err)
	}
	var batch []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		batch = append(batch, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(client, batch...),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(taskIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	return &Exporter{inner: inner, provider: provider, tracer: provider.Tracer("github.com/agentbot/agentbot/runner/telemetry")}, nil
}

// Append keeps e in the inner trace log and exports it as a span. The
// span is sent even when the inner log failed: the backend then still
// shows what happened.
func (x *Exporter) Append(ctx context.Context, taskID string, e app.TraceEvent) error {
	err := x.inner.Append(ctx, taskID, e)
	x.export(ctx, taskID, e)
	return err
}

// Trace reads the inner trace log.
func (x *Exporter) Trace(ctx context.Context, taskID string) ([]app.TraceEvent, error) {
	return x.inner.Trace(ctx, taskID)
}

// Shutdown sends the spans still batched, within ctx, and stops.
func (x *Exporter) Shutdown(ctx context.Context) error {
	if err := x.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("send the last spans: %w", err)
	}
	return nil
}

// taskKey carries the task id to the id generator.
type taskKey struct{}

func (x *Exporter) export(ctx context.Context, taskID string, e app.TraceEvent) {
	e = e.Capped() // as the trace log keeps it: a span is no place for a whole file
	end := e.Time
	if end.IsZero() {
		end = time.Now()
	}
	// A new root: the span belongs to the task's trace, not to whatever
	// span the caller's context carries.
	ctx = context.WithValue(ctx, taskKey{}, taskID)
	_, span := x.tracer.Start(ctx, string(e.Kind)+" "+e.Name,
		trace.WithTimestamp(end.Add(-e.Duration)), trace.WithNewRoot(), trace.WithAttributes(attributes(taskID, e)...))
	switch e.Outcome {
	case "error", "failed", "refused":
		desc := e.Outcome
		if e.Detail != "" {
			desc += ": " + e.Detail
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End(trace.WithTimestamp(end))
}

// attributes are the event's fields as span attributes; tokens use the
// OpenTelemetry GenAI conventions' names, so that backends that know them
// add them up.
func attributes(taskID string, e app.TraceEvent) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("agentbot.task", taskID),
		attribute.String("agentbot.kind", string(e.Kind)),
	}
	add := func(ok bool, kv attribute.KeyValue) {
		if ok {
			attrs = append(attrs, kv)
		}
	}
	add(e.Step > 0, attribute.Int("agentbot.step", e.Step))
	add(e.Attempt > 0, attribute.Int("agentbot.attempt", e.Attempt))
	add(e.Outcome != "", attribute.String("agentbot.outcome", e.Outcome))
	add(e.Kind == app.TraceModelCall, attribute.String("gen_ai.request.model", e.Name))
	add(e.PromptTokens > 0, attribute.Int64("gen_ai.usage.input_tokens", e.PromptTokens))
	add(e.CompletionTokens > 0, attribute.Int64("gen_ai.usage.output_tokens", e.CompletionTokens))
	add(e.Cost > 0, attribute.Float64("agentbot.cost_usd", e.Cost))
	add(e.Args != "", attribute.String("agentbot.args", e.Args))
	add(e.Result != "", attribute.String("agentbot.result", e.Result))
	add(e.Detail != "", attribute.String("agentbot.detail", e.Detail))
	return attrs
}

// taskIDs derives the trace id from the task id, so that every span of a
// task, from any worker and any run of it, lands in one trace; span ids
// are random.
type taskIDs struct{}

func (taskIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	id, _ := ctx.Value(taskKey{}).(string)
	sum := sha256.Sum256([]byte("agentbot task " + id))
	copy(tid[:], sum[:])
	return tid, spanID()
}

func (taskIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return spanID() }

func spanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		v := rand.Uint64()
		for i := range s {
			s[i] = byte(v >> (8 * i))
		}
	}
	return s
}
