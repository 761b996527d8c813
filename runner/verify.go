package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/tools"
)

// traceVerification traces the final verification v of the loop that
// ended with st through rp; a disagreement with the loop is traced,
// audited and logged as a safety incident.
func traceVerification(ctx context.Context, tk *task, rp *reporter, st *agent.State, v change.Verification) error {
	end := time.Now().UTC()
	for _, c := range v.Checks {
		rp.traceCheck(ctx, end, 0, "verify "+c.Name, c, fmt.Sprintf("fresh sandbox %s: %s", shortID(v.Container), c.Run))
	}
	if !v.Incident() {
		return nil
	}
	detail := incidentDetail(st, v)
	tk.log.Error("safety incident: the checks pass in the agent's sandbox and fail in a fresh one", "detail", detail)
	rp.trace(ctx, app.TraceEvent{Time: end, Kind: app.TraceIncident, Name: "verification", Outcome: "failed", Detail: detail})
	return rp.audit(ctx, app.AuditBlocked, "verification: nothing pushed as a fix; "+detail)
}

// incidentDetail is a verification that contradicts the loop, in a line.
func incidentDetail(st *agent.State, v Verification) string {
	return "the agent's sandbox: " + resultsLine(latestChecks(st.Checks)) + "; a fresh sandbox: " + resultsLine(v.Checks)
}

// fresh is how a review's checks run outside the agent's sandbox: on the
// Sandbox's image, after the policy's setup.
func (r *Runner) fresh(ctx context.Context, tk *task) change.Fresh {
	return change.Fresh{Sandbox: r.cfg.Sandbox, Policy: tk.policy.Policy, Env: tk.env, Setup: r.setupOf(ctx, tk, "", ""), Log: tk.log}
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
	fmt.Fprintf(&b, ":\n\n%s\n", app.CodeBlock(change.Tail(c.Output, outputExcerpt), "", app.IssueRef{}))
	return b.String()
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
