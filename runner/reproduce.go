package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/text"
)

// reproduceMode is the task's reproduction policy: the policy's, or its
// default for a fix of an issue or a follow-up on a pull request; f is
// what the task follows up on.
func reproduceMode(tk *task, f *followUp) policy.Reproduce {
	return tk.policy.Policy.ReproduceFor(followsUp(tk, f))
}

// followsUp says tk's change follows up on a pull request, whose
// reproduction default differs from a fix's. A fix of a review's finding
// (f) has a test to reproduce it, as a fix of an issue is asked to have.
func followsUp(tk *task, f *followUp) bool {
	return tk.issue.Pull != nil && !f.fixesFinding()
}

// traceReproduction records each check run on the base with the tests.
func traceReproduction(ctx context.Context, rep *reporter, rp Reproduction) {
	end := time.Now().UTC()
	for _, c := range rp.Run.Checks {
		rep.traceCheck(ctx, end, 0, "reproduce "+c.Name, c,
			fmt.Sprintf("%s with the new tests only, fresh sandbox %s: %s", text.ShortSHA(rp.Base), text.ShortID(rp.Run.Container), c.Run))
	}
}
