package github_test

import (
	"testing"

	githubsim "github.com/agentbot/agentbot/sim/github"
	"github.com/google/go-github/v62/github"
)

// GitHub takes an inline comment only on a line the pull request's diff
// shows, and refuses the whole review otherwise.
func TestReviewCommentsMustBeOnTheDiff(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.s.CreateBranch(full, "feature", w.mustBranchSHA(t, "main")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.Commit(full, "feature", "octocat", "Add a line", map[string]string{"added.txt": "one\ntwo\n"}); err != nil {
		t.Fatal(err)
	}
	n, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "octocat", Title: "t", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	c := w.client(t, nil, nil)
	review := func(path string, line int) error {
		_, _, err := c.PullRequests.CreateReview(t.Context(), owner, name, n, &github.PullRequestReviewRequest{Event: github.String("COMMENT"),
			Body: github.String("b"), Comments: []*github.DraftReviewComment{{Path: github.String(path), Line: github.Int(line), Body: github.String("c")}}})
		return err
	}
	if err := review("added.txt", 2); err != nil {
		t.Errorf("a comment on the diff: %v", err)
	}
	for _, bad := range []struct {
		path string
		line int
	}{{"added.txt", 3}, {"README.md", 1}} {
		if err := review(bad.path, bad.line); err == nil {
			t.Errorf("a comment on %s:%d, off the diff, was taken", bad.path, bad.line)
		}
	}
	if got := len(w.s.ReviewComments(full, n)); got != 1 {
		t.Errorf("%d review comments; want the one on the diff", got)
	}
}
