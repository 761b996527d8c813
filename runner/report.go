package runner

import (
	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
)

// What the runner says on GitHub is rendered by runner/text from the
// views below: the task's request, and the report of its change.

// request is tk's request as its texts quote it.
func (tk *task) request() text.Request { return text.Request{Task: tk.Task, Issue: tk.issue} }

// ownIssue is the one issue or pull request tk's text may close.
func ownIssue(tk *task) app.IssueRef { return tk.request().Own() }

// report is what the task's change came to, with st the loop's end (nil
// when no loop ran), as its texts show it.
func (rp *reporter) report(st *agent.State) text.Report {
	tk, acct := rp.tk, rp.acct
	if st == nil {
		st = &agent.State{TaskID: tk.ID, Status: app.StateFailed}
	}
	r := text.Report{
		Request: tk.request(), Loop: st, Base: tk.prog.Base, Pushed: tk.prog.Pushed, PR: tk.prog.PR,
		BaseChecks: tk.prog.BaseChecks, Verified: tk.prog.Verified, Reproduction: tk.prog.Reproduction,
		Attempts: tk.prog.Attempts,
		Egress:   text.Egress{Refused: acct.refused, More: acct.refusedMore},
	}
	if p := tk.prog.Plan; p != nil {
		v := planView(tk, p)
		r.Plan = &v
	}
	if acct.follow != nil {
		for _, f := range acct.follow.ci {
			c := text.CIFailure{Check: f.check.Name, Decision: f.answer.Decision, BaseRun: f.answer.BaseRun}
			if f.earlier(tk) {
				c.By = f.answer.Task
			}
			r.CI = append(r.CI, c)
		}
	}
	return r
}
