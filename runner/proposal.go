package runner

import (
	"fmt"

	"github.com/agentbot/agentbot/app"
)

// proposalBranch is the branch of a fix on a person's pull request, which
// agentbot proposes to their branch in a pull request of its own: one per
// command, so that each is its own proposal (two findings fixed from their
// threads are two pull requests), named for the command's comment, or
// review, which a resumed task names the same.
func proposalBranch(tk *task) string {
	id := tk.CommentID
	if id == 0 && tk.Review != nil {
		id = tk.Review.ID
	}
	return tk.policy.Policy.PullRequest.Branch(tk.Number, fmt.Sprintf("%s-%d", slug(tk.issue.Title), id))
}

// proposalLine says, in the pull request of a fix on a person's pull
// request (one that does not push to its branch, tg), what it proposes
// to; "" for any other.
func proposalLine(tk *task, tg target) string {
	pull := tk.issue.Pull
	if pull == nil || tg.existing {
		return ""
	}
	return fmt.Sprintf("\nProposed to %s, the branch of #%d, which agentbot does not push to: merging this pull request brings the change there.\n",
		app.CodeSpan(pull.Head, ownIssue(tk)), tk.Number)
}
