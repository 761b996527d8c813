package telemetry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/telemetry"
)

// collector is an OTLP/HTTP trace receiver on loopback that decodes what
// it is sent as the protobuf a real collector reads.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []*commonpb.KeyValue
	bad   []string
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			c.bad = append(c.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
			http.Error(w, "not OTLP traces", http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			c.bad = append(c.bad, "undecodable body: "+err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			c.res = rs.Resource.GetAttributes()
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// memLog is a trace log in memory, standing for queue.Traces.
type memLog struct {
	mu     sync.Mutex
	events map[string][]app.TraceEvent
	fail   error
}

func (m *memLog) Append(_ context.Context, id string, e app.TraceEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.events[id] = append(m.events[id], e)
	return nil
}

func (m *memLog) Trace(_ context.Context, id string) ([]app.TraceEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events[id], nil
}

func attr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func TestEventsBecomeSpansOfTheTasksTrace(t *testing.T) {
	c := startCollector(t)
	inner := &memLog{events: map[string][]app.TraceEvent{}}
	ctx := t.Context()
	x, err := telemetry.New(ctx, inner, telemetry.Options{Endpoint: c.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	events := map[string][]app.TraceEvent{
		"task-a": {
			{Time: at, Kind: app.TraceModelCall, Step: 1, Name: "gpt-4.1", Duration: 2 * time.Second, Outcome: "ok", PromptTokens: 1800, CompletionTokens: 120, Cost: 0.0042},
			{Time: at.Add(3 * time.Second), Kind: app.TraceCheck, Step: 2, Name: "test", Duration: time.Second, Outcome: "failed", Detail: "go test ./..."},
		},
		"task-b": {{Time: at, Kind: app.TracePhase, Name: "admission", Duration: 40 * time.Millisecond, Outcome: "ok"}},
	}
	for id, es := range events {
		for _, e := range es {
			if err := x.Append(ctx, id, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Trace(ctx, "task-a"); len(got) != 2 {
		t.Errorf("the inner log holds %d events of task-a; want 2", len(got))
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bad) > 0 {
		t.Fatalf("the collector refused: %q", c.bad)
	}
	if v := attr(c.res, "service.name"); v.GetStringValue() != "agentbot" {
		t.Errorf("service.name = %v", v)
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range c.spans {
		byName[s.Name] = s
	}
	if len(c.spans) != 3 || len(byName) != 3 {
		t.Fatalf("%d spans (%v); want model_call gpt-4.1, check test, phase admission", len(c.spans), byName)
	}
	model, check, phase := byName["model_call gpt-4.1"], byName["check test"], byName["phase admission"]
	if model == nil || check == nil || phase == nil {
		t.Fatalf("spans named %v", byName)
	}
	if !bytes.Equal(model.TraceId, check.TraceId) || bytes.Equal(model.TraceId, phase.TraceId) {
		t.Errorf("trace ids %s %s %s: want one per task", hex.EncodeToString(model.TraceId), hex.EncodeToString(check.TraceId), hex.EncodeToString(phase.TraceId))
	}
	if len(model.ParentSpanId) != 0 || bytes.Equal(model.SpanId, check.SpanId) {
		t.Errorf("span ids: model %x (parent %x), check %x", model.SpanId, model.ParentSpanId, check.SpanId)
	}
	if start, end := time.Unix(0, int64(model.StartTimeUnixNano)), time.Unix(0, int64(model.EndTimeUnixNano)); !start.Equal(at.Add(-2*time.Second)) || !end.Equal(at) {
		t.Errorf("model call span from %s to %s; want the 2s before %s", start, end, at)
	}
	for key, want := range map[string]int64{"gen_ai.usage.input_tokens": 1800, "gen_ai.usage.output_tokens": 120, "agentbot.step": 1} {
		if v := attr(model.Attributes, key); v.GetIntValue() != want {
			t.Errorf("%s = %v; want %d", key, v, want)
		}
	}
	if v := attr(model.Attributes, "agentbot.cost_usd"); v.GetDoubleValue() != 0.0042 {
		t.Errorf("cost = %v", v)
	}
	if v := attr(model.Attributes, "agentbot.task"); v.GetStringValue() != "task-a" {
		t.Errorf("agentbot.task = %v", v)
	}
	if check.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || check.Status.GetMessage() != "failed: go test ./..." {
		t.Errorf("failed check's status = %v", check.Status)
	}
	if model.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a model call that went well has status %v", model.Status)
	}
}

func TestSameTaskSameTraceAcrossExporters(t *testing.T) {
	c := startCollector(t)
	ctx := t.Context()
	// Two workers, the second resuming the task.
	for range 2 {
		x, err := telemetry.New(ctx, &memLog{events: map[string][]app.TraceEvent{}}, telemetry.Options{Endpoint: c.srv.URL + "/"})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Append(ctx, "task-r", app.TraceEvent{Time: time.Now(), Kind: app.TracePhase, Name: "workspace", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
		if err := x.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.spans) != 2 || !bytes.Equal(c.spans[0].TraceId, c.spans[1].TraceId) {
		t.Errorf("spans %v; want two in one trace", c.spans)
	}
}

func TestInnerFailureStillExports(t *testing.T) {
	c := startCollector(t)
	ctx := t.Context()
	broken := errors.New("redis is down")
	x, err := telemetry.New(ctx, &memLog{fail: broken}, telemetry.Options{Endpoint: c.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3*app.MaxTraceField)
	if err := x.Append(ctx, "task-x", app.TraceEvent{Time: time.Now(), Kind: app.TraceToolCall, Step: 1, Name: "read_file", Outcome: "ok", Result: long}); !errors.Is(err, broken) {
		t.Errorf("Append = %v; want the inner log's error", err)
	}
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.spans) != 1 {
		t.Fatalf("%d spans; want the event exported anyway", len(c.spans))
	}
	if r := attr(c.spans[0].Attributes, "agentbot.result").GetStringValue(); len(r) > app.MaxTraceField || r == "" {
		t.Errorf("the span's result holds %d bytes; want it capped at %d", len(r), app.MaxTraceField)
	}
}

func TestBadEndpoint(t *testing.T) {
	for _, e := range []string{"collector:4318", "ftp://collector", "http://"} {
		if _, err := telemetry.New(t.Context(), &memLog{}, telemetry.Options{Endpoint: e}); err == nil {
			t.Errorf("endpoint %q accepted", e)
		}
	}
}
