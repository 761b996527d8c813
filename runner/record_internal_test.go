package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/tools"
)

// recordStore keeps states in memory and the steps SetState was told.
type recordStore struct {
	state map[string][]byte
	steps []string
}

func (s *recordStore) SaveState(_ context.Context, id string, b []byte) error {
	s.state[id] = slices.Clone(b)
	return nil
}

func (s *recordStore) LoadState(_ context.Context, id string) ([]byte, error) {
	return s.state[id], nil
}

func (s *recordStore) SetState(_ context.Context, _ string, _ app.State, step string) error {
	s.steps = append(s.steps, step)
	return nil
}

func (s *recordStore) SaveProgress(ctx context.Context, id string, b []byte) error {
	return s.SaveState(ctx, id+":progress", b)
}

func (s *recordStore) LoadProgress(ctx context.Context, id string) ([]byte, error) {
	return s.LoadState(ctx, id+":progress")
}

func (s *recordStore) RequestStop(ctx context.Context, id, login string) error {
	return s.SaveState(ctx, id+":stop", []byte(login))
}

func (s *recordStore) StopRequested(ctx context.Context, id string) (string, error) {
	b, err := s.LoadState(ctx, id+":stop")
	return string(b), err
}

func (s *recordStore) RecordDecision(ctx context.Context, id string, b []byte) error {
	return s.SaveState(ctx, id+":decision", b)
}

func (s *recordStore) Decision(ctx context.Context, id string) ([]byte, error) {
	return s.LoadState(ctx, id+":decision")
}

func (s *recordStore) ClaimRefusal(context.Context, string, int, string, string) (bool, error) {
	return true, nil
}

// auditMem is an audit log in memory; fail, when set, refuses the next
// append.
type auditMem struct {
	entries []app.AuditEntry
	fail    error
}

func (a *auditMem) Append(_ context.Context, e app.AuditEntry) error {
	if err := a.fail; err != nil {
		a.fail = nil
		return err
	}
	a.entries = append(a.entries, e)
	return nil
}

// traceMem keeps traces in memory, answering as queue.Traces does.
type traceMem map[string][]app.TraceEvent

func (tr traceMem) Append(_ context.Context, id string, e app.TraceEvent) error {
	tr[id] = append(tr[id], e)
	return nil
}

func (tr traceMem) Trace(_ context.Context, id string) ([]app.TraceEvent, error) {
	if len(tr[id]) == 0 {
		return nil, app.Errorf(app.ENotFound, "There is no trace of task %q.", id)
	}
	return tr[id], nil
}

type recordWorld struct {
	r      *Runner
	store  *recordStore
	audit  *auditMem
	traces traceMem
}

func newRecordWorld() *recordWorld {
	w := &recordWorld{store: &recordStore{state: map[string][]byte{}}, audit: &auditMem{}, traces: traceMem{}}
	w.r = &Runner{cfg: Config{Store: w.store, Audit: w.audit, Traces: w.traces}, log: slog.New(slog.DiscardHandler)}
	return w
}

// task picks task t1 up as a worker does: with the progress saved so far.
func (w *recordWorld) task(t *testing.T) *task {
	t.Helper()
	prog, err := w.r.loadProgress(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	tk := &task{
		Task: &app.Task{ID: "t1", InstallationID: 7, Repo: "acme/stats", Number: 1, Verb: app.VerbFix, Requester: "ada", Instructions: "fix Sum"},
		prog: prog, log: w.r.log,
	}
	tk.rep = w.r.reporter(tk)
	return tk
}

var blockedWrite = agent.Event{Step: 1, Tool: "write_file", CallID: "c1", Arguments: `{"path":".github/workflows/x.yml"}`,
	Target: ".github/workflows/x.yml", Outcome: tools.BlockedWrite,
	Result: "refused, nothing was written: .github/workflows/x.yml matches the denied path \".github/workflows/**\"\nmore"}

// TestAuditEntriesAreWrittenOnce: a task run again from its start after a
// crash or a redelivery writes no entry twice, yet two refused calls with
// the same text are two incidents.
func TestAuditEntriesAreWrittenOnce(t *testing.T) {
	t.Parallel()
	w := newRecordWorld()
	ctx := t.Context()
	first := w.task(t)
	if err := first.rep.received(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.rep.admission(ctx, true, "ada has write access"); err != nil {
		t.Fatal(err)
	}
	first.rep.observe(ctx)(blockedWrite)
	first.prog.Branch, first.prog.Pushed = "agent/1-sum", "abc123"
	if err := first.rep.auditPush(ctx); err != nil {
		t.Fatal(err)
	}

	// The worker dies; another picks the task up from its saved progress.
	again := w.task(t)
	if err := again.rep.received(ctx); err != nil {
		t.Fatal(err)
	}
	if err := again.rep.admission(ctx, true, "ada has write access"); err != nil {
		t.Fatal(err)
	}
	again.rep.observe(ctx)(blockedWrite)
	second := blockedWrite
	second.Step, second.CallID = 2, "c2"
	again.rep.observe(ctx)(second)
	if err := again.rep.auditPush(ctx); err != nil {
		t.Fatal(err)
	}
	w.audit.fail = errors.New("redis: connection refused")
	pr := app.PullRequest{Number: 2, HTMLURL: "https://github.example/acme/stats/pull/2"}
	if err := again.rep.auditPullRequest(ctx, target{branch: "agent/1-sum"}, pr); err == nil {
		t.Fatal("a failed append was not reported: the task would go on without its entry")
	}
	if err := again.rep.auditPullRequest(ctx, target{branch: "agent/1-sum"}, pr); err != nil {
		t.Fatal(err)
	}
	// A pull request found open on an existing pull request's branch was
	// not opened by this task.
	if err := again.rep.auditPullRequest(ctx, target{branch: "feature", existing: true}, app.PullRequest{Number: 9}); err != nil {
		t.Fatal(err)
	}

	var kinds []string
	for _, e := range w.audit.entries {
		kinds = append(kinds, string(e.Kind))
		if e.Installation != 7 || e.Repo != "acme/stats" || e.Number != 1 || e.Task != "t1" || e.Actor != "ada" {
			t.Errorf("entry %+v is not about ada's task t1 on acme/stats#1", e)
		}
	}
	if want := []string{"command", "admission", "blocked", "push", "blocked", "pr_opened"}; !slices.Equal(kinds, want) {
		t.Fatalf("entries %v; want %v", kinds, want)
	}
	e := w.audit.entries
	if e[0].Detail != "/agent fix Sum" || !e[1].Allowed || e[1].Detail != "ada has write access" ||
		e[2].Detail != `step 1: write_file .github/workflows/x.yml: refused, nothing was written: .github/workflows/x.yml matches the denied path ".github/workflows/**"` ||
		!strings.HasPrefix(e[4].Detail, "step 2: write_file") || e[3].Detail != "agent/1-sum at abc123" ||
		!strings.HasPrefix(e[5].Detail, "#2 https://github.example/acme/stats/pull/2") {
		t.Errorf("entries %+v", e)
	}
}

// TestRefusalIsAnAdmissionDecision: a refused task's entry says so, with
// the sentence the requester was told.
func TestRefusalIsAnAdmissionDecision(t *testing.T) {
	t.Parallel()
	w := newRecordWorld()
	tk := w.task(t)
	if err := tk.rep.admission(t.Context(), false, "@ada may not ask: read access only"); err != nil {
		t.Fatal(err)
	}
	if e := w.audit.entries; len(e) != 1 || e[0].Kind != app.AuditAdmission || e[0].Allowed || e[0].Detail != "@ada may not ask: read access only" {
		t.Errorf("entries %+v; want one refused admission", e)
	}
}

// TestObserveTracesTheLoop: the loop's calls become trace events — checks,
// refusals and calls in the order they ended, model calls with their usage
// — and the task's step is still recorded.
func TestObserveTracesTheLoop(t *testing.T) {
	t.Parallel()
	w := newRecordWorld()
	ctx := t.Context()
	tk := w.task(t)
	observe, model := tk.rep.observe(ctx), tk.rep.observeModel(ctx)

	model(agent.ModelCall{Step: 1, Model: "edit-model", Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 40, CostUSD: 0.002}, Took: 1500 * time.Millisecond})
	observe(blockedWrite)
	observe(agent.Event{Step: 2, Tool: "run_checks", CallID: "c2", Arguments: "{}", Outcome: tools.Failed, Result: "check test failed",
		Took: 3 * time.Second, Checks: []tools.CheckRun{
			{Name: "build", Run: "go build ./...", Passed: true, Millis: 800},
			{Name: "test", Run: "go test ./...", Passed: false, ExitCode: 1, Millis: 2100},
		}})
	observe(agent.Event{Step: 3, Tool: "read_file", CallID: "c3", Arguments: "{", Outcome: tools.Invalid, Result: "invalid arguments"})
	observe(agent.Event{Step: 4}) // an answer without a call
	model(agent.ModelCall{Step: 5, Model: "edit-model", Err: errors.New(`POST "https://llm.internal.example/v1/chat/completions": 429 Too Many Requests`)})
	model(agent.ModelCall{Step: 5, Model: "fast-model", Digest: true, Usage: llm.Usage{PromptTokens: 300}})

	type row struct {
		kind    app.TraceKind
		step    int
		name    string
		outcome string
	}
	var got []row
	for _, e := range w.traces["t1"] {
		got = append(got, row{e.Kind, e.Step, e.Name, e.Outcome})
	}
	want := []row{
		{app.TraceModelCall, 1, "edit-model", "ok"},
		{app.TraceRefusal, 1, "write_file", "refused"},
		{app.TraceToolCall, 1, "write_file", "refused"},
		{app.TraceCheck, 2, "build", "passed"},
		{app.TraceCheck, 2, "test", "failed"},
		{app.TraceToolCall, 2, "run_checks", "failed"},
		{app.TraceToolCall, 3, "read_file", "error"},
		{app.TraceModelCall, 5, "edit-model", "error"},
		{app.TraceModelCall, 5, "fast-model", "ok"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trace\n%v\nwant\n%v", got, want)
	}
	ev := w.traces["t1"]
	if m := ev[0]; m.PromptTokens != 900 || m.CompletionTokens != 40 || m.Cost != 0.002 || m.Duration != 1500*time.Millisecond {
		t.Errorf("model call %+v", m)
	}
	if r := ev[1]; r.Args != ".github/workflows/x.yml" || !strings.HasPrefix(r.Detail, "refused, nothing was written") || strings.Contains(r.Detail, "more") {
		t.Errorf("refusal %+v; want the target and the reason's first line", r)
	}
	if c := ev[4]; c.Detail != "go test ./..." || c.Duration != 2100*time.Millisecond {
		t.Errorf("check %+v", c)
	}
	if c := ev[5]; c.Args != "{}" || c.Result != "check test failed" || c.Duration != 3*time.Second {
		t.Errorf("tool call %+v", c)
	}
	if e := ev[7]; e.Detail == "" || strings.Contains(e.Detail, "llm.internal.example") {
		t.Errorf("failed model call %+v; want it said, without the endpoint the check run would show", e)
	}
	if d := ev[8]; d.Detail == "" {
		t.Errorf("digest %+v; want it said", d)
	}
	if want := []string{"step 1: write_file .github/workflows/x.yml", "step 2: run_checks", "step 3: read_file", "step 4:"}; !slices.Equal(w.store.steps, want) {
		t.Errorf("steps %q; want %q", w.store.steps, want)
	}
	if len(w.audit.entries) != 1 || w.audit.entries[0].Kind != app.AuditBlocked {
		t.Errorf("audit %+v; want the refused write only", w.audit.entries)
	}
}

// TestPhasesFollowOneAnother: each phase starts where the previous one
// ended, from the task's start; a paused task that an approval resumes
// measures its first phase from its new reporter's start, not from the
// zero time.
func TestPhasesFollowOneAnother(t *testing.T) {
	t.Parallel()
	w := newRecordWorld()
	ctx := t.Context()
	tk := w.task(t)
	if err := tk.rep.received(ctx); err != nil {
		t.Fatal(err)
	}
	start := tk.rep.acct.since
	for _, p := range []string{"admission", "workspace", "agent"} {
		tk.rep.phase(ctx, p)
	}
	var names []string
	var total time.Duration
	for _, e := range w.traces["t1"] {
		names = append(names, e.Name)
		total += e.Duration
		if e.Kind != app.TracePhase {
			t.Errorf("event %+v is not a phase", e)
		}
	}
	if !slices.Equal(names, []string{"admission", "workspace", "agent"}) {
		t.Errorf("phases %v", names)
	}
	if ran := tk.rep.acct.since.Sub(start); total != ran {
		t.Errorf("phases add up to %s; the task ran %s", total, ran)
	}

	before := time.Now()
	resumed := &task{Task: &app.Task{ID: "t2"}, log: w.r.log}
	resumed.rep = w.r.reporter(resumed)
	resumed.rep.phase(ctx, "agent")
	if e := w.traces["t2"]; len(e) != 1 || e[0].Duration < 0 || e[0].Duration > time.Since(before) {
		t.Errorf("the first phase of a task resumed by another %+v is not measured from its reporter's start", e)
	}
}

// TestCheckTextIsTheStoredTrace: the check run shows the rendered trace,
// and the loop's own account where there is no trace to show.
func TestCheckTextIsTheStoredTrace(t *testing.T) {
	t.Parallel()
	w := newRecordWorld()
	ctx := t.Context()
	tk := w.task(t)
	st := &agent.State{Counts: agent.Counts{ToolCalls: 1, BlockedWrites: 1}}
	if got := tk.rep.checkText(ctx, st); got != text.Trace(st) {
		t.Errorf("check text without a stored trace:\n%s", got)
	}
	tk.rep.observe(ctx)(blockedWrite)
	stored := tk.rep.checkText(ctx, st)
	for _, want := range []string{"### Trace of task `t1`", "| policy refusals | 1 |", "refused, nothing was written"} {
		if !strings.Contains(stored, want) {
			t.Errorf("check text lacks %q:\n%s", want, stored)
		}
	}
	tk.rep.traces = nil
	if got := tk.rep.checkText(ctx, st); got != text.Trace(st) {
		t.Errorf("check text without a trace store:\n%s", got)
	}
}

// TestLabelIsACommandOnceDecidedOn: a label is a command only when the
// policy says it is the trigger, so its entry comes with the first
// decision about it, and a label nobody decided on leaves none.
func TestLabelIsACommandOnceDecidedOn(t *testing.T) {
	t.Parallel()
	w := newRecordWorld()
	ctx := t.Context()
	tk := w.task(t)
	tk.Verb, tk.Instructions, tk.Label = app.VerbFix, "", "agent:fix"
	if err := tk.rep.received(ctx); err != nil {
		t.Fatal(err)
	}
	if len(w.audit.entries) != 0 {
		t.Fatalf("entries %+v before the label was known to be the trigger", w.audit.entries)
	}
	if err := tk.rep.admission(ctx, true, "ada has write access"); err != nil {
		t.Fatal(err)
	}
	if err := tk.rep.audit(ctx, app.AuditPush, "agent/1-sum at abc123"); err != nil {
		t.Fatal(err)
	}
	e := w.audit.entries
	if len(e) != 3 || e[0].Kind != app.AuditCommand || e[0].Detail != "label agent:fix" || e[0].Actor != "ada" || e[1].Kind != app.AuditAdmission || e[2].Kind != app.AuditPush {
		t.Errorf("entries %+v; want the label's command, then the admission and the push", e)
	}
}

// TestDecisionIsAudited: the approver is the actor of an approval or a
// denial, which names the call and the paused task.
func TestDecisionIsAudited(t *testing.T) {
	t.Parallel()
	w := newRecordWorld()
	ctx := t.Context()
	tk := w.task(t)
	tk.Verb, tk.Requester = app.VerbApprove, "grace"
	call := &llm.ToolCall{ID: "c1", Name: "edit_file", Arguments: `{"path":"stats.go"}`}
	if err := tk.rep.auditDecision(ctx, "t0", call, true); err != nil {
		t.Fatal(err)
	}
	tk.Verb = app.VerbDeny
	if err := tk.rep.auditDecision(ctx, "t0", call, false); err != nil {
		t.Fatal(err)
	}
	e := w.audit.entries
	if len(e) != 2 || e[0].Kind != app.AuditApproval || e[1].Kind != app.AuditDenial || e[0].Actor != "grace" ||
		e[0].Detail != `edit_file {"path":"stats.go"}, the call task t0 waits on` {
		t.Errorf("entries %+v; want grace's approval, then her denial", e)
	}
}

// TestModelFailureIsSaidSafely: the trace is shown on GitHub, so a failed
// model call is described, never quoted.
func TestModelFailureIsSaidSafely(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("step 3: %w", context.DeadlineExceeded), "the model did not answer in time"},
		{fmt.Errorf("step 3: %w", context.Canceled), "the call was cancelled"},
		{fmt.Errorf("step 3: %w", app.Errorf(app.EBudget, "The model's context window is full.")), "The model's context window is full."},
		{errors.New(`POST "http://10.0.0.7:8000/v1/chat/completions": 500`), "the model call failed; the worker's log has the error"},
	} {
		if got := modelFailure(tt.err); got != tt.want {
			t.Errorf("modelFailure(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
}
