package github_test

import (
	"testing"

	"github.com/agentbot/agentbot/app"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

func TestIssueReadsIssuesAndPullRequests(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{"main.go": "package main\n"})
	w.push(t, "acme/a", "feature", map[string]string{"main.go": "package main // changed\n"})
	issue, err := w.sim.AddIssue("acme/a", "ada", "Sum is off by one", "Sum(1, 2) returns 4.")
	if err != nil {
		t.Fatal(err)
	}
	pull, err := w.sim.AddPullRequest("acme/a", githubsim.PullOptions{Author: "bob", Title: "Feature", Body: "adds it", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	head, err := w.sim.BranchSHA("acme/a", "feature")
	if err != nil {
		t.Fatal(err)
	}
	inst := w.installation(t, "acme/a")
	ctx := t.Context()

	got, err := inst.Issue(ctx, "acme/a", issue)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Sum is off by one" || got.Body != "Sum(1, 2) returns 4." || got.Author != "ada" || got.Pull != nil {
		t.Errorf("issue = %+v", got)
	}
	got, err = inst.Issue(ctx, "acme/a", pull)
	if err != nil {
		t.Fatal(err)
	}
	base, err := w.sim.BranchSHA("acme/a", "main")
	if err != nil {
		t.Fatal(err)
	}
	want := app.PullInfo{Head: "feature", HeadRepo: "acme/a", HeadSHA: head, Base: "main", BaseSHA: base}
	if got.Title != "Feature" || got.Pull == nil || *got.Pull != want {
		t.Errorf("pull request = %+v, pull %+v; want %+v", got, got.Pull, want)
	}
	if _, err := inst.Issue(ctx, "acme/a", 999); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("missing issue: %v; want a not_found error", err)
	}
}
