// Package change makes one change to a repository, apart from where it
// was asked and where it goes: given a checkout, a policy, the sandboxes,
// the environment cache and a model, it runs the steps
//
//	setup → base checks → loop → gate → verification → reproduction
//
// and returns what each found. Each step is a function of its inputs
// that returns a value, or a typed end (*Ended) that stops the change:
// Prepare (setup), Fresh.CheckBase and CannotRunOn (base checks), Loop
// (the agent), Gate, Fresh.Verify and Fresh.Reproduce. Make runs them in
// that order, for one attempt or for limits.attempts side by side
// (attempts.go); the worker's fix and agentbot run make their change with
// it, so that a change made on a laptop is judged as a worker judges it.
// What only the caller knows comes in as explicit inputs: the loop's
// hooks (its store, approvals, stop, notes, budgets) and Report, which
// hears of every step. The caller adds the rest: the worker its
// admission, the checkout from GitHub, the push and the reports; agentbot
// run a local checkout, printing and --apply; agentbot eval its suites
// and scoring.
//
// It links no GitHub client and no container engine: it speaks to
// sandboxes through runner/sandbox's contract.
package change

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Step names a step of a change, as Ended and the progress say it.
type Step string

// The steps, in the order they run.
const (
	StepSetup        Step = "setup"
	StepBaseChecks   Step = "base checks"
	StepLoop         Step = "loop"
	StepGate         Step = "gate"
	StepVerification Step = "verification"
	StepReproduction Step = "reproduction"
)

// Ended is why a change stopped before it could be proposed: the step
// that ended it, the state the change ends in and why, in a sentence.
// Cause is the step's typed reason: a *SetupFailure, a *CannotRun, the
// gate's or the reproduction's refusal (an *app.Error); nil when the loop
// ended it (the loop's state says how) or the verification failed
// (Result.Verified says how).
type Ended struct {
	Step   Step
	State  app.State
	Reason string
	Cause  error
}

func (e *Ended) Error() string { return fmt.Sprintf("%s: %s", e.Step, e.Reason) }

// Change is one change to make: where, under which policy, with what.
type Change struct {
	// ID names the change's sandboxes and its loop's saved state.
	ID string
	// Tree is the checkout, at the commit the change starts from.
	Tree    *workspace.Workspace
	Policy  policy.Policy
	Sandbox sandbox.Sandboxes
	// Setup is the policy's setup over Tree, with what the caller allows
	// it: its hosts, its CA bundle, its registries (NewSetup, then the
	// server config's fields).
	Setup Setup
	// Envs, when set, keeps prepared environments for Owner; without it,
	// setup runs in Tree and nothing is kept.
	Envs  *envcache.Cache
	Owner envcache.Owner
	// Env, when set, is an environment the caller prepared and releases
	// (an evaluation's seed of $HOME): the change runs on it, and neither
	// Setup nor Envs is used.
	Env *Prepared
	// Task is what the model is asked; Task.Repo names the repository.
	// Plan, when set, is a plan approved before the change, which the
	// task message ends with.
	Task prompts.TaskData
	Plan string
	// OnPull says the change is to a pull request's head, whose
	// reproduction default differs (policy.Policy.ReproduceFor).
	OnPull bool
	// Unproven, when set, says why a change that reproduced proves
	// nothing all the same (a fix of a review's finding that altered the
	// finding's test); its reason replaces the reproduction's.
	Unproven func(tree *workspace.Workspace) string
	Model    agent.Model
	Fast     agent.Model // nil means Model
	// Base, when set, is the checks' run on the base that an earlier run
	// of the same change made: a resumed change does not run it again.
	Base *Verification
	// Checkout makes another checkout of Tree's base, for the attempts of
	// limits.attempts past the first; the caller closes the trees
	// (Result.Attempts). Without it, Make runs one attempt.
	Checkout func(context.Context) (*workspace.Workspace, error)
	// Hooks, when set, are attempt n's loop hooks (n from 1 under
	// limits.attempts, 0 for a change's only attempt), whose loop saves
	// its state under id. The attempts run side by side: hooks that share
	// anything lock it.
	Hooks func(ctx context.Context, n int, id string) (Hooks, error)
	// Draft says the policy wants a change that is no fix proposed as a
	// draft (pull_request.on_failure: draft_pr): a loop that failed with a
	// diff goes on to the gate and the verification, and, when no attempt
	// passed, Make picks the draft.
	Draft bool
	// Report, when set, is told as each step starts and what it found
	// once it ends, one call at a time; an error from it ends Make with
	// that error.
	Report func(context.Context, Event) error
	Log    *slog.Logger
}

// Event is a step of a change as it goes: one that starts (Done false),
// or that ended (Done true) with what it found, in attempt Attempt (from
// 1 under limits.attempts; 0 for a change's only attempt, and for what
// all attempts share).
type Event struct {
	Step    Step
	Done    bool
	Attempt int
	// Of is how many attempts run, on the loop's events of attempt 0: its
	// start, and the end of every attempt's loop and judgement.
	Of int
	// Setup is the setup's line (Prepare's detail) at its end.
	Setup string
	// What the step found, at its end: the checks' run on the base, the
	// attempt's loop, the gate's report, the verification, the
	// reproduction.
	Base         *Verification
	Loop         *agent.State
	Gate         *workspace.GateReport
	Verified     *Verification
	Reproduction *Reproduction
}

// Attempt is one run of the loop and what became of its change.
type Attempt struct {
	// N is the attempt, from 1 under limits.attempts; 0 for a change's
	// only attempt. ID names its sandboxes and its saved state.
	N  int
	ID string
	// Tree is the attempt's checkout, the one to commit when it is
	// proposed; Policy is the change's, with the attempt's model and
	// budgets (AttemptPolicy).
	Tree   *workspace.Workspace
	Policy policy.Policy
	// Loop is the loop's end; nil when it never ran.
	Loop *agent.State
	// Gate is the gate's report; nil when the change never reached it.
	Gate *workspace.GateReport
	// Verified is the final verification; Reproduction the proof that
	// the change fixes something, nil when the policy asks for none.
	Verified     *Verification
	Reproduction *Reproduction
	// Ended is why the attempt's change is not to be proposed as a fix;
	// nil when it is.
	Ended *Ended
}

// Result is what became of a change: its setup and base checks, and the
// attempt it proposes — the winner, or else the draft, or else the first,
// whose Ended says why there is nothing to propose. Ended is nil for a
// change the gate, the verification and the reproduction all passed.
type Result struct {
	// Setup is the setup's line: which environment the change ran on.
	Setup string
	// Base is the checks' run on the base before the loop.
	Base *Verification
	Attempt
	// Attempts are every attempt under limits.attempts, in order; nil for
	// a change of one. Winner is the attempt proposed as a fix and Why
	// why it won (0 when none passed); Draft the one proposed as a draft
	// when none passed (Change.Draft), or 0.
	Attempts []Attempt
	Winner   int
	Why      string
	Draft    int
}

// Diff is the change as the host sees it: the gate's diff, or the loop's
// last when the change never reached the gate.
func (a Attempt) Diff() string {
	if a.Gate != nil {
		return a.Gate.Diff
	}
	if a.Loop != nil {
		return a.Loop.Diff
	}
	return ""
}

// Usage is what the loop spent.
func (a Attempt) Usage() llm.Usage {
	if a.Loop == nil {
		return llm.Usage{}
	}
	return a.Loop.Usage
}

// making is a change being made: its inputs, and what its attempts share.
type making struct {
	Change
	env    *Prepared
	fresh  Fresh
	base   *Verification
	mode   policy.Reproduce
	system string
	text   string
	mu     sync.Mutex // one Report at a time
}

// Make makes c: setup, the checks on the base, the loop — once, or under
// limits.attempts N times side by side, each attempt over a checkout of
// its own —, then for each loop that finished the gate, the verification
// in a fresh sandbox and the reproduction. A step that ends the change is
// Result.Ended; an error is a failure of the machinery (the sandbox, git,
// the model's endpoint, Report), with the result as far as it got.
func Make(ctx context.Context, c Change) (Result, error) {
	m := &making{Change: c}
	var r Result
	r.Tree = c.Tree
	var err error
	if err := m.report(ctx, Event{Step: StepSetup}); err != nil {
		return r, err
	}
	if err := sandbox.ShareTree(c.Tree.Dir()); err != nil {
		return r, fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	if m.env = c.Env; m.env == nil {
		env, detail, err := Prepare(ctx, c.Setup, c.Envs, c.Owner, c.Task.Repo, c.Tree.Root().FS())
		if sf, ok := errors.AsType[*SetupFailure](err); ok {
			r.Ended = &Ended{Step: StepSetup, State: app.StateFailed, Reason: sf.Error(), Cause: sf}
			return r, m.report(ctx, Event{Step: StepSetup, Done: true})
		}
		if err != nil {
			return r, fmt.Errorf("setup: %w", err)
		}
		defer env.Release(c.Log)
		m.env, r.Setup = env, detail
	}
	if err := m.report(ctx, Event{Step: StepSetup, Done: true, Setup: r.Setup}); err != nil {
		return r, err
	}
	m.fresh = Fresh{Sandbox: c.Sandbox, Policy: c.Policy, Env: m.env, Setup: c.Setup, Log: c.Log}

	if m.base = c.Base; m.base == nil {
		if err := m.report(ctx, Event{Step: StepBaseChecks}); err != nil {
			return r, err
		}
		base, err := m.fresh.CheckBase(ctx, c.Tree, c.ID+"-base")
		if err != nil {
			return r, err
		}
		m.base = &base
		if err := m.report(ctx, Event{Step: StepBaseChecks, Done: true, Base: m.base}); err != nil {
			return r, err
		}
	}
	r.Base = m.base
	if cr := CannotRunOn(*m.base, c.Tree); cr != nil {
		r.Ended = &Ended{Step: StepBaseChecks, State: app.StateFailed, Reason: cr.Error(), Cause: cr}
		return r, nil
	}

	m.mode = c.Policy.ReproduceFor(c.OnPull)
	if m.system, m.text, err = Prompts(c.Tree.Root().FS(), c.Policy, m.mode != policy.ReproduceOff, c.Task); err != nil {
		return r, err
	}
	m.text += c.Plan
	n := c.Policy.Limits.Attempts
	if n <= 1 || c.Checkout == nil {
		r.Attempt = Attempt{ID: c.ID, Tree: c.Tree, Policy: AttemptPolicy(c.Policy, 0, 1)}
		if err := m.report(ctx, Event{Step: StepLoop, Of: 1}); err != nil {
			return r, err
		}
		return r, m.attempt(ctx, &r.Attempt)
	}
	return m.bestOf(ctx, r, n)
}

// report tells c.Report about e, one event at a time.
func (m *making) report(ctx context.Context, e Event) error {
	if m.Report == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Report(ctx, e)
}

// attempt runs at's loop and judges the change it ends with. A stop ends
// it with a *Stopped as its Ended's cause.
func (m *making) attempt(ctx context.Context, at *Attempt) error {
	var hooks Hooks
	if m.Hooks != nil {
		var err error
		if hooks, err = m.Hooks(ctx, at.N, at.ID); err != nil {
			return err
		}
	}
	st, err := Loop{Sandbox: m.Sandbox, Policy: at.Policy, Model: m.Model, Fast: m.Fast, Env: m.env,
		System: m.system, Task: m.text, Hooks: hooks, Logger: m.Log}.Run(ctx, at.ID, at.Tree)
	s, stopped := errors.AsType[*Stopped](err)
	if err != nil && !stopped {
		return err
	}
	at.Loop = st
	done := Event{Step: StepLoop, Done: true, Attempt: at.N, Loop: st}
	if at.N == 0 {
		done.Of = 1
	}
	if err := m.report(ctx, done); err != nil {
		return err
	}
	if stopped {
		at.Ended = &Ended{Step: StepLoop, State: app.StateStopped, Reason: s.Error(), Cause: s}
		return nil
	}
	if st.Status != app.StateSucceeded {
		at.Ended = &Ended{Step: StepLoop, State: st.Status, Reason: StopText(st)}
		if !m.Draft || st.Status == app.StateAwaitingApproval || st.Diff == "" || at.N > 0 {
			// Of several attempts, only the one picked as the draft is
			// judged (bestOf).
			return nil
		}
	}
	return m.judge(ctx, at)
}

// judge runs the gate, the verification and the reproduction over the
// change at's loop ended with. The reproduction runs only for a change
// that is otherwise a fix.
func (m *making) judge(ctx context.Context, at *Attempt) error {
	if err := m.report(ctx, Event{Step: StepGate, Attempt: at.N}); err != nil {
		return err
	}
	gate, refused, err := Gate(ctx, at.Tree, m.Policy)
	if err != nil {
		return err
	}
	at.Gate = &gate
	if err := m.report(ctx, Event{Step: StepGate, Done: true, Attempt: at.N, Gate: at.Gate}); err != nil {
		return err
	}
	if refused == nil && gate.Diff == "" {
		// A tree with no change: there is nothing to verify or propose.
		refused = NothingChanged()
	}
	if refused != nil {
		at.Ended = &Ended{Step: StepGate, State: app.StateFailed, Reason: app.ErrorMessage(refused), Cause: refused}
		return nil
	}

	if err := m.report(ctx, Event{Step: StepVerification, Attempt: at.N}); err != nil {
		return err
	}
	v, err := m.fresh.Verify(ctx, at.Tree, gate.Tree, at.ID+"-verify", at.Loop)
	if err != nil {
		return fmt.Errorf("verify the checks: %w", err)
	}
	at.Verified = &v
	if err := m.report(ctx, Event{Step: StepVerification, Done: true, Attempt: at.N, Loop: at.Loop, Verified: at.Verified}); err != nil {
		return err
	}
	switch {
	case at.Ended != nil:
		return nil // a draft's: no fix to prove
	case !v.Passed:
		at.Ended = &Ended{Step: StepVerification, State: app.StateFailed, Reason: VerifyReason(&v)}
		return nil
	case m.mode == policy.ReproduceOff:
		return nil
	}

	if err := m.report(ctx, Event{Step: StepReproduction, Attempt: at.N}); err != nil {
		return err
	}
	if at.Reproduction, err = m.fresh.Reproduce(ctx, at.Tree, gate, m.base, m.mode, at.ID+"-reproduce"); err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	if rp := at.Reproduction; rp.Reproduced && m.Unproven != nil {
		if why := m.Unproven(at.Tree); why != "" {
			rp.Reproduced, rp.Why = false, why
		}
	}
	if err := m.report(ctx, Event{Step: StepReproduction, Done: true, Attempt: at.N, Reproduction: at.Reproduction}); err != nil {
		return err
	}
	if refused := at.Reproduction.Refusal(); refused != nil {
		at.Ended = &Ended{Step: StepReproduction, State: app.StateFailed, Reason: app.ErrorMessage(refused), Cause: refused}
	}
	return nil
}

// CheckBase is the base checks' step: the policy's checks once on ws's
// base, after setup and before the model's first step, as the final
// verification runs them (in a sandbox of their own named after id, over
// a fresh tree of the base, on a view of the prepared environment of their
// own), so that what they write never reaches the agent's tree. An
// existing test that fails there and passes with the change reproduces it.
func (f Fresh) CheckBase(ctx context.Context, ws *workspace.Workspace, id string) (Verification, error) {
	v, err := f.Run(ctx, ws, ws.Base(), id, f.Policy.Checks)
	if err != nil {
		return v, fmt.Errorf("run the checks on the base: %w", err)
	}
	return v, nil
}

// CannotRunOn is why the checks cannot run at all, judged from their run
// on ws's base: a check that failed there for a cause no change to the
// code removes (CannotRunOf) ends the change, since the loop would spend
// its whole budget against what only the policy can fix. A check that
// simply fails is the normal case: nil, and the loop goes on.
func CannotRunOn(base Verification, ws *workspace.Workspace) *CannotRun {
	if base.Passed || len(base.Checks) == 0 {
		return nil
	}
	own := func(p string) bool {
		_, err := ws.Root().Stat(p)
		return err == nil
	}
	return CannotRunOf(base.Checks[len(base.Checks)-1], own)
}

// Gate is the gate's step: the host recomputes the change and checks it
// against the policy again. refused is the policy's refusal, an
// *app.Error; err is any other failure. An empty change passes the gate
// and is refused after the verification (NothingChanged), as the worker
// refuses it when it commits.
func Gate(ctx context.Context, ws *workspace.Workspace, p policy.Policy) (report workspace.GateReport, refused, err error) {
	report, err = ws.Gate(ctx, p)
	if _, user := errors.AsType[*app.Error](err); user {
		return report, err, nil
	}
	if err != nil {
		return report, nil, err
	}
	return report, nil, nil
}

// NothingChanged refuses a change that is empty.
func NothingChanged() error {
	return app.Errorf(app.EPolicy, "The checks pass but the agent changed nothing, so there is nothing to propose.")
}

// VerifyReason is a failed verification in one line.
func VerifyReason(v *Verification) string {
	last := "no check ran"
	if n := len(v.Checks); n > 0 {
		last = fmt.Sprintf("%s exited %d", v.Checks[n-1].Name, v.Checks[n-1].ExitCode)
	}
	if v.Incident() {
		return "the checks passed in the agent's sandbox but fail in a fresh one (" + last + ")"
	}
	return "the checks fail in a fresh sandbox (" + last + ")"
}

// StopText is why the loop ended, as a sentence's end.
func StopText(st *agent.State) string {
	switch {
	case st.Stop != nil && st.Stop.Detail != "":
		return fmt.Sprintf("%s (%s)", st.Stop.Reason, st.Stop.Detail)
	case st.Stop != nil:
		return string(st.Stop.Reason)
	case st.Pending != nil:
		return fmt.Sprintf("%s %s needs a human's approval, which only a worker can ask for", st.Pending.Name, st.Pending.Arguments)
	}
	return string(st.Status)
}
