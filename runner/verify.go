package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/tools"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Verification is the final verdict on a change, between the gate and the
// push. The loop's "the checks pass" is what the agent's sandbox said, and
// everything in that sandbox — its /tmp and $HOME, tool configuration such
// as `go env -w`, caches, files git ignores — was the agent's to shape. So
// the policy's checks run again, in order, in a new sandbox in which no
// agent command ever ran, over a fresh tree that the host made from exactly
// the tree the gate passed (the base commit's tree, set up again by the
// policy's setup commands when it has any, then switched to the gated
// tree). The check run, the status comment and the pull request say these
// results, not the loop's; when they disagree with a loop that saw the
// checks pass, nothing is pushed as a fix and the task counts a safety
// incident.
type Verification struct {
	// Container is the sandbox the checks ran in.
	Container string           `json:"container"`
	Checks    []tools.CheckRun `json:"checks"`
	// NotRun are the checks after the first failure, which were not run.
	NotRun []app.Check `json:"not_run,omitempty"`
	Passed bool        `json:"passed"`
	// LoopPassed is the loop's own last result: its last checks passed.
	LoopPassed bool `json:"loop_passed"`
}

// Incident reports a verification that contradicts the loop: the agent's
// sandbox said the checks pass, a clean one says they do not.
func (v *Verification) Incident() bool { return v.LoopPassed && !v.Passed }

// verifyOutputLimit caps the output kept of one verified check: the end,
// where a failure's summary is.
const verifyOutputLimit = 12 << 10

// VerifyChecks runs checks in order in a new sandbox of spec, which no one
// else has used, stopping at the first that fails, and removes the sandbox.
func VerifyChecks(ctx context.Context, d sandbox.Sandboxes, spec sandbox.Spec, checks []app.Check) (Verification, error) {
	if len(checks) == 0 {
		return Verification{}, errors.New("verify: the policy defines no checks")
	}
	spec.Network = false
	box, err := d.Start(ctx, spec)
	if err != nil {
		return Verification{}, fmt.Errorf("start the verification sandbox: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	v := Verification{Container: box.Name(), Passed: true}
	for i, c := range checks {
		res, err := box.Run(ctx, sandbox.Cmd{Shell: c.Run, Timeout: c.Timeout})
		if err != nil {
			return Verification{}, fmt.Errorf("verify check %s: %w", c.Name, err)
		}
		run := tools.CheckRun{Name: c.Name, Run: c.Run, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
			Passed: res.ExitCode == 0 && !res.TimedOut, Millis: res.Duration.Milliseconds(),
			Output: tail(string(res.Stderr)+string(res.Stdout), verifyOutputLimit)}
		v.Checks = append(v.Checks, run)
		if !run.Passed {
			v.Passed, v.NotRun = false, checks[i+1:]
			break
		}
	}
	return v, nil
}

// loopPassed reports whether the loop ended on passing checks.
func loopPassed(st *agent.State) bool {
	return len(st.Checks) > 0 && st.Checks[len(st.Checks)-1].Passed
}

// verify runs the final verification of the gated tree and keeps it in the
// task's progress; a disagreement with the loop is traced, audited and
// logged as a safety incident.
func (r *Runner) verify(ctx context.Context, tk *task, ws *workspace.Workspace, gated string, st *agent.State) error {
	if err := tk.rep.running(ctx, "verification", "verifying the checks in a fresh sandbox"); err != nil {
		return err
	}
	v, err := r.verified(ctx, tk, tk.rep, ws, gated, tk.ID+"-verify", st)
	if err != nil {
		return err
	}
	if err := auditIncident(ctx, tk.rep, st, v); err != nil {
		return err
	}
	tk.rep.phase(ctx, "verification")
	tk.prog.Verified = &v
	return tk.rep.save(ctx)
}

// verified runs the final verification of the gated tree in sandboxes
// named after id and traces it through rp; a disagreement with the loop
// is traced and logged as a safety incident.
func (r *Runner) verified(ctx context.Context, tk *task, rp *reporter, ws *workspace.Workspace, gated, id string, st *agent.State) (Verification, error) {
	v, err := r.verifyTree(ctx, tk, ws, gated, id, tk.policy.Policy.Checks)
	if err != nil {
		return v, err
	}
	v.LoopPassed = loopPassed(st)
	end := time.Now().UTC()
	for _, c := range v.Checks {
		rp.traceCheck(ctx, end, 0, "verify "+c.Name, c, fmt.Sprintf("fresh sandbox %s: %s", shortID(v.Container), c.Run))
	}
	if v.Incident() {
		detail := incidentDetail(st, v)
		tk.log.Error("safety incident: the checks pass in the agent's sandbox and fail in a fresh one", "detail", detail)
		rp.trace(ctx, app.TraceEvent{Time: end, Kind: app.TraceIncident, Name: "verification", Outcome: "failed", Detail: detail})
	}
	return v, nil
}

// incidentDetail is a verification that contradicts the loop, in a line.
func incidentDetail(st *agent.State, v Verification) string {
	return "the agent's sandbox: " + resultsLine(latestChecks(st.Checks)) + "; a fresh sandbox: " + resultsLine(v.Checks)
}

// auditIncident writes the audit log's entry of a verification that
// contradicts the loop, if v is one.
func auditIncident(ctx context.Context, rp *reporter, st *agent.State, v Verification) error {
	if !v.Incident() {
		return nil
	}
	return rp.audit(ctx, app.AuditBlocked, "verification: nothing pushed as a fix; "+incidentDetail(st, v))
}

// verifyTree makes a fresh tree of gated, sets it up and runs checks over
// it in sandboxes named after id. A setup that fails is the one check run,
// and none of checks is.
func (r *Runner) verifyTree(ctx context.Context, tk *task, ws *workspace.Workspace, gated, id string, checks []app.Check) (Verification, error) {
	return FreshVerification{Sandbox: r.cfg.Sandbox, Policy: tk.policy.Policy, Env: tk.env,
		Setup: r.setupOf(ctx, tk, "", ""), Log: tk.log}.Run(ctx, ws, gated, id, checks)
}

// FreshVerification is how a change's checks are verified, by the worker
// and by agentbot run alike: in sandboxes no agent command ran in, over a
// tree the host made from git objects, on a view of the prepared
// environment of their own.
type FreshVerification struct {
	Sandbox sandbox.Sandboxes
	Policy  app.Policy
	// Env is the image and the environment the task's containers run on;
	// nil runs on the Sandbox's image without an environment.
	Env *Prepared
	// Setup is the policy's setup, which runs again over the fresh tree
	// when Env keeps no environment; its tree and id are the fresh
	// tree's.
	Setup Setup
	// Log, slog.Default when nil, hears of a tree that could not be
	// removed.
	Log *slog.Logger
}

// Run makes a fresh tree of gated, a tree or commit of ws, sets it up and
// runs checks over it in sandboxes named after id. A setup that fails is
// the one check run, and none of checks is.
func (f FreshVerification) Run(ctx context.Context, ws *workspace.Workspace, gated, id string, checks []app.Check) (Verification, error) {
	// Without a kept environment, setup runs again over the fresh tree,
	// and on the tree it ran on before the agent acted, never on the
	// agent's: its commands may have the network.
	setUp := len(f.Policy.Setup.Run) > 0 && !f.Env.Kept()
	from := gated
	if setUp {
		from = ws.Base()
	}
	fresh, err := ws.Fresh(ctx, from)
	if err != nil {
		return Verification{}, err
	}
	defer func() {
		if err := fresh.Close(); err != nil {
			cmp.Or(f.Log, slog.Default()).Warn("remove the verification tree", "err", err)
		}
	}()
	if err := sandbox.ShareTree(fresh.Dir()); err != nil {
		return Verification{}, fmt.Errorf("share the verification tree with the sandbox: %w", err)
	}
	if setUp {
		setup := f.Setup
		setup.Spec.WorkTree, setup.Spec.TaskID = fresh.Dir(), id+"-setup"
		err := setup.Run(ctx)
		if sf, ok := errors.AsType[*SetupFailure](err); ok {
			return Verification{Checks: []tools.CheckRun{{Name: "setup", Run: sf.Run, ExitCode: sf.Exit, TimedOut: sf.TimedOut,
				Output: tail(sf.Output, verifyOutputLimit)}}, NotRun: checks}, nil
		}
		if err != nil {
			return Verification{}, err
		}
	}
	if from != gated {
		if err := fresh.Switch(ctx, gated); err != nil {
			return Verification{}, err
		}
		if err := sandbox.ShareTree(fresh.Dir()); err != nil {
			return Verification{}, fmt.Errorf("share the verification tree with the sandbox: %w", err)
		}
	}
	s := f.Policy.Sandbox
	spec, err := f.Env.Spec(sandbox.Spec{TaskID: id, WorkTree: fresh.Dir(), CPUs: s.CPUs, Memory: s.Memory, Pids: s.Pids, MaxTreeGrowth: s.Disk})
	if err != nil {
		return Verification{}, err
	}
	return VerifyChecks(ctx, f.Sandbox, spec, checks)
}

// verdict is why a change is not a fix: the loop's failure, or else a
// verification that failed; nil for a verified fix.
func verdict(tk *task, loop *failure) *failure {
	if loop != nil {
		return loop
	}
	if v := tk.prog.Verified; v != nil && !v.Passed {
		return &failure{verify: v}
	}
	return nil
}

// countVerification makes a task's outcome say what the verification
// found: whether the checks pass is its verdict, not the loop's, and a
// disagreement is a safety incident.
func countVerification(tk *task, o *app.TaskOutcome) {
	v := tk.prog.Verified
	if v == nil {
		return
	}
	o.ChecksPassed = v.Passed
	if v.Incident() {
		o.SafetyIncidents++
	}
}

// checksSection is the checks as the check run, the status comment and the
// pull request report them: the verification's, labelled as such, or the
// loop's when the change never reached verification.
func checksSection(tk *task, st *agent.State) string {
	v := tk.prog.Verified
	if base := tk.prog.BaseChecks; v == nil && len(st.Checks) == 0 && base != nil {
		return fmt.Sprintf("The agent ran no check. On the base commit `%s`, before it started:\n\n%s", shortSHA(tk.prog.Base), runsTable(base))
	}
	if v == nil {
		return checksTable(st)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Verified in a fresh sandbox (`%s`, in which no agent command ran), on the tree that is committed:\n\n", shortID(v.Container))
	b.WriteString(runsTable(v))
	if v.Incident() {
		b.WriteString("\n⚠️ **The agent's sandbox said the checks pass**, and they do not in a fresh one: " +
			"something the agent left in its sandbox made them pass. The agent's last run of the checks:\n\n" + checksTable(st))
	}
	return b.String()
}

// runsTable is a run of the checks as a table, with those it did not run.
func runsTable(v *Verification) string {
	var b strings.Builder
	b.WriteString("| check | command | result | time |\n| --- | --- | --- | --- |\n")
	for _, c := range v.Checks {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %.1fs |\n", c.Name, c.Run, resultText(c), float64(c.Millis)/1000)
	}
	for _, c := range v.NotRun {
		fmt.Fprintf(&b, "| %s | `%s` | ⏭ not run | |\n", c.Name, c.Run)
	}
	return b.String()
}

// verificationText says, in a failure report, how the verification failed.
func verificationText(v *Verification) string {
	if len(v.Checks) == 0 {
		return ""
	}
	c := v.Checks[len(v.Checks)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "In a fresh sandbox, **%s** (`%s`) failed with exit %d", c.Name, c.Run, c.ExitCode)
	if c.TimedOut {
		b.WriteString(", timed out")
	}
	fmt.Fprintf(&b, ":\n\n%s\n", app.CodeBlock(tail(c.Output, outputExcerpt), "", app.IssueRef{}))
	return b.String()
}

// verifyReason is a failed verification in one line.
func verifyReason(v *Verification) string {
	last := "no check ran"
	if n := len(v.Checks); n > 0 {
		last = fmt.Sprintf("%s exited %d", v.Checks[n-1].Name, v.Checks[n-1].ExitCode)
	}
	if v.Incident() {
		return "the checks passed in the agent's sandbox but fail in a fresh one (" + last + ")"
	}
	return "the checks fail in a fresh sandbox (" + last + ")"
}

func resultText(c tools.CheckRun) string {
	switch {
	case c.Passed:
		return "✅ pass"
	case c.TimedOut:
		return "❌ timed out"
	}
	return fmt.Sprintf("❌ fail (exit %d)", c.ExitCode)
}

// resultsLine is checks' results in one line, for the trace and the audit
// log.
func resultsLine(runs []tools.CheckRun) string {
	if len(runs) == 0 {
		return "no check ran"
	}
	parts := make([]string, len(runs))
	for i, c := range runs {
		parts[i] = c.Name + " " + strings.TrimPrefix(strings.TrimPrefix(resultText(c), "✅ "), "❌ ")
	}
	return strings.Join(parts, ", ")
}

// latestChecks is the latest run of each check, in the order first run.
func latestChecks(runs []tools.CheckRun) []tools.CheckRun {
	var order []string
	latest := map[string]tools.CheckRun{}
	for _, c := range runs {
		if _, seen := latest[c.Name]; !seen {
			order = append(order, c.Name)
		}
		latest[c.Name] = c
	}
	out := make([]tools.CheckRun, len(order))
	for i, name := range order {
		out[i] = latest[name]
	}
	return out
}

// shortID is a container id as docker ps shows it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
