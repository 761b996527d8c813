package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/tools"
)

// What a task leaves behind besides its report on GitHub: entries in the
// installation's audit log (who asked, what was decided, what was refused,
// pushed and opened) and the task's trace (every model call, tool call,
// check, refusal and phase, with timings), which its check run shows.

// AuditLog appends to the audit log; queue.Audit satisfies it.
type AuditLog interface {
	Append(ctx context.Context, e app.AuditEntry) error
}

// TraceLog keeps tasks' traces; queue.Traces satisfies it.
type TraceLog interface {
	Append(ctx context.Context, taskID string, e app.TraceEvent) error
	Trace(ctx context.Context, taskID string) ([]app.TraceEvent, error)
}

// received starts a task's record: the command's audit entry, and the
// clock of its first phase. Every label added to an issue is delivered,
// and only the policy says which one is the trigger: a label's entry waits
// for the first decision about it, and a label that is no command leaves
// none.
func (r *Runner) received(ctx context.Context, tk *task) error {
	tk.since = time.Now()
	if tk.Label != "" {
		return nil
	}
	return r.auditCommand(ctx, tk)
}

func (r *Runner) auditCommand(ctx context.Context, tk *task) error {
	what := commandText(app.Policy{}, tk.Task)
	if tk.Label != "" {
		what = "label " + tk.Label
	}
	return r.audit(ctx, tk, app.AuditCommand, what)
}

// audit appends an entry of kind about tk, with tk's requester as the
// actor. Under at-least-once delivery a task may run again from its start:
// the marks of the entries written are kept in the task's progress, so an
// entry an earlier run wrote is not written twice. Only a worker that dies
// between the append and the save of its mark leaves a repeated entry.
func (r *Runner) audit(ctx context.Context, tk *task, kind app.AuditKind, detail string) error {
	return r.appendAudit(ctx, tk, app.AuditEntryFor(kind, tk.Task, detail), detail)
}

// admission records an admission decision with its reason.
func (r *Runner) admission(ctx context.Context, tk *task, allowed bool, reason string) error {
	e := app.AuditEntryFor(app.AuditAdmission, tk.Task, reason)
	e.Allowed = allowed
	return r.appendAudit(ctx, tk, e, fmt.Sprint(allowed, reason))
}

// appendAudit appends e unless an entry of its kind with the same key was
// written for tk before.
func (r *Runner) appendAudit(ctx context.Context, tk *task, e app.AuditEntry, key string) error {
	if r.cfg.Audit == nil {
		return nil
	}
	if tk.Label != "" && e.Kind != app.AuditCommand {
		if err := r.auditCommand(ctx, tk); err != nil {
			return err
		}
	}
	sum := sha256.Sum256([]byte(key))
	mark := string(e.Kind) + ":" + hex.EncodeToString(sum[:6])
	if slices.Contains(tk.prog.Audited, mark) {
		return nil
	}
	if err := r.cfg.Audit.Append(ctx, e); err != nil {
		return fmt.Errorf("audit %s of task %s: %w", e.Kind, tk.ID, err)
	}
	tk.prog.Audited = append(tk.prog.Audited, mark)
	return r.saveProgress(ctx, tk.ID, tk.prog)
}

// auditDecision records an approver's decision on call, the call the
// task paused waits on; tk is the approve or deny command's task, so the
// approver is the entry's actor.
func (r *Runner) auditDecision(ctx context.Context, tk *task, paused string, call *llm.ToolCall, approve bool) error {
	kind := app.AuditDenial
	if approve {
		kind = app.AuditApproval
	}
	return r.audit(ctx, tk, kind, fmt.Sprintf("%s %s, the call task %s waits on", call.Name, head(call.Arguments, 300), paused))
}

// auditPush records the push of tk's change, once it is saved as pushed.
func (r *Runner) auditPush(ctx context.Context, tk *task) error {
	return r.audit(ctx, tk, app.AuditPush, fmt.Sprintf("%s at %s", tk.prog.Branch, tk.prog.Pushed))
}

// auditPullRequest records a pull request the task opened. One found open
// on the branch was opened before, unless this task opened it in an
// attempt whose answer was lost: a new branch's pull request that this
// task has not recorded yet counts as its own.
func (r *Runner) auditPullRequest(ctx context.Context, tk *task, tg target, pr app.PullRequest) error {
	if !pr.Created && tg.existing {
		return nil
	}
	return r.audit(ctx, tk, app.AuditPROpened, fmt.Sprintf("#%d %s from %s", pr.Number, pr.HTMLURL, tk.prog.Branch))
}

// phase records in tk's trace that the named phase ended now; it began
// where the previous one ended, so a task's phases add up to its time.
func (r *Runner) phase(ctx context.Context, tk *task, name string) {
	now := time.Now()
	if tk.since.IsZero() {
		tk.since = now
	}
	r.trace(ctx, tk, app.TraceEvent{Time: now.UTC(), Kind: app.TracePhase, Name: name, Duration: now.Sub(tk.since)})
	tk.since = now
}

// trace appends e to tk's trace. The trace is the task's account, not its
// work: a failed append is logged and the task goes on.
func (r *Runner) trace(ctx context.Context, tk *task, e app.TraceEvent) {
	if r.cfg.Traces == nil {
		return
	}
	if err := r.cfg.Traces.Append(ctx, tk.ID, e); err != nil {
		tk.log.Warn("append to the trace", "kind", e.Kind, "name", e.Name, "err", err)
	}
}

// observe is the loop's progress callback: the task's step for "agentbot
// tasks" and "/agent status", then the call's checks, refusal and the call
// itself in the trace, and a refusal in the audit log, since a write or
// command the policy refused is a safety incident.
func (r *Runner) observe(ctx context.Context, tk *task) func(agent.Event) {
	return func(e agent.Event) {
		step := fmt.Sprintf("step %d: %s %s", e.Step, e.Tool, e.Target)
		if err := r.cfg.Store.SetState(ctx, tk.ID, app.StateRunning, strings.TrimSpace(step)); err != nil {
			tk.log.Warn("record step", "err", err)
		}
		if e.Tool == "" {
			return // an answer without a call: its model call is traced
		}
		end := time.Now().UTC()
		for _, c := range e.Checks {
			outcome := "failed"
			if c.Passed {
				outcome = "passed"
			}
			r.trace(ctx, tk, app.TraceEvent{Time: end, Kind: app.TraceCheck, Step: e.Step, Name: c.Name,
				Duration: time.Duration(c.Millis) * time.Millisecond, Outcome: outcome, Detail: c.Run})
		}
		outcome := "ok"
		switch e.Outcome {
		case tools.Failed:
			outcome = "failed"
		case tools.Invalid:
			outcome = "error"
		case tools.BlockedWrite, tools.BlockedCommand:
			outcome = "refused"
			r.trace(ctx, tk, app.TraceEvent{Time: end, Kind: app.TraceRefusal, Step: e.Step, Name: e.Tool,
				Outcome: outcome, Args: e.Target, Detail: firstLine(e.Result)})
			entry := app.AuditEntryFor(app.AuditBlocked, tk.Task, fmt.Sprintf("step %d: %s %s: %s", e.Step, e.Tool, e.Target, firstLine(e.Result)))
			if err := r.appendAudit(ctx, tk, entry, e.CallID); err != nil {
				tk.log.Error("audit a refused call", "tool", e.Tool, "err", err)
			}
		}
		r.trace(ctx, tk, app.TraceEvent{Time: end, Kind: app.TraceToolCall, Step: e.Step, Name: e.Tool,
			Duration: e.Took, Outcome: outcome, Args: e.Arguments, Result: e.Result})
	}
}

// observeModel is the loop's model-call callback: each completion in the
// trace, with its latency, tokens and cost.
func (r *Runner) observeModel(ctx context.Context, tk *task) func(agent.ModelCall) {
	return func(c agent.ModelCall) {
		e := app.TraceEvent{Time: time.Now().UTC(), Kind: app.TraceModelCall, Step: c.Step, Name: c.Model, Duration: c.Took,
			Outcome: "ok", PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, Cost: c.Usage.CostUSD}
		if c.Digest {
			e.Detail = "digest of an earlier result"
		}
		if c.Err != nil {
			e.Outcome, e.Detail = "error", modelFailure(c.Err)
		}
		r.trace(ctx, tk, e)
	}
}

// modelFailure says why a model call failed in words fit for the check
// run, which GitHub shows to anyone who can read the repository: the
// client's own error names the endpoint, so it stays in the worker's log.
func modelFailure(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the model did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	}
	if _, ok := errors.AsType[*app.Error](err); ok {
		return app.ErrorMessage(err)
	}
	return "the model call failed; the worker's log has the error"
}

// checkText is the text of tk's check run: the rendered trace as stored,
// or the loop's own account when there is no stored trace to show.
func (r *Runner) checkText(ctx context.Context, tk *task, st *agent.State) string {
	if r.cfg.Traces == nil {
		return trace(st)
	}
	events, err := r.cfg.Traces.Trace(ctx, tk.ID)
	if err != nil {
		tk.log.Warn("read the trace for the check run", "err", err)
		return trace(st)
	}
	return app.RenderTrace(tk.ID, events, app.MaxTextLength-1)
}
