package app

import (
	"fmt"
	"strings"
	"time"
)

// TraceKind says what a trace event records.
type TraceKind string

// The steps a task's trace is made of.
const (
	TraceModelCall TraceKind = "model_call" // a chat completion: model, latency, tokens, cost
	TraceToolCall  TraceKind = "tool_call"  // a tool the model called, with its capped arguments and result
	TraceCheck     TraceKind = "check"      // an acceptance check run
	TraceRefusal   TraceKind = "refusal"    // a tool call or write the policy refused, or a connection setup's egress proxy refused
	TraceEgress    TraceKind = "egress"     // a host setup's egress proxy connected setup to, once per task
	TracePhase     TraceKind = "phase"      // a lifecycle phase ended: admission, workspace, setup, agent (attempts), gate, verification, push
	TraceIncident  TraceKind = "incident"   // a safety incident: the final verification contradicts the loop
	TraceAttempt   TraceKind = "attempt"    // one of limits.attempts ended: its verdict, and its diff in Result
	TraceCut       TraceKind = "cut"        // the trace reached MaxTraceBytes: later events were dropped
)

// Valid reports whether k is one of the kinds above.
func (k TraceKind) Valid() bool {
	switch k {
	case TraceModelCall, TraceToolCall, TraceCheck, TraceRefusal, TraceEgress, TracePhase, TraceIncident, TraceAttempt, TraceCut:
		return true
	}
	return false
}

// Bounds on what a trace keeps, so that no task, whatever its commands or
// its model write, grows the shared Redis without bound.
const (
	// MaxTraceField is how many bytes of an event's arguments, result or
	// detail a trace keeps: enough to see what happened, while the full
	// output stays in the transcript.
	MaxTraceField = 4096
	// MaxTraceLabel is how many bytes of an event's name or outcome it
	// keeps.
	MaxTraceLabel = 256
	// MaxTraceBytes is how many bytes of events one task's trace keeps;
	// past it a TraceCut event says so and later events are dropped.
	MaxTraceBytes = 1 << 20
)

// TraceEvent is one step of a task's trace.
type TraceEvent struct {
	Time     time.Time     `json:"time"`
	Kind     TraceKind     `json:"kind"`
	Step     int           `json:"step,omitempty"` // the agent loop's step, 0 outside the loop
	Name     string        `json:"name"`           // the model, tool, check or phase
	Duration time.Duration `json:"duration_ns"`
	// Outcome is how it ended: "ok", "error", "refused", "passed", "failed".
	Outcome          string  `json:"outcome,omitempty"`
	PromptTokens     int64   `json:"prompt_tokens,omitempty"`
	CompletionTokens int64   `json:"completion_tokens,omitempty"`
	Cost             float64 `json:"cost_usd,omitempty"`
	Args             string  `json:"args,omitempty"`
	Result           string  `json:"result,omitempty"`
	Detail           string  `json:"detail,omitempty"` // a refusal's reason, a check's command
	// Attempt is the attempt of limits.attempts the event belongs to,
	// from 1; 0 for a task that runs one.
	Attempt int `json:"attempt,omitempty"`
}

// Capped returns e with Args, Result and Detail cut to MaxTraceField bytes
// each, and Name and Outcome to MaxTraceLabel.
func (e TraceEvent) Capped() TraceEvent {
	e.Args = FitText(e.Args, MaxTraceField)
	e.Result = FitText(e.Result, MaxTraceField)
	e.Detail = FitText(e.Detail, MaxTraceField)
	e.Name = FitText(e.Name, MaxTraceLabel)
	e.Outcome = FitText(e.Outcome, MaxTraceLabel)
	return e
}

// TraceCutEvent is the event that ends a trace cut at MaxTraceBytes.
func TraceCutEvent(at time.Time) TraceEvent {
	return TraceEvent{Time: at, Kind: TraceCut, Name: "trace", Outcome: "cut",
		Detail: fmt.Sprintf("the trace reached its cap of %d bytes; later events were not kept", MaxTraceBytes)}
}

// TraceSummary is what a trace adds up to.
type TraceSummary struct {
	ModelCalls       int
	ToolCalls        int
	ChecksPassed     int
	ChecksFailed     int
	Refusals         int
	Steps            int // the highest loop step seen
	PromptTokens     int64
	CompletionTokens int64
	Cost             float64
	Phases           []TraceEvent  // phase events, in order
	WallTime         time.Duration // from the first event's start to the last event's end
}

// SummarizeTrace adds events up.
func SummarizeTrace(events []TraceEvent) TraceSummary {
	var s TraceSummary
	var first, last time.Time
	for _, e := range events {
		switch e.Kind {
		case TraceModelCall:
			s.ModelCalls++
		case TraceToolCall:
			s.ToolCalls++
		case TraceCheck:
			if e.Outcome == "passed" {
				s.ChecksPassed++
			} else {
				s.ChecksFailed++
			}
		case TraceRefusal:
			s.Refusals++
		case TracePhase:
			s.Phases = append(s.Phases, e)
		}
		s.Steps = max(s.Steps, e.Step)
		s.PromptTokens += e.PromptTokens
		s.CompletionTokens += e.CompletionTokens
		s.Cost += e.Cost
		// An event is stamped when it ends; it started Duration earlier.
		if start := e.Time.Add(-e.Duration); first.IsZero() || start.Before(first) {
			first = start
		}
		if e.Time.After(last) {
			last = e.Time
		}
	}
	if !first.IsZero() {
		s.WallTime = last.Sub(first)
	}
	return s
}

// RenderTrace returns the Markdown of a task's check run summary: what the
// trace adds up to, then every step in a folded list, in at most limit
// bytes. When the steps do not fit, the middle of the list is cut and says
// so; the summary and the list's last steps, where a failure shows, stay.
func RenderTrace(taskID string, events []TraceEvent, limit int) string {
	s := SummarizeTrace(events)
	var head strings.Builder
	fmt.Fprintf(&head, "### Trace of task `%s`\n\n", taskID)
	fmt.Fprintf(&head, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&head, "| steps | %d |\n", s.Steps)
	fmt.Fprintf(&head, "| model calls | %d (%d tokens in, %d out) |\n", s.ModelCalls, s.PromptTokens, s.CompletionTokens)
	fmt.Fprintf(&head, "| cost | $%.4f |\n", s.Cost)
	fmt.Fprintf(&head, "| tool calls | %d |\n", s.ToolCalls)
	fmt.Fprintf(&head, "| checks | %d passed, %d failed |\n", s.ChecksPassed, s.ChecksFailed)
	fmt.Fprintf(&head, "| policy refusals | %d |\n", s.Refusals)
	fmt.Fprintf(&head, "| wall time | %s |\n", s.WallTime.Round(time.Millisecond))
	if len(s.Phases) > 0 {
		phases := make([]string, len(s.Phases))
		for i, p := range s.Phases {
			phases[i] = fmt.Sprintf("%s %s", p.Name, p.Duration.Round(time.Millisecond))
		}
		fmt.Fprintf(&head, "\n**Phases:** %s\n", strings.Join(phases, " · "))
	}
	fmt.Fprintf(&head, "\n<details><summary>Every step: %d events</summary>\n\n", len(events))
	const foot = "\n</details>\n"

	var list strings.Builder
	for i, e := range events {
		list.WriteString(traceLine(i+1, e))
	}
	room := limit - head.Len() - len(foot)
	if room <= 0 {
		return FitText(head.String(), limit)
	}
	return head.String() + FitText(list.String(), room) + foot
}

// traceLine is one event as a Markdown list item, on one line so that a
// cut list stays a list.
func traceLine(n int, e TraceEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d. `%s` **%s**", n, e.Kind, mdInline(e.Name))
	switch {
	case e.Attempt > 0 && e.Step > 0:
		fmt.Fprintf(&b, " (attempt %d, step %d)", e.Attempt, e.Step)
	case e.Attempt > 0:
		fmt.Fprintf(&b, " (attempt %d)", e.Attempt)
	case e.Step > 0:
		fmt.Fprintf(&b, " (step %d)", e.Step)
	}
	if e.Outcome != "" {
		fmt.Fprintf(&b, " — %s", mdInline(e.Outcome))
	}
	fmt.Fprintf(&b, ", %s", e.Duration.Round(time.Millisecond))
	if e.PromptTokens+e.CompletionTokens > 0 {
		fmt.Fprintf(&b, ", %d+%d tokens, $%.4f", e.PromptTokens, e.CompletionTokens, e.Cost)
	}
	for _, f := range []string{e.Args, e.Detail} {
		if f != "" {
			fmt.Fprintf(&b, ": `%s`", mdCode(f, 120))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// mdInline keeps user-influenced text (tool names, outcomes) from opening
// HTML or Markdown constructs in the check run.
func mdInline(s string) string {
	return strings.NewReplacer("\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "'").Replace(s)
}

// mdCode returns at most n bytes of s on one line, fit for a code span.
func mdCode(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "`", "'")
	if len(s) > n {
		s = validPrefix(s, n) + "…"
	}
	return s
}
