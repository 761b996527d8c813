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
// that order for one attempt; agentbot run and the worker's fix take
// their change from the same steps, so that a change made on a laptop is
// judged as a worker judges it. The caller adds the rest: the worker its
// admission, the checkout from GitHub, the push and the reports; agentbot
// run a local checkout, printing and --apply; agentbot eval its suites and
// scoring.
//
// It links no GitHub client and no container engine: it speaks to
// sandboxes through runner/sandbox's contract.
package change

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentbot/agentbot/app"
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
	Policy  app.Policy
	Sandbox sandbox.Sandboxes
	// Setup is the policy's setup over Tree, with what the caller allows
	// it: its hosts, its CA bundle, its registries (NewSetup, then the
	// server config's fields).
	Setup Setup
	// Envs, when set, keeps prepared environments for Owner; without it,
	// setup runs in Tree and nothing is kept.
	Envs  *envcache.Cache
	Owner envcache.Owner
	// Task is what the model is asked; Task.Repo names the repository.
	Task prompts.TaskData
	// OnPull says the change is to a pull request's head, whose
	// reproduction default differs (app.Policy.ReproduceFor).
	OnPull bool
	Model  agent.Model
	Fast   agent.Model // nil means Model
	// Observe, when set, sees every step of the loop.
	Observe func(agent.Event)
	// Progress, when set, is told as each step starts, and the setup's
	// line (cached, built or private) once it is known.
	Progress func(step Step, detail string)
	Log      *slog.Logger
}

// Result is what became of a change. Ended is nil for a change the gate,
// the verification and the reproduction all passed: one to propose.
type Result struct {
	// Setup is the setup's line: which environment the change ran on.
	Setup string
	// Base is the checks' run on the base before the loop.
	Base *Verification
	// Loop is the loop's end; nil when it never ran.
	Loop *agent.State
	// Gate is the gate's report; nil when the change never reached it.
	Gate *workspace.GateReport
	// Verified is the final verification; Reproduction the proof that
	// the change fixes something, nil when the policy asks for none.
	Verified     *Verification
	Reproduction *Reproduction
	Ended        *Ended
}

// Diff is the change as the host sees it: the gate's diff, or the loop's
// last when the change never reached the gate.
func (r Result) Diff() string {
	if r.Gate != nil {
		return r.Gate.Diff
	}
	if r.Loop != nil {
		return r.Loop.Diff
	}
	return ""
}

// Usage is what the loop spent.
func (r Result) Usage() llm.Usage {
	if r.Loop == nil {
		return llm.Usage{}
	}
	return r.Loop.Usage
}

// Make makes c: setup, the checks on the base, one loop, the gate, the
// verification in a fresh sandbox and the reproduction. A step that ends
// the change is Result.Ended; an error is a failure of the machinery (the
// sandbox, git, the model's endpoint), with the result as far as it got.
func Make(ctx context.Context, c Change) (Result, error) {
	var r Result
	c.progress(StepSetup, "")
	env, detail, err := Prepare(ctx, c.Setup, c.Envs, c.Owner, c.Task.Repo, c.Tree.Root().FS())
	if sf, ok := errors.AsType[*SetupFailure](err); ok {
		r.Ended = &Ended{Step: StepSetup, State: app.StateFailed, Reason: sf.Error(), Cause: sf}
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("setup: %w", err)
	}
	defer env.Release(c.Log)
	r.Setup = detail
	c.progress(StepSetup, detail)
	fresh := Fresh{Sandbox: c.Sandbox, Policy: c.Policy, Env: env, Setup: c.Setup, Log: c.Log}

	c.progress(StepBaseChecks, "")
	base, err := fresh.CheckBase(ctx, c.Tree, c.ID+"-base")
	if err != nil {
		return r, err
	}
	r.Base = &base
	if cr := CannotRunOn(base, c.Tree); cr != nil {
		r.Ended = &Ended{Step: StepBaseChecks, State: app.StateFailed, Reason: cr.Error(), Cause: cr}
		return r, nil
	}

	c.progress(StepLoop, "")
	mode := c.Policy.ReproduceFor(c.OnPull)
	system, text, err := Prompts(c.Tree.Root().FS(), c.Policy, mode != app.ReproduceOff, c.Task)
	if err != nil {
		return r, err
	}
	r.Loop, err = Loop{Sandbox: c.Sandbox, Policy: c.Policy, Model: c.Model, Fast: c.Fast, Env: env,
		System: system, Task: text, Observe: c.Observe, Logger: c.Log}.Run(ctx, c.ID, c.Tree)
	if err != nil {
		return r, err
	}
	if r.Loop.Status != app.StateSucceeded {
		r.Ended = &Ended{Step: StepLoop, State: r.Loop.Status, Reason: StopText(r.Loop)}
		return r, nil
	}

	c.progress(StepGate, "")
	gate, refused, err := Gate(ctx, c.Tree, c.Policy)
	if err != nil {
		return r, err
	}
	r.Gate = &gate
	if refused != nil {
		r.Ended = &Ended{Step: StepGate, State: app.StateFailed, Reason: app.ErrorMessage(refused), Cause: refused}
		return r, nil
	}

	c.progress(StepVerification, "")
	v, err := fresh.Verify(ctx, c.Tree, gate.Tree, c.ID+"-verify", r.Loop)
	if err != nil {
		return r, fmt.Errorf("verify the checks: %w", err)
	}
	r.Verified = &v
	if !v.Passed {
		r.Ended = &Ended{Step: StepVerification, State: app.StateFailed, Reason: VerifyReason(&v)}
		return r, nil
	}
	if gate.Diff == "" {
		refused := NothingChanged()
		r.Ended = &Ended{Step: StepGate, State: app.StateFailed, Reason: app.ErrorMessage(refused), Cause: refused}
		return r, nil
	}

	if mode == app.ReproduceOff {
		return r, nil
	}
	c.progress(StepReproduction, "")
	if r.Reproduction, err = fresh.Reproduce(ctx, c.Tree, gate, r.Base, mode, c.ID+"-reproduce"); err != nil {
		return r, fmt.Errorf("reproduce: %w", err)
	}
	if refused := r.Reproduction.Refusal(); refused != nil {
		r.Ended = &Ended{Step: StepReproduction, State: app.StateFailed, Reason: app.ErrorMessage(refused), Cause: refused}
	}
	return r, nil
}

func (c Change) progress(s Step, detail string) {
	if c.Progress != nil {
		c.Progress(s, detail)
	}
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
func Gate(ctx context.Context, ws *workspace.Workspace, p app.Policy) (report workspace.GateReport, refused, err error) {
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
