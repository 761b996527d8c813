package github_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// TestReadingHistory reads a squash-merged pull request back the way
// "eval capture" does, with a token that can only read.
func TestReadingHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const repo = "acme/calc"
	w.addRepo(t, repo, map[string]string{"go.mod": "module calc\n", "calc/add.go": "package calc\n"})
	base, err := w.sim.BranchSHA(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sim.CreateBranch(repo, "fix", base); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.Commit(repo, "fix", "octocat", "Fix add", map[string]string{"calc/add_test.go": "package calc // test\n"}); err != nil {
		t.Fatal(err)
	}
	issue, err := w.sim.AddIssue(repo, "octocat", "Add is wrong", "1+1 is 0.")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "octocat", Title: "Fix add", Body: "Fixes #1.", Head: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	merge, err := w.sim.Merge(repo, pr, githubsim.MergeSquash, "octocat")
	if err != nil {
		t.Fatal(err)
	}

	ctx := t.Context()
	ga := w.newApp(t)
	id, err := ga.RepoInstallation(ctx, repo)
	if err != nil || id != w.inst {
		t.Fatalf("installation of %s: %d, %v; want %d", repo, id, err, w.inst)
	}
	if _, err := ga.RepoInstallation(ctx, "other/repo"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("installation of a repository the App is not on: %v, want not found", err)
	}
	r, err := ga.Reader(id, repo)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.PullRequest(ctx, repo, pr)
	if err != nil || !got.Merged || got.MergeCommit != merge || got.Body != "Fixes #1." || got.Commits != 1 || got.HeadSHA == "" {
		t.Errorf("pull request: %+v, %v", got, err)
	}
	c, err := r.Commit(ctx, repo, merge)
	if err != nil || c.SHA != merge || !slices.Equal(c.Parents, []string{base}) || c.Message != "Fix add (#2)" {
		t.Errorf("merge commit: %+v, %v; want parent %s", c, err, base)
	}
	tree, err := r.Tree(ctx, repo, merge)
	var paths []string
	for _, f := range tree {
		paths = append(paths, f.Path+":"+f.Type)
	}
	if err != nil || !slices.Equal(paths, []string{"calc/add.go:file", "calc/add_test.go:file", "go.mod:file"}) {
		t.Errorf("tree at the merge: %v, %v", paths, err)
	}
	if data, err := r.File(ctx, repo, "calc/add_test.go", merge); err != nil || string(data) != "package calc // test\n" {
		t.Errorf("file at the merge: %q, %v", data, err)
	}
	if _, err := r.File(ctx, repo, "calc/add_test.go", base); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("file before it existed: %v, want not found", err)
	}
	if _, err := r.File(ctx, repo, "calc", merge); err == nil || !strings.Contains(err.Error(), "not a file") {
		t.Errorf("a directory read as a file: %v", err)
	}
	if is, err := r.Issue(ctx, repo, issue); err != nil || is.Body != "1+1 is 0." {
		t.Errorf("issue: %+v, %v", is, err)
	}
	if _, err := r.Commit(ctx, repo, "no-such-ref"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("unknown commit: %v, want not found", err)
	}
	if _, err := r.PullRequest(ctx, repo, 99); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("unknown pull request: %v, want not found", err)
	}
	// The reader's token cannot write.
	if err := r.StatusComment(repo, issue, "t1").Set(ctx, "hello"); err == nil {
		t.Error("a reader posted a comment")
	}
}
