package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Best of N. Under limits.attempts: N the loop runs N times side by side,
// each attempt in a work tree and sandbox of its own over the environment
// setup prepared once, and every attempt that finishes is gated and
// verified as a task of one attempt is (and reproduced, when the policy
// asks). The changes that pass are ranked by rank, and the best becomes
// the pull request; the others' diffs are in the trace.

// attempt is one run of the loop: a task's only one, or one of
// limits.attempts.
type attempt struct {
	n      int    // from 1; 0 for a task's only attempt
	id     string // the loop's saved state and its sandboxes are named after it
	ws     *workspace.Workspace
	policy app.Policy // the task's, with this attempt's model and budgets
	rep    *reporter  // traces what the attempt does as its own
	// The loop's callbacks; spent is nil for a task's only attempt, which
	// has cost_usd to itself.
	observe      func(agent.Event)
	observeModel func(agent.ModelCall)
	spent        func() float64
}

// onlyAttempt is the attempt of a task that runs one: it keeps the task's
// id, so that a task saved before attempts existed resumes as it was.
func onlyAttempt(ctx context.Context, tk *task, ws *workspace.Workspace) *attempt {
	return &attempt{id: tk.ID, ws: ws, policy: attemptPolicy(tk.policy.Policy, 0, 1), rep: tk.rep,
		observe: tk.rep.observe(ctx), observeModel: tk.rep.observeModel(ctx)}
}

// attemptID names attempt n of tk.
func attemptID(tk *task, n int) string { return AttemptID(tk.ID, n) }

// AttemptID is the id under which attempt n of limits.attempts of task id
// saves its loop's state; a task of one attempt saves it under its own.
func AttemptID(id string, n int) string { return fmt.Sprintf("%s-attempt-%d", id, n) }

// attemptPolicy is policy p as attempt i (from 0) of n runs it: with its
// edit model from model.attempts and its temperature from
// model.temperatures, each in turn, and its budgets.
//
// Iterations and the wall clock are each attempt's whole: the attempts
// run side by side, so the task takes no longer for them, and an attempt
// with a fraction of the steps would be weaker than the task's only one,
// which is not what asking for more attempts means. Tokens are split
// evenly, so that the task's sum stays within limits.tokens. The cost
// stays whole but counts every attempt's spending (attempt.spent): the
// attempts' models may be priced differently, so a fixed share would
// leave a cheap model's unspent, and once the sum reaches cost_usd every
// attempt stops.
func attemptPolicy(p app.Policy, i, n int) app.Policy {
	if m := p.Model.Attempts; len(m) > 0 {
		p.Model.Edit = m[i%len(m)]
	}
	if ts := p.Model.Temperatures; len(ts) > 0 {
		p.Model.Temperature = new(ts[i%len(ts)])
	}
	if n > 1 && p.Limits.Tokens > 0 {
		p.Limits.Tokens = max(1, p.Limits.Tokens/int64(n))
	}
	return p
}

// attemptRun is what became of one attempt.
type attemptRun struct {
	st        *agent.State
	stoppedBy string
	err       error
	gate      workspace.GateReport
	verified  *Verification
	repro     *Reproduction
	fail      *failure // why its change is not proposed; nil when it passed
	why       string   // fail in a line
}

// bestOf runs the policy's attempts side by side over the environment
// prepared once on ws, judges each change that finished, and proposes the
// best. A task resumed after its push proposes the winner it pushed.
func (r *Runner) bestOf(ctx context.Context, tk *task, tg target, ws *workspace.Workspace, remote workspace.Remote) error {
	if a := tk.prog.Attempts; tk.prog.Pushed != "" && a != nil && a.proposed() > 0 {
		st, err := r.loopState(ctx, attemptID(tk, a.proposed()))
		if err != nil {
			return err
		}
		if st == nil {
			return fmt.Errorf("attempt %d of task %s was pushed, but its loop state is gone", a.proposed(), tk.ID)
		}
		tk.run = st
		var failed *failure // a draft's, as the loop ended it
		if st.Status != app.StateSucceeded {
			failed = &failure{stop: st.Stop}
		}
		return r.deliver(ctx, tk, ws, remote, tg, st, failed)
	}
	if err := r.setup(ctx, tk, ws); err != nil {
		return err
	}
	if err := r.checkBase(ctx, tk, ws); err != nil {
		return err
	}
	ats, err := r.attempts(ctx, tk, ws, remote)
	defer func() {
		for _, at := range ats {
			if at.ws == ws {
				continue // the task's, closed by work
			}
			if err := at.ws.Close(); err != nil {
				tk.log.Warn("remove an attempt's work tree", "attempt", at.n, "err", err)
			}
		}
	}()
	if err != nil {
		return err
	}
	if err := tk.rep.say(ctx, runningText(tk, fmt.Sprintf("%d attempts of the agent are working", len(ats)))); err != nil {
		return err
	}
	runs := make([]attemptRun, len(ats))
	// Each attempt's change is judged as soon as its loop ends, while the
	// others may still run: the task takes as long as its slowest attempt
	// and that one's verification.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, at := range ats {
		wg.Go(func() {
			run := &runs[i]
			run.st, run.stoppedBy, run.err = r.runLoop(actx, tk, at)
			switch {
			case run.stoppedBy != "":
				// A stop is the task's: the verifications still running
				// end too, and their errors are the stop's.
				cancel()
			case run.err == nil:
				run.err = r.judge(actx, tk, at, run)
			}
		})
	}
	wg.Wait()
	tk.rep.phase(ctx, "attempts")
	for _, run := range runs {
		if run.stoppedBy != "" {
			tk.run = run.st
			return tk.rep.fail(ctx, run.st, failure{stoppedBy: run.stoppedBy})
		}
	}
	if err := runErrors(runs); err != nil {
		return err
	}
	for _, run := range runs {
		if run.verified != nil {
			if err := auditIncident(ctx, tk.rep, run.st, *run.verified); err != nil {
				return err
			}
		}
	}
	return r.proposeBest(ctx, tk, tg, remote, ats, runs)
}

// attempts makes the policy's attempts: the first over ws, the others over
// checkouts of the same commit, set up like ws when the worker keeps no
// environments; the caller closes the others' work trees, also on error.
func (r *Runner) attempts(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote) ([]*attempt, error) {
	p := tk.policy.Policy
	n := p.Limits.Attempts
	var mu sync.Mutex // the attempts' callbacks share the task's report and their cost
	costs := make([]float64, n)
	spent := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		var sum float64
		for _, c := range costs {
			sum += c
		}
		return sum
	}
	ats := make([]*attempt, 0, n)
	for i := range n {
		at := &attempt{n: i + 1, id: attemptID(tk, i+1), ws: ws, policy: attemptPolicy(p, i, n), rep: tk.rep.forAttempt(i + 1), spent: spent}
		if i > 0 {
			var err error
			if at.ws, err = r.cfg.Workspaces.Checkout(ctx, workspace.CheckoutOptions{Repo: tk.Repo, Remote: remote, Base: tk.prog.Base}); err != nil {
				return ats, err
			}
			ats = append(ats, at)
			if err := r.setUpAttempt(ctx, tk, at); err != nil {
				return ats, err
			}
		} else {
			ats = append(ats, at)
		}
		// A resumed attempt has spent before.
		saved, err := r.loopState(ctx, at.id)
		if err != nil {
			return ats, err
		}
		if saved != nil {
			costs[i] = saved.Usage.CostUSD
		}
		observe, observeModel := at.rep.observe(ctx), at.rep.observeModel(ctx)
		at.observe = func(e agent.Event) {
			mu.Lock()
			defer mu.Unlock()
			observe(e)
		}
		at.observeModel = func(c agent.ModelCall) {
			mu.Lock()
			costs[i] += c.Usage.CostUSD
			mu.Unlock()
			observeModel(c)
		}
	}
	return ats, nil
}

// setUpAttempt readies another attempt's work tree as setup readied the
// task's: without a prepared environment to share, setup runs in it too.
func (r *Runner) setUpAttempt(ctx context.Context, tk *task, at *attempt) error {
	if len(tk.policy.Policy.Setup.Run) > 0 && !tk.env.Kept() {
		if err := r.runSetup(ctx, tk, at.ws.Dir(), at.id+"-setup"); err != nil {
			return err
		}
	}
	if err := sandbox.ShareTree(at.ws.Dir()); err != nil {
		return fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	return nil
}

// judge gates, verifies and, when the policy asks, reproduces the change
// of an attempt that finished, as a task of one attempt does before it
// pushes; run says why the change is not proposed, if it is not.
func (r *Runner) judge(ctx context.Context, tk *task, at *attempt, run *attemptRun) error {
	st := run.st
	if st.Status != app.StateSucceeded {
		run.fail = &failure{stop: st.Stop}
		run.why = "the agent did not finish"
		if st.Stop != nil {
			run.why = reasonLine(st, *run.fail)
		}
		return nil
	}
	report, err := at.ws.Gate(ctx, tk.policy.Policy)
	if err != nil {
		if _, user := errors.AsType[*app.Error](err); user {
			run.fail, run.why = &failure{gate: err, diff: report.Diff}, "the gate refused it: "+firstLine(app.ErrorMessage(err))
			return nil
		}
		return err
	}
	run.gate = report
	if report.Diff == "" {
		run.fail, run.why = &failure{gate: change.NothingChanged()}, "it changed nothing"
		return nil
	}
	v, err := r.verified(ctx, tk, at.rep, at.ws, report.Tree, at.id+"-verify", st)
	if err != nil {
		return err
	}
	run.verified = &v
	if !v.Passed {
		run.fail, run.why = &failure{verify: run.verified}, change.VerifyReason(&v)
		return nil
	}
	if reproduceMode(tk) == app.ReproduceOff {
		return nil
	}
	if run.repro, err = r.reproduction(ctx, tk, at.rep, at.ws, report, at.id+"-reproduce"); err != nil {
		return err
	}
	if err := run.repro.Refusal(); err != nil {
		run.fail, run.why = &failure{gate: err, diff: report.Diff}, "not reproduced: "+run.repro.Why
	}
	return nil
}

// proposeBest ranks the changes that passed, traces every attempt and
// proposes the best; with none, the first attempt's failure is the task's.
func (r *Runner) proposeBest(ctx context.Context, tk *task, tg target, remote workspace.Remote, ats []*attempt, runs []attemptRun) error {
	var cands []candidate
	for i, run := range runs {
		if run.fail == nil {
			cands = append(cands, candidate{n: i + 1, reproduced: run.repro != nil && run.repro.Reproduced,
				lines: run.gate.LinesAdded + run.gate.LinesDeleted, files: run.gate.FilesChanged,
				tampered: !run.gate.Tampering.Empty(), tokens: run.st.Usage.Total()})
		}
	}
	ranked := rank(cands)
	rep := &attemptsReport{Ran: len(runs), Passed: len(ranked)}
	if len(ranked) > 0 {
		rep.Winner, rep.Why = ranked[0].n, whyWon(ranked)
	}
	end := time.Now().UTC()
	for i, run := range runs {
		s := attemptSummary{N: i + 1, Model: ats[i].policy.Model.Edit, Temperature: ats[i].policy.Model.Temperature, Passed: run.fail == nil, Why: run.why,
			Reproduced: run.repro != nil && run.repro.Reproduced, Lines: run.gate.LinesAdded + run.gate.LinesDeleted,
			Files: run.gate.FilesChanged, Tokens: run.st.Usage.Total(), Cost: run.st.Usage.CostUSD}
		rep.Each = append(rep.Each, s)
		rep.Tokens += s.Tokens
		rep.Cost += s.Cost
		outcome := "failed"
		switch {
		case s.N == rep.Winner:
			outcome = "chosen"
		case s.Passed:
			outcome = "passed"
		}
		diff := run.gate.Diff
		if diff == "" {
			diff = run.st.Diff
		}
		ats[i].rep.trace(ctx, app.TraceEvent{Time: end, Kind: app.TraceAttempt, Name: s.Model, Outcome: outcome,
			Duration: run.st.Elapsed, Detail: s.line(), Result: diff})
	}
	tk.prog.Attempts = rep
	tk.log.Info("attempts ranked", "ran", rep.Ran, "passed", rep.Passed, "winner", rep.Winner, "why", rep.Why)
	if rep.Winner == 0 {
		return r.proposeDraft(ctx, tk, tg, remote, ats, runs)
	}
	w, at := runs[rep.Winner-1], ats[rep.Winner-1]
	tk.run = w.st
	tk.prog.Verified, tk.prog.Reproduction = w.verified, w.repro
	if err := tk.rep.save(ctx); err != nil {
		return err
	}
	return r.propose(ctx, tk, at.ws, remote, tg, w.st, nil, w.gate.Tampering)
}

// proposeDraft ends a task none of whose attempts passed: with a draft
// pull request of the first change that may be one, when the policy asks
// for drafts (pull_request.on_failure: draft_pr), else with the first
// attempt's failure. A change the gate passed and the verification failed
// is preferred to one whose loop did not finish.
func (r *Runner) proposeDraft(ctx context.Context, tk *task, tg target, remote workspace.Remote, ats []*attempt, runs []attemptRun) error {
	d := -1
	if tk.policy.Policy.PullRequest.OnFailure == "draft_pr" {
		d = slices.IndexFunc(runs, func(run attemptRun) bool { return run.fail.verify != nil })
		if d < 0 {
			d = slices.IndexFunc(runs, func(run attemptRun) bool { return run.fail.stop != nil && run.st.Diff != "" })
		}
	}
	if d < 0 {
		first := runs[0]
		tk.run = first.st
		tk.prog.Verified = first.verified
		return tk.rep.fail(ctx, first.st, *first.fail)
	}
	run, at := runs[d], ats[d]
	tk.prog.Attempts.Draft = d + 1
	tk.run = run.st
	tk.prog.Verified = run.verified
	if err := tk.rep.save(ctx); err != nil {
		return err
	}
	if run.fail.verify != nil {
		// Gated and verified already: the verification's failure is the
		// draft's (verdict).
		return r.propose(ctx, tk, at.ws, remote, tg, run.st, nil, run.gate.Tampering)
	}
	return r.deliver(ctx, tk, at.ws, remote, tg, run.st, &failure{stop: run.st.Stop})
}

// runErrors joins the attempts' errors: any one sends the task back to
// the queue, to resume every attempt from its saved state.
func runErrors(runs []attemptRun) error {
	var errs []error
	for i, run := range runs {
		if run.err != nil {
			errs = append(errs, fmt.Errorf("attempt %d: %w", i+1, run.err))
		}
	}
	return errors.Join(errs...)
}

// attemptsReport is what became of a task's attempts, kept in its
// progress for the pull request and the reports.
type attemptsReport struct {
	Ran    int              `json:"ran"`
	Passed int              `json:"passed"`
	Winner int              `json:"winner,omitempty"` // the attempt proposed; 0 when none passed
	Why    string           `json:"why,omitempty"`    // why the winner won
	Draft  int              `json:"draft,omitempty"`  // the attempt proposed as a draft when none passed
	Each   []attemptSummary `json:"each"`
	// Tokens and Cost are every attempt's, added up.
	Tokens int64   `json:"tokens"`
	Cost   float64 `json:"cost_usd"`
}

// attemptSummary is one attempt in a line of the pull request's table.
type attemptSummary struct {
	N           int      `json:"n"`
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature,omitempty"` // nil: the endpoint's default
	Passed      bool     `json:"passed"`
	Why         string   `json:"why,omitempty"` // why it did not pass
	Reproduced  bool     `json:"reproduced,omitempty"`
	Lines       int      `json:"lines"`
	Files       int      `json:"files"`
	Tokens      int64    `json:"tokens"`
	Cost        float64  `json:"cost_usd"`
}

// proposed is the attempt whose change is the pull request: the winner,
// or the draft; 0 for none.
func (a *attemptsReport) proposed() int { return cmp.Or(a.Winner, a.Draft) }

// line is the attempt's verdict in a line.
func (s attemptSummary) line() string {
	if !s.Passed {
		return "not proposed: " + s.Why
	}
	proof := ""
	if s.Reproduced {
		proof = ", reproduced"
	}
	files := "files"
	if s.Files == 1 {
		files = "file"
	}
	return fmt.Sprintf("passed%s: %d lines in %d %s, %d tokens", proof, s.Lines, s.Files, files, s.Tokens)
}

// attemptsSection is the attempts as a section of the pull request's body
// or a failure's report, or "" for a task of one attempt.
func attemptsSection(tk *task) string {
	a := tk.prog.Attempts
	if a == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n## Attempts\n\n")
	if a.Winner > 0 {
		fmt.Fprintf(&b, "**%d attempts ran, %d passed;** attempt %d is this change, because %s.\n\n", a.Ran, a.Passed, a.Winner, a.Why)
	} else if a.Draft > 0 {
		fmt.Fprintf(&b, "**%d attempts ran, none passed.** This draft is attempt %d's change.\n\n", a.Ran, a.Draft)
	} else {
		fmt.Fprintf(&b, "**%d attempts ran, none passed.** The report above is attempt 1's.\n\n", a.Ran)
	}
	b.WriteString("| attempt | model | result | tokens | cost |\n| --- | --- | --- | --- | --- |\n")
	for _, s := range a.Each {
		model := app.CodeSpan(s.Model, app.IssueRef{})
		if s.Temperature != nil {
			model += fmt.Sprintf(" at temperature %v", *s.Temperature)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | $%.4f |\n", s.N, model,
			strings.ReplaceAll(app.InertPlain(s.line(), ownIssue(tk)), "|", `\|`), s.Tokens, s.Cost)
	}
	b.WriteString("\nEvery attempt's diff is in the trace.\n")
	return b.String()
}

// candidate is an attempt whose change passed, as the ranking sees it.
type candidate struct {
	n          int // the attempt, from 1
	reproduced bool
	lines      int // changed, added and deleted
	files      int
	tampered   bool // the tampering report flags tests or configuration
	tokens     int64
}

// rankCriteria order candidates, the first that tells two apart deciding:
// a fix proven by a test, then the smaller change, then one that leaves
// tests and configuration alone, then the cheaper run. why says so of a
// winner a over the runner-up b.
var rankCriteria = []struct {
	cmp func(a, b candidate) int
	why func(a, b candidate) string
}{
	{func(a, b candidate) int { return compareBool(b.reproduced, a.reproduced) },
		func(a, b candidate) string {
			return fmt.Sprintf("a test reproduces its fix and none reproduces attempt %d's", b.n)
		}},
	{func(a, b candidate) int { return cmp.Compare(a.lines, b.lines) },
		func(a, b candidate) string {
			return fmt.Sprintf("it changes %d lines against attempt %d's %d", a.lines, b.n, b.lines)
		}},
	{func(a, b candidate) int { return cmp.Compare(a.files, b.files) },
		func(a, b candidate) string {
			return fmt.Sprintf("it changes %d files against attempt %d's %d", a.files, b.n, b.files)
		}},
	{func(a, b candidate) int { return compareBool(a.tampered, b.tampered) },
		func(a, b candidate) string {
			return fmt.Sprintf("it leaves tests and configuration alone, and attempt %d does not", b.n)
		}},
	{func(a, b candidate) int { return cmp.Compare(a.tokens, b.tokens) },
		func(a, b candidate) string {
			return fmt.Sprintf("it took %d tokens against attempt %d's %d", a.tokens, b.n, b.tokens)
		}},
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// rank orders candidates best first by rankCriteria; a tie goes to the
// earlier attempt.
func rank(cs []candidate) []candidate {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b candidate) int {
		for _, c := range rankCriteria {
			if d := c.cmp(a, b); d != 0 {
				return d
			}
		}
		return cmp.Compare(a.n, b.n)
	})
	return out
}

// whyWon says why the first of ranked, rank's result, is ahead of the
// second.
func whyWon(ranked []candidate) string {
	switch len(ranked) {
	case 0:
		return ""
	case 1:
		return "it is the only one that passed"
	}
	a, b := ranked[0], ranked[1]
	for _, c := range rankCriteria {
		if c.cmp(a, b) != 0 {
			return c.why(a, b)
		}
	}
	return fmt.Sprintf("it ties with attempt %d on every count and ran first", b.n)
}
