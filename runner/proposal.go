package runner

import (
	"fmt"
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
