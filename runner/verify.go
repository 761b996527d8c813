package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/text"
)

// traceVerification traces the final verification v of the loop that
// ended with st through rp; a disagreement with the loop is traced,
// audited and logged as a safety incident.
func traceVerification(ctx context.Context, tk *task, rp *reporter, st *agent.State, v change.Verification) error {
	end := time.Now().UTC()
	for _, c := range v.Checks {
		rp.traceCheck(ctx, end, 0, "verify "+c.Name, c, fmt.Sprintf("fresh sandbox %s: %s", text.ShortID(v.Container), c.Run))
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
	return "the agent's sandbox: " + text.Results(text.Latest(st.Checks)) + "; a fresh sandbox: " + text.Results(v.Checks)
}

// fresh is how a review's checks run outside the agent's sandbox: over
// env when one was prepared, else on the Sandbox's image after the
// policy's setup.
func (r *Runner) fresh(ctx context.Context, tk *task, env *Prepared) change.Fresh {
	return change.Fresh{Sandbox: r.cfg.Sandbox, Policy: tk.policy.Policy, Env: env, Setup: r.setupOf(ctx, tk, "", ""), Log: tk.log}
}

// verdict is why a change is not a fix: the loop's failure, or else a
// verification that failed; nil for a verified fix.
func verdict(tk *task, loop *text.Failure) *text.Failure {
	if loop != nil {
		return loop
	}
	if v := tk.prog.Verified; v != nil && !v.Passed {
		return &text.Failure{Verify: v}
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
