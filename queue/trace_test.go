package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestTracesKeepOrderCapAndExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := connect(t, redistest.Start(t))
	tr := NewTraces(rdb, time.Hour)
	long := strings.Repeat("ok\n", 10_000)
	events := []app.TraceEvent{
		{Kind: app.TracePhase, Name: "workspace", Duration: time.Second},
		{Kind: app.TraceModelCall, Step: 1, Name: "plugsky-coder", PromptTokens: 900, CompletionTokens: 40, Cost: 0.002},
		{Kind: app.TraceToolCall, Step: 1, Name: "run", Args: `{"cmd":"go test ./..."}`, Result: long},
		{Kind: app.TraceCheck, Step: 2, Name: "test", Outcome: "passed"},
	}
	for _, e := range events {
		if err := tr.Append(ctx, "t1", e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Append(ctx, "t2", app.TraceEvent{Kind: app.TracePhase, Name: "other task"}); err != nil {
		t.Fatal(err)
	}
	got, err := tr.Trace(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(events) {
		t.Fatalf("%d events, want %d", len(got), len(events))
	}
	for i, e := range got {
		if e.Kind != events[i].Kind || e.Name != events[i].Name || e.Time.IsZero() {
			t.Errorf("event %d = %+v, want %+v stamped", i, e, events[i])
		}
	}
	if got[1].PromptTokens != 900 || got[1].Cost != 0.002 || got[0].Duration != time.Second {
		t.Errorf("model call lost its figures: %+v", got[1])
	}
	if r := got[2].Result; len(r) > app.MaxTraceField || !strings.Contains(r, "characters cut here") {
		t.Errorf("tool result kept %d bytes, want at most %d with a note", len(r), app.MaxTraceField)
	}
	if ttl := rdb.TTL(ctx, traceKey("t1")).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("trace TTL %s, want up to an hour", ttl)
	}

	var buf bytes.Buffer
	if err := WriteJSONLines(&buf, got); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	var last app.TraceEvent
	if len(lines) != len(got) || json.Unmarshal([]byte(lines[3]), &last) != nil || last.Outcome != "passed" {
		t.Errorf("JSON lines:\n%s", buf.String())
	}
}

func TestTracesRefuseBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := NewTraces(connect(t, redistest.Start(t)), 0)
	if _, err := tr.Trace(ctx, "none"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("trace of an unknown task: %v, want not found", err)
	}
	if err := tr.Append(ctx, "t1", app.TraceEvent{Kind: app.TraceCheck, Name: "build", Outcome: "passed"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id string
		e  app.TraceEvent
	}{
		{"", app.TraceEvent{Kind: app.TraceCheck}},
		{"t1", app.TraceEvent{Kind: "thought"}},
	} {
		if err := tr.Append(ctx, c.id, c.e); app.ErrorCode(err) != app.EInvalid {
			t.Errorf("Append(%q, %+v): %v, want an invalid error", c.id, c.e, err)
		}
	}
	got, err := tr.Trace(ctx, "t1")
	if err != nil || len(got) != 1 || got[0].Name != "build" {
		t.Errorf("trace after refused appends: %+v, %v", got, err)
	}
}

// BenchmarkTracesAppend measures one tool call with a long result appended
// to a task's trace, as the agent loop does after every step.
func BenchmarkTracesAppend(b *testing.B) {
	tr := NewTraces(benchRedis(b), time.Hour)
	e := app.TraceEvent{Kind: app.TraceToolCall, Step: 3, Name: "run", Args: `{"cmd":"go test ./..."}`, Result: strings.Repeat("--- FAIL: TestX\n", 1000)}
	ctx := context.Background()
	for b.Loop() {
		if err := tr.Append(ctx, "t1", e); err != nil {
			b.Fatal(err)
		}
	}
}

// A flood of large events, from workers appending at once, stops at the
// trace's cap: one cut event says so, and the trace's memory stays within
// the cap.
func TestTracesStopAtTheirCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := connect(t, redistest.Start(t))
	tr := NewTraces(rdb, time.Hour)
	huge := strings.Repeat("x", 512<<10)
	flood := app.TraceEvent{Kind: app.TraceRefusal, Name: huge, Outcome: huge, Args: huge, Result: huge, Detail: huge}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 150 {
				if err := tr.Append(ctx, "t1", flood); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := tr.Trace(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	var cuts int
	for i, e := range got {
		if len(e.Detail) > app.MaxTraceField || len(e.Name) > app.MaxTraceLabel || len(e.Outcome) > app.MaxTraceLabel {
			t.Fatalf("event %d keeps %d bytes of detail, %d of name: want them capped", i, len(e.Detail), len(e.Name))
		}
		if e.Kind == app.TraceCut {
			cuts++
		}
	}
	if cuts != 1 || got[len(got)-1].Kind != app.TraceCut {
		t.Errorf("%d cut events, last event %s; want one, last", cuts, got[len(got)-1].Kind)
	}
	mem, err := rdb.MemoryUsage(ctx, traceKey("t1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events kept of 600 appended, %d bytes of Redis memory", len(got), mem)
	if mem > app.MaxTraceBytes*5/4 {
		t.Errorf("the trace takes %d bytes of Redis memory; want about its cap of %d", mem, app.MaxTraceBytes)
	}
	if ttl := rdb.TTL(ctx, traceBytesKey("t1")).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("the trace's byte count expires in %s; want with the trace", ttl)
	}
}
