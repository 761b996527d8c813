package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/workspace"
)

// checkBase runs the policy's checks once on the base commit, after setup
// and before the model's first step, as the final verification runs them
// (in a sandbox of their own, over a fresh tree of the base, on a view of
// the prepared environment of their own), and keeps their run in the task's progress
// (a resumed task does not run them again): an existing test that fails
// there and passes with the change reproduces it.
//
// A check that fails there for a cause no change to the code removes
// (CannotRunOf) ends the task with a *CannotRun, since the loop would
// spend its whole budget against what only the policy can fix. A check
// that simply fails is the normal case: the loop goes on.
func (r *Runner) checkBase(ctx context.Context, tk *task, ws *workspace.Workspace) error {
	if tk.prog.BaseChecks == nil {
		if err := tk.rep.running(ctx, "base checks", "running the checks on "+shortSHA(ws.Base())+" before the agent starts"); err != nil {
			return err
		}
		// A fresh tree of the base, as the final verification's: what the
		// checks write there (a build's output, a coverage file) never
		// reaches the agent's tree and its diff.
		v, err := r.fresh(ctx, tk).CheckBase(ctx, ws, tk.ID+"-base")
		if err != nil {
			return err
		}
		end := time.Now().UTC()
		for _, c := range v.Checks {
			tk.rep.traceCheck(ctx, end, 0, "base "+c.Name, c, fmt.Sprintf("%s before the agent, sandbox %s: %s", shortSHA(ws.Base()), shortID(v.Container), c.Run))
		}
		tk.rep.phase(ctx, "base checks")
		tk.prog.BaseChecks = &v
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
	}
	if cr := change.CannotRunOn(*tk.prog.BaseChecks, ws); cr != nil {
		tk.log.Info("the checks cannot run on the base", "check", cr.Check, "cause", cr.Cause, "evidence", cr.Evidence)
		return cr
	}
	return nil
}

// cannotRunText says, in a failure report, why the checks cannot run and
// what to add to the policy, with the base run's output.
func cannotRunText(tk *task, cr *CannotRun) string {
	var b strings.Builder
	base := shortSHA(tk.prog.Base)
	fmt.Fprintf(&b, "The checks cannot run in the sandbox as the policy prepares it, so the agent did not start: on `%s`, "+
		"before any change, check **%s** (%s) failed because %s. No change to the code can fix that:\n\n%s\n",
		base, cr.Check, app.CodeSpan(cr.Run, app.IssueRef{}), cr.Cause, app.CodeBlock(cr.Evidence, "", ownIssue(tk)))
	fmt.Fprintf(&b, "**What to add to the policy** (`.github/agent.yml`): %s\n\n", cr.Fix)
	if v := tk.prog.BaseChecks; v != nil && len(v.Checks) > 0 {
		c := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(&b, "<details><summary>%s on %s</summary>\n\n%s\n</details>\n\n", c.Name, base,
			app.CodeBlock(change.Tail(c.Output, outputExcerpt), "", ownIssue(tk)))
	}
	return b.String()
}
