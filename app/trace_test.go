package app

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func sampleTrace() []TraceEvent {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	return []TraceEvent{
		{Time: t0.Add(2 * time.Second), Kind: TracePhase, Name: "workspace", Duration: 2 * time.Second, Outcome: "ok"},
		{Time: t0.Add(5 * time.Second), Kind: TraceModelCall, Step: 1, Name: "plugsky-coder", Duration: 3 * time.Second, PromptTokens: 1200, CompletionTokens: 80, Cost: 0.0031, Outcome: "ok"},
		{Time: t0.Add(6 * time.Second), Kind: TraceToolCall, Step: 1, Name: "read_file", Duration: time.Millisecond, Args: `{"path":"main.go"}`, Result: "package main", Outcome: "ok"},
		{Time: t0.Add(7 * time.Second), Kind: TraceRefusal, Step: 2, Name: "patch", Outcome: "refused", Detail: ".github/workflows/ci.yml is outside the allowed paths"},
		{Time: t0.Add(9 * time.Second), Kind: TraceCheck, Step: 3, Name: "test", Duration: 2 * time.Second, Outcome: "failed", Detail: "go test ./..."},
		{Time: t0.Add(12 * time.Second), Kind: TraceCheck, Step: 4, Name: "test", Duration: 2 * time.Second, Outcome: "passed", Detail: "go test ./..."},
		{Time: t0.Add(13 * time.Second), Kind: TracePhase, Name: "agent", Duration: 11 * time.Second, Outcome: "ok"},
	}
}

func TestSummarizeTrace(t *testing.T) {
	s := SummarizeTrace(sampleTrace())
	if s.ModelCalls != 1 || s.ToolCalls != 1 || s.ChecksPassed != 1 || s.ChecksFailed != 1 || s.Refusals != 1 ||
		s.Steps != 4 || s.PromptTokens != 1200 || s.CompletionTokens != 80 || s.Cost != 0.0031 ||
		len(s.Phases) != 2 || s.WallTime != 13*time.Second {
		t.Errorf("summary %+v", s)
	}
	if z := SummarizeTrace(nil); z.WallTime != 0 || z.Steps != 0 {
		t.Errorf("empty trace summary %+v", z)
	}
}

func TestRenderTrace(t *testing.T) {
	md := RenderTrace("d-1", sampleTrace(), MaxTextLength-1)
	for _, want := range []string{
		"### Trace of task `d-1`",
		"| model calls | 1 (1200 tokens in, 80 out) |",
		"| checks | 1 passed, 1 failed |",
		"| policy refusals | 1 |",
		"| wall time | 13s |",
		"**Phases:** workspace 2s · agent 11s",
		"<details><summary>Every step: 7 events</summary>",
		"2. `model_call` **plugsky-coder** (step 1) — ok, 3s, 1200+80 tokens, $0.0031",
		"4. `refusal` **patch** (step 2) — refused, 0s: `.github/workflows/ci.yml is outside the allowed paths`",
		"3. `tool_call` **read\\_file** (step 1) — ok, 1ms: `{\"path\":\"main.go\"}`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("rendered trace lacks %q:\n%s", want, md)
		}
	}
	if !strings.HasSuffix(md, "</details>\n") {
		t.Errorf("rendered trace does not close its details:\n%s", md)
	}
}

func TestRenderTraceFitsGitHubsLimit(t *testing.T) {
	var events []TraceEvent
	for i := range 5000 {
		events = append(events, TraceEvent{Kind: TraceToolCall, Step: i + 1, Name: "run", Outcome: "ok",
			Args: strings.Repeat("x", 300), Detail: fmt.Sprintf("call %d", i)})
	}
	limit := MaxTextLength - 1
	md := RenderTrace("big", events, limit)
	if len(md) > limit {
		t.Fatalf("rendered %d bytes, limit %d", len(md), limit)
	}
	for _, want := range []string{"| tool calls | 5000 |", "1. `tool_call`", "5000. `tool_call`", "characters cut here", "</details>\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("cut trace lacks %q", want)
		}
	}
	if md := RenderTrace("tiny", events, 200); len(md) > 200 {
		t.Errorf("a 200-byte limit rendered %d bytes", len(md))
	}
}

func TestTraceEventCapped(t *testing.T) {
	long := strings.Repeat("line of output\n", 2000)
	e := TraceEvent{Kind: TraceToolCall, Args: long, Result: long, Detail: "kept"}.Capped()
	if len(e.Args) > MaxTraceField || len(e.Result) > MaxTraceField || !strings.Contains(e.Result, "characters cut here") || e.Detail != "kept" {
		t.Errorf("capped to %d and %d bytes", len(e.Args), len(e.Result))
	}
	short := TraceEvent{Args: "a", Result: "b"}
	if short.Capped() != short {
		t.Errorf("a short event changed when capped")
	}
}
