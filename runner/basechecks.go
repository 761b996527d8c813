package runner

import (
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/change"
)

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
