package runner

import (
	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/workspace"
)

// savedTampering is the tampering report of the task's saved diff, for a
// task that resumes after its push and so does not gate again. A diff that
// does not parse yields an empty report: the gate parsed the same diff
// before the push.
func savedTampering(tk *task, st *agent.State) app.Tampering {
	t, err := workspace.TamperingOf(st.Diff, tk.policy.Policy.Checks)
	if err != nil {
		tk.log.Warn("tampering report of the saved diff", "err", err)
	}
	return t
}
