package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/tools"
)

// reporter is one task's account of itself: it owns every write a task
// makes about its own progress — the status comment, the check run, the
// reactions on the command, the replies in review threads, the task's
// record (state and step), the audit log, the trace, the outcome and the
// runner's saved progress. The lifecycle's steps tell it what happened;
// it decides how that is shown.
//
// Every write is idempotent across resumes: the status comment and thread
// replies carry the task's marker and are found again, reactions are
// idempotent on GitHub's side, the check run's id and the marks of audit
// entries written are kept in the saved progress, and a task whose report
// is complete (progress.Final) is not reported again.
type reporter struct {
	tk *task
	// mu keeps the task's writes one at a time: the attempts of
	// limits.attempts report at once.
	mu       *sync.Mutex
	acct     *account // shared with the reporters of the task's attempts
	envs     bool     // the worker keeps prepared environments
	store    Store
	audits   AuditLog // nil: no audit log
	traces   TraceLog // nil: no trace kept
	outcomes Outcomes // nil: outcomes not kept
}

// account is what a task has come to so far, as its reports show it.
// The steps tell the reporter (ran, gateRefused, follows, and the egress
// proxy's callbacks); nothing else reads or writes it.
type account struct {
	run    *agent.State // the loop's end, once it ran
	gated  bool         // the host gate refused the change
	follow *followUp    // what a follow-up addresses, once read
	since  time.Time    // when the trace's current phase began
	// refused are the connections setup's egress proxy refused.
	refused []egress.Refusal
	// reached are the hosts setup's egress proxy connected it to, each
	// once, up to egress.MaxReached.
	reached []egress.Reach
	// refusedMore counts the refusals past egress.MaxRefusals, which are
	// neither traced, audited nor logged one by one.
	refusedMore int
}

// reporter returns tk's reporter; the task's first phase begins now.
func (r *Runner) reporter(tk *task) *reporter {
	return &reporter{tk: tk, mu: &sync.Mutex{}, acct: &account{since: time.Now()}, envs: r.cfg.Envs != nil,
		store: r.cfg.Store, audits: r.cfg.Audit, traces: r.cfg.Traces, outcomes: r.cfg.Outcomes}
}

// ran is told the loop's end st: the reports show it from now on.
func (rp *reporter) ran(st *agent.State) { rp.acct.run = st }

// gateRefused is told that the host gate refused the change, a safety
// incident in the task's outcome.
func (rp *reporter) gateRefused() { rp.acct.gated = true }

// follows is told what the task follows up on: the reports show the CI
// it answers, and the review's threads are answered when it ends.
func (rp *reporter) follows(f *followUp) { rp.acct.follow = f }

// forAttempt is rp for attempt n of limits.attempts: what it traces is
// marked as the attempt's.
func (rp *reporter) forAttempt(n int) *reporter {
	c := *rp
	if rp.traces != nil {
		c.traces = attemptTraces{TraceLog: rp.traces, n: n}
	}
	return &c
}

// attemptTraces marks the events it appends with an attempt.
type attemptTraces struct {
	TraceLog
	n int
}

func (t attemptTraces) Append(ctx context.Context, id string, e app.TraceEvent) error {
	e.Attempt = t.n
	return t.TraceLog.Append(ctx, id, e)
}

// state records where the task is, for "agentbot tasks" and "/agent
// status".
func (rp *reporter) state(ctx context.Context, st app.State, step string) error {
	return rp.store.SetState(ctx, rp.tk.ID, st, step)
}

// say sets the status comment to body.
func (rp *reporter) say(ctx context.Context, body string) error {
	return rp.tk.status.Set(ctx, body)
}

// running records the running task's step and says what it is doing.
func (rp *reporter) running(ctx context.Context, step, what string) error {
	if err := rp.state(ctx, app.StateRunning, step); err != nil {
		return err
	}
	return rp.say(ctx, text.Running(rp.tk.request(), what))
}

// react reacts to the command with reaction.
func (rp *reporter) react(ctx context.Context, reaction app.Reaction) error {
	return rp.tk.inst.React(ctx, rp.tk.Task, reaction)
}

// received starts a task's record with the command's audit entry. Every label added to an issue is delivered,
// and only the policy says which one is the trigger: a label's entry waits
// for the first decision about it, and a label that is no command leaves
// none; so does a pull request event, which review.auto decides on.
func (rp *reporter) received(ctx context.Context) error {
	if undecided(rp.tk) {
		return nil
	}
	return rp.auditCommand(ctx)
}

// undecided reports whether tk may be no command at all until the policy
// says: a label, or a pull request event that starts a review only when
// review.auto asks for one.
func undecided(tk *task) bool { return tk.Label != "" || tk.Auto != nil }

func (rp *reporter) auditCommand(ctx context.Context) error {
	tk := rp.tk
	what := commandText(policy.Policy{}, tk.Task)
	switch {
	case tk.Label != "":
		what = "label " + tk.Label
	case tk.Auto != nil:
		what = "pull_request " + tk.Auto.Action + " (automatic review)"
	}
	return rp.audit(ctx, app.AuditCommand, what)
}

// audit appends an entry of kind about tk, with tk's requester as the
// actor. Under at-least-once delivery a task may run again from its start:
// the marks of the entries written are kept in the task's progress, so an
// entry an earlier run wrote is not written twice. Only a worker that dies
// between the append and the save of its mark leaves a repeated entry.
func (rp *reporter) audit(ctx context.Context, kind app.AuditKind, detail string) error {
	tk := rp.tk
	return rp.appendAudit(ctx, app.AuditEntryFor(kind, tk.Task, detail), detail)
}

// admission records an admission decision with its reason.
func (rp *reporter) admission(ctx context.Context, allowed bool, reason string) error {
	tk := rp.tk
	e := app.AuditEntryFor(app.AuditAdmission, tk.Task, reason)
	e.Allowed = allowed
	return rp.appendAudit(ctx, e, fmt.Sprint(allowed, reason))
}

// appendAudit appends e unless an entry of its kind with the same key was
// written for tk before.
func (rp *reporter) appendAudit(ctx context.Context, e app.AuditEntry, key string) error {
	tk := rp.tk
	if rp.audits == nil {
		return nil
	}
	if undecided(tk) && e.Kind != app.AuditCommand {
		if err := rp.auditCommand(ctx); err != nil {
			return err
		}
	}
	sum := sha256.Sum256([]byte(key))
	mark := string(e.Kind) + ":" + hex.EncodeToString(sum[:6])
	if slices.Contains(tk.prog.Audited, mark) {
		return nil
	}
	if err := rp.audits.Append(ctx, e); err != nil {
		return fmt.Errorf("audit %s of task %s: %w", e.Kind, tk.ID, err)
	}
	tk.prog.Audited = append(tk.prog.Audited, mark)
	return rp.save(ctx)
}

// auditDecision records an approver's decision on call, the call the
// task paused waits on; tk is the approve or deny command's task, so the
// approver is the entry's actor.
func (rp *reporter) auditDecision(ctx context.Context, paused string, call *llm.ToolCall, approve bool) error {
	kind := app.AuditDenial
	if approve {
		kind = app.AuditApproval
	}
	return rp.audit(ctx, kind, fmt.Sprintf("%s %s, the call task %s waits on", call.Name, text.Head(call.Arguments, 300), paused))
}

// pullRequest opens the pull request of the branch tk pushed, with
// title, body and spec, or finds the one open on it, and records it: the
// push and the pull request in the audit log, the pull request in the
// task's progress.
func (rp *reporter) pullRequest(ctx context.Context, tg target, title, body string, spec app.PullRequestSpec) (app.PullRequest, error) {
	tk := rp.tk
	if err := rp.auditPush(ctx); err != nil {
		return app.PullRequest{}, err
	}
	pr, err := tk.inst.EnsurePullRequest(ctx, tk.Repo, app.PullRequestDraft{
		Head: tk.prog.Branch, Base: tg.prBase, Title: title, Body: body, Spec: spec,
	})
	if err != nil {
		return app.PullRequest{}, err
	}
	tk.prog.PR = &pr
	if err := rp.save(ctx); err != nil {
		return app.PullRequest{}, err
	}
	return pr, rp.auditPullRequest(ctx, tg, pr)
}

// auditPush records the push of tk's change, once it is saved as pushed.
func (rp *reporter) auditPush(ctx context.Context) error {
	tk := rp.tk
	return rp.audit(ctx, app.AuditPush, fmt.Sprintf("%s at %s", tk.prog.Branch, tk.prog.Pushed))
}

// auditPullRequest records a pull request the task opened. One found open
// on the branch was opened before, unless this task opened it in an
// attempt whose answer was lost: a new branch's pull request that this
// task has not recorded yet counts as its own.
func (rp *reporter) auditPullRequest(ctx context.Context, tg target, pr app.PullRequest) error {
	tk := rp.tk
	if !pr.Created && tg.existing {
		return nil
	}
	return rp.audit(ctx, app.AuditPROpened, fmt.Sprintf("#%d %s from %s", pr.Number, pr.HTMLURL, tk.prog.Branch))
}

// review submits a review of tk's pull request, which carries tk's marker
// so that a review submitted before is found again, and returns its id.
func (rp *reporter) review(ctx context.Context, d app.ReviewDraft) (int64, error) {
	tk := rp.tk
	return tk.inst.SubmitReview(ctx, tk.Repo, tk.Number, tk.ID, d)
}

// resolve answers the review thread of inline comment comment with reply
// and resolves the thread.
func (rp *reporter) resolve(ctx context.Context, comment int64, thread, reply string) error {
	tk := rp.tk
	if err := tk.inst.ReplyInThread(ctx, tk.Repo, tk.Number, comment, tk.ID, reply); err != nil {
		return err
	}
	return tk.inst.ResolveThread(ctx, thread)
}

// phase records in tk's trace that the named phase ended now; it began
// where the previous one ended, so a task's phases add up to its time.
func (rp *reporter) phase(ctx context.Context, name string) { rp.endPhase(ctx, name, "") }

// endPhase is phase with the trace event's detail.
func (rp *reporter) endPhase(ctx context.Context, name, detail string) {
	now := time.Now()
	rp.trace(ctx, app.TraceEvent{Time: now.UTC(), Kind: app.TracePhase, Name: name, Duration: now.Sub(rp.acct.since), Detail: detail})
	rp.acct.since = now
}

// trace appends e to tk's trace. The trace is the task's account, not its
// work: a failed append is logged and the task goes on.
func (rp *reporter) trace(ctx context.Context, e app.TraceEvent) {
	tk := rp.tk
	if rp.traces == nil {
		return
	}
	if err := rp.traces.Append(ctx, tk.ID, e); err != nil {
		tk.log.Warn("append to the trace", "kind", e.Kind, "name", e.Name, "err", err)
	}
}

// observe is the loop's progress callback: the task's step for "agentbot
// tasks" and "/agent status", then the call's checks, refusal and the call
// itself in the trace, and a refusal in the audit log, since a write or
// command the policy refused is a safety incident.
func (rp *reporter) observe(ctx context.Context) func(agent.Event) {
	tk := rp.tk
	return func(e agent.Event) {
		step := fmt.Sprintf("step %d: %s %s", e.Step, e.Tool, e.Target)
		if err := rp.store.SetState(ctx, tk.ID, app.StateRunning, strings.TrimSpace(step)); err != nil {
			tk.log.Warn("record step", "err", err)
		}
		if e.Tool == "" {
			return // an answer without a call: its model call is traced
		}
		end := time.Now().UTC()
		for _, c := range e.Checks {
			rp.traceCheck(ctx, end, e.Step, c.Name, c, c.Run)
		}
		outcome := "ok"
		switch e.Outcome {
		case tools.Failed:
			outcome = "failed"
		case tools.Invalid:
			outcome = "error"
		case tools.BlockedWrite, tools.BlockedCommand:
			outcome = "refused"
			rp.trace(ctx, app.TraceEvent{Time: end, Kind: app.TraceRefusal, Step: e.Step, Name: e.Tool,
				Outcome: outcome, Args: e.Target, Detail: text.FirstLine(e.Result)})
			entry := app.AuditEntryFor(app.AuditBlocked, tk.Task, fmt.Sprintf("step %d: %s %s: %s", e.Step, e.Tool, e.Target, text.FirstLine(e.Result)))
			if err := rp.appendAudit(ctx, entry, e.CallID); err != nil {
				tk.log.Error("audit a refused call", "tool", e.Tool, "err", err)
			}
		}
		rp.trace(ctx, app.TraceEvent{Time: end, Kind: app.TraceToolCall, Step: e.Step, Name: e.Tool,
			Duration: e.Took, Outcome: outcome, Args: e.Arguments, Result: e.Result})
	}
}

// traceCheck appends check run c, ended at end, to the trace as name,
// with detail; step is the loop's, 0 for a check the host ran.
func (rp *reporter) traceCheck(ctx context.Context, end time.Time, step int, name string, c tools.CheckRun, detail string) {
	outcome := "failed"
	if c.Passed {
		outcome = "passed"
	}
	rp.trace(ctx, app.TraceEvent{Time: end, Kind: app.TraceCheck, Step: step, Name: name,
		Duration: time.Duration(c.Millis) * time.Millisecond, Outcome: outcome, Detail: detail})
}

// observeModel is the loop's model-call callback: each completion in the
// trace, with its latency, tokens and cost.
func (rp *reporter) observeModel(ctx context.Context) func(agent.ModelCall) {
	return func(c agent.ModelCall) {
		e := app.TraceEvent{Time: time.Now().UTC(), Kind: app.TraceModelCall, Step: c.Step, Name: c.Model, Duration: c.Took,
			Outcome: "ok", PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, Cost: c.Usage.CostUSD}
		if c.Digest {
			e.Detail = "digest of an earlier result"
		}
		if c.Err != nil {
			e.Outcome, e.Detail = "error", modelFailure(c.Err)
		}
		rp.trace(ctx, e)
	}
}

// checkText is the text of tk's check run: the rendered trace as stored,
// or the loop's own account when there is no stored trace to show.
func (rp *reporter) checkText(ctx context.Context, st *agent.State) string {
	tk := rp.tk
	if rp.traces == nil {
		return text.Trace(st)
	}
	events, err := rp.traces.Trace(ctx, tk.ID)
	if err != nil {
		tk.log.Warn("read the trace for the check run", "err", err)
		return text.Trace(st)
	}
	return app.RenderTrace(tk.ID, events, app.MaxTextLength-1)
}

// save keeps the task's progress, with the marks of what was reported.
func (rp *reporter) save(ctx context.Context) error {
	id := rp.tk.ID
	raw, err := json.Marshal(rp.tk.prog)
	if err != nil {
		return err
	}
	if err := rp.store.SaveProgress(ctx, id, raw); err != nil {
		return fmt.Errorf("save progress of task %s: %w", id, err)
	}
	return nil
}

// ignore ends a task without a word on GitHub: one that was not a
// command after all (an issue labelled with some other label), or one
// nobody asked for in words (failing CI, an automatic review).
func (rp *reporter) ignore(ctx context.Context, why string) error {
	tk := rp.tk
	tk.log.Info("ended without a word on GitHub", "reason", why)
	if err := rp.store.SetState(ctx, tk.ID, app.StateRefused, why); err != nil {
		return err
	}
	tk.prog.Final = app.StateRefused
	return rp.save(ctx)
}

// finish ends a task with no pull request: the status comment says why,
// 😕 on the command, the record's final state, and the progress marked
// final so a redelivery does nothing.
func (rp *reporter) finish(ctx context.Context, st app.State, body, step string) error {
	tk := rp.tk
	body += text.Ended(rp.report(rp.acct.run))
	if err := tk.status.Set(ctx, body); err != nil {
		return err
	}
	if err := rp.answerReview(ctx, st, body); err != nil {
		return err
	}
	if rc := tk.ReviewComment; rc != nil && !tk.prog.Replied {
		// A command on a diff line is answered on that line too.
		if err := tk.inst.ReplyInThread(ctx, tk.Repo, tk.Number, rc.ID, tk.ID, text.ThreadReply(tk.request(), body)); err != nil {
			return err
		}
		tk.prog.Replied = true
	}
	reaction := app.ReactionFailed
	if st == app.StateSucceeded {
		reaction = app.ReactionDone
	}
	if err := tk.inst.React(ctx, tk.Task, reaction); err != nil {
		return err
	}
	if step == "" {
		step = string(st)
	}
	// The outcome first: whoever sees the record final may read it.
	if err := rp.saveOutcome(ctx, st); err != nil {
		return err
	}
	if err := rp.store.SetState(ctx, tk.ID, st, step); err != nil {
		return err
	}
	if rp.acct.run != nil {
		rp.phase(ctx, "report")
	}
	tk.prog.Final = st
	return rp.save(ctx)
}

// saveOutcome records what became of a fix that was admitted.
func (rp *reporter) saveOutcome(ctx context.Context, st app.State) error {
	tk := rp.tk
	run := rp.acct.run
	if rp.outcomes == nil || run == nil {
		return nil
	}
	o := app.TaskOutcome{
		Task: tk.ID, Repo: tk.Repo, Model: tk.policy.Policy.Model.Edit, FinishedAt: time.Now().UTC(), State: st,
		ChecksPassed: len(run.Checks) > 0 && run.Checks[len(run.Checks)-1].Passed,
		HumanHelp:    len(run.Approvals) > 0,
		Iterations:   run.Step, WallTime: run.Elapsed, Tokens: run.Usage.Total(), Cost: run.Usage.CostUSD,
		SafetyIncidents: run.Counts.BlockedWrites + run.Counts.BlockedCommands,
	}
	if rp.acct.gated {
		o.SafetyIncidents++
	}
	if a := tk.prog.Attempts; a != nil {
		o.Tokens, o.Cost = a.Tokens, a.Cost // every attempt's spending
		if a.Winner > 0 {
			o.Model = a.Each[a.Winner-1].Model
		}
	}
	countVerification(tk, &o)
	o.Review = reviewOutcome(tk)
	if tk.prog.PR != nil {
		o.PR = tk.prog.PR.Number
		o.Base, o.Pushed = tk.prog.Base, tk.prog.Pushed // the agent's final diff, for survival once merged
	}
	if err := rp.outcomes.Save(ctx, o); err != nil {
		return fmt.Errorf("save outcome of task %s: %w", tk.ID, err)
	}
	return nil
}

// completeCheck ends the task with its check run: on the commit it pushed,
// so that the run and its trace show on the pull request, or on the commit
// it started from when it pushed nothing. Progress is on the status
// comment until then; a check run created at the start would sit on a
// commit the pull request does not show.
func (rp *reporter) completeCheck(ctx context.Context, c app.Conclusion, out app.CheckOutput) error {
	tk := rp.tk
	sha := tk.prog.Pushed
	if sha == "" {
		sha = tk.prog.Base
	}
	check := tk.inst.CheckRun(tk.Repo, sha, tk.ID, tk.prog.CheckRunID)
	if err := check.Complete(ctx, c, out); err != nil {
		return err
	}
	if tk.prog.CheckRunID == check.ID() {
		return nil
	}
	tk.prog.CheckRunID = check.ID()
	return rp.save(ctx)
}

// fail reports a task that ends without a pull request.
func (rp *reporter) fail(ctx context.Context, st *agent.State, f text.Failure) error {
	out := text.FailedCheck(rp.report(st), f)
	conclusion := app.ConclusionFailure
	if st.Status == app.StateStopped || f.StoppedBy != "" {
		conclusion = app.ConclusionCancelled
	}
	out.Text = rp.checkText(ctx, st)
	if err := rp.completeCheck(ctx, conclusion, out); err != nil {
		return err
	}
	final := app.StateFailed
	switch {
	case f.StoppedBy != "":
		final = app.StateStopped
	case st.Status.Final() && st.Status != app.StateSucceeded:
		final = st.Status
	}
	return rp.finish(ctx, final, out.Summary, text.Reason(st, f))
}

// setupPhase ends the setup phase in the trace, saying where the
// environment came from.
func (rp *reporter) setupPhase(ctx context.Context, detail string) { rp.endPhase(ctx, "setup", detail) }

// answerReview replies in the thread of each of the review's inline
// comments: what changed, with a link to the commit, or why nothing did.
// A reply carries the task's marker, so that answering again is a no-op.
func (rp *reporter) answerReview(ctx context.Context, final app.State, status string) error {
	tk, f := rp.tk, rp.acct.follow
	if f == nil {
		return nil
	}
	changed, report := rp.changedPaths(), rp.report(rp.acct.run)
	for _, c := range f.comments {
		reply := text.ReviewReply(report, c.Path, final, changed[c.Path], status)
		if err := tk.inst.ReplyInThread(ctx, tk.Repo, tk.Number, c.ID, tk.ID, reply); err != nil {
			return err
		}
	}
	for _, c := range f.refused {
		if err := tk.inst.ReplyInThread(ctx, tk.Repo, tk.Number, c.comment.ID, tk.ID, text.NotAddressed(c.why)); err != nil {
			return err
		}
	}
	return nil
}

// delivered reports a task whose change is in its pull request: as a
// failure when failed is set (the pull request is then a draft), else
// the check run's success and the status comment's link.
func (rp *reporter) delivered(ctx context.Context, report text.Report, pr app.PullRequest, failed *text.Failure) error {
	if failed != nil {
		return rp.fail(ctx, report.Loop, *failed)
	}
	report.PR = &pr
	out := text.DoneCheck(report, pr)
	out.Text = rp.checkText(ctx, report.Loop)
	if err := rp.completeCheck(ctx, app.ConclusionSuccess, out); err != nil {
		return err
	}
	return rp.finish(ctx, app.StateSucceeded, text.Done(report, pr), fmt.Sprintf("pull request #%d", pr.Number))
}

// changed reports a step of the task's change as change.Make tells it
// (change.Change.Report): the task's record and status comment as each
// step starts, its trace, audit log and saved progress as each ends. A
// task of one attempt reports all of it; an attempt of several traces what
// it ran as its own, and the task reports the attempts together
// (conclude).
func (rp *reporter) changed(ctx context.Context, e change.Event) error {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	tk, only := rp.tk, e.Attempt == 0
	if !only {
		rp = rp.forAttempt(e.Attempt)
	}
	if !e.Done {
		return rp.starts(ctx, e)
	}
	switch e.Step {
	case change.StepSetup:
		if !rp.envs {
			if len(tk.policy.Policy.Setup.Run) > 0 {
				rp.phase(ctx, "setup")
			}
		} else if e.Setup != "" {
			tk.log.Info("prepared environment", "setup", e.Setup)
			rp.setupPhase(ctx, e.Setup)
		}
	case change.StepBaseChecks:
		v := e.Base
		end := time.Now().UTC()
		for _, c := range v.Checks {
			rp.traceCheck(ctx, end, 0, "base "+c.Name, c, fmt.Sprintf("%s before the agent, sandbox %s: %s", text.ShortSHA(tk.prog.Base), text.ShortID(v.Container), c.Run))
		}
		rp.phase(ctx, "base checks")
		tk.prog.BaseChecks = v
		return rp.save(ctx)
	case change.StepLoop:
		if only && e.Of > 1 {
			rp.phase(ctx, "attempts")
		} else if only {
			rp.phase(ctx, "agent")
		}
	case change.StepGate:
		if only {
			rp.phase(ctx, "gate")
		}
	case change.StepVerification:
		if err := traceVerification(ctx, tk, rp, e.Loop, *e.Verified); err != nil || !only {
			return err
		}
		rp.phase(ctx, "verification")
		tk.prog.Verified = e.Verified
		return rp.save(ctx)
	case change.StepReproduction:
		rep := e.Reproduction
		tk.log.Info("reproduction", "attempt", e.Attempt, "reproduced", rep.Reproduced, "mode", rep.Mode, "tests", rep.Tests, "files", rep.Files, "why", rep.Why)
		ran := rep.Run != nil && !rep.Existing
		if ran {
			traceReproduction(ctx, rp, *rep)
		}
		if !only {
			return nil
		}
		if ran {
			// A phase only when tests ran: without them it took no
			// time.
			rp.phase(ctx, "reproduction")
		}
		tk.prog.Reproduction = rep
		return rp.save(ctx)
	}
	return nil
}

// starts records the step a task of one attempt starts and says what it
// does; a task of several says only that its attempts work.
func (rp *reporter) starts(ctx context.Context, e change.Event) error {
	if e.Attempt > 0 {
		return nil
	}
	tk := rp.tk
	switch e.Step {
	case change.StepBaseChecks:
		return rp.running(ctx, "base checks", "running the checks on "+text.ShortSHA(tk.prog.Base)+" before the agent starts")
	case change.StepLoop:
		what := "the agent is working"
		if e.Of > 1 {
			what = fmt.Sprintf("%d attempts of the agent are working", e.Of)
		}
		return rp.say(ctx, text.Running(tk.request(), what))
	case change.StepGate:
		return rp.state(ctx, app.StateRunning, "gate and push")
	case change.StepVerification:
		return rp.running(ctx, "verification", "verifying the checks in a fresh sandbox")
	case change.StepReproduction:
		return rp.running(ctx, "reproduction", "running the new tests on "+text.ShortSHA(tk.prog.Base)+", without the fix")
	}
	return nil
}
