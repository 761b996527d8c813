package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentbot/agentbot/app"
)

// TestOTLPEndpointExportsTraces configures a worker's trace log with
// --otlp-endpoint, as a worker's wiring does, and checks that an event reaches
// both Redis and a collector on loopback.
func TestOTLPEndpointExportsTraces(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var names []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
	}))
	defer collector.Close()

	_, rdb := testRedis(t)
	env, _, logs := testEnv(nil)
	fs := newFlagSet("worker", env)
	var cfg workerConfig
	cfg.register(fs)
	if err := parseFlags(fs, []string{"--otlp-endpoint", collector.URL}, env); err != nil {
		t.Fatal(err)
	}
	traces, flush, err := cfg.telemetry.traceLog(t.Context(), cfg.retention.traceStore(rdb), env, newLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	e := app.TraceEvent{Time: time.Now(), Kind: app.TracePhase, Name: "admission", Duration: time.Millisecond, Outcome: "ok"}
	if err := traces.Append(t.Context(), "t-otlp", e); err != nil {
		t.Fatal(err)
	}
	flush()
	if got, err := traces.Trace(t.Context(), "t-otlp"); err != nil || len(got) != 1 {
		t.Errorf("trace in Redis: %v, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(names) != 1 || names[0] != "phase admission" {
		t.Errorf("the collector received spans %q; want [phase admission]\n%s", names, logs)
	}
}

func TestNoOTLPEndpointNoExport(t *testing.T) {
	t.Parallel()
	_, rdb := testRedis(t)
	env, _, logs := testEnv(nil)
	inner := (retention{traces: time.Hour}).traceStore(rdb)
	traces, flush, err := telemetryFlags{}.traceLog(t.Context(), inner, env, newLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	flush()
	if traces != inner {
		t.Errorf("without an endpoint the trace log is %T; want the store itself", traces)
	}
}
