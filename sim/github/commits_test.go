package github_test

import (
	"context"
	"net/http"
	"path"
	"testing"

	githubsim "github.com/agentbot/agentbot/sim/github"
)

// TestGetCommitConforms drives repos/get-commit through go-github and
// checks its answers against GitHub's OpenAPI description: a merge
// commit's two parents, a plain commit's one, and an unknown ref refused
// with 422 as GitHub does.
func TestGetCommitConforms(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newValidator(t)
	c := w.client(t, v, nil)
	ctx := context.Background()
	base := w.mustBranchSHA(t, "main")
	if err := w.s.CreateBranch(full, "fix", base); err != nil {
		t.Fatal(err)
	}
	fix, err := w.s.Commit(full, "fix", "octocat", "Fix widgets\n\nThey crashed.", map[string]string{"fix.go": "package fix\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.Commit(full, "main", "octocat", "Unrelated", map[string]string{"docs.md": "docs\n"}); err != nil {
		t.Fatal(err)
	}
	pr, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "octocat", Title: "Fix widgets", Head: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	merge, err := w.s.Merge(full, pr, githubsim.MergeCommit, "octocat")
	if err != nil {
		t.Fatal(err)
	}

	got, resp, err := c.Repositories.GetCommit(ctx, owner, name, merge, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("get merge commit: %v", err)
	}
	if got.GetSHA() != merge || len(got.Parents) != 2 || got.Parents[1].GetSHA() != fix || got.GetCommit().GetTree().GetSHA() == "" {
		t.Errorf("merge commit %+v: want %s with parents [main before, %s]", got, merge, fix)
	}
	got, _, err = c.Repositories.GetCommit(ctx, owner, name, "fix", nil)
	if err != nil || got.GetSHA() != fix || got.GetCommit().GetMessage() != "Fix widgets\n\nThey crashed." ||
		len(got.Parents) != 1 || got.Parents[0].GetSHA() != base {
		t.Errorf("commit by branch name: %+v, %v", got, err)
	}
	if _, resp, err := c.Repositories.GetCommit(ctx, owner, name, "0123456789abcdef0123456789abcdef01234567", nil); err == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("unknown commit: %v, want 422", err)
	}
	if _, resp, err := w.client(t, nil, nil).Repositories.GetCommit(ctx, owner, "nope", "main", nil); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown repository: %v, want 404", err)
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	for _, f := range v.failures {
		t.Error(f)
	}
	if len(v.seen["repos/get-commit"]) != 3 {
		t.Errorf("repos/get-commit answers seen: %v", v.seen)
	}
	// The diff GitHub adds to a commit is left out on purpose.
	for _, f := range v.missing["repos/get-commit"] {
		if b := path.Base(f); b != "files" && b != "stats" {
			t.Errorf("repos/get-commit: field %s of GitHub's example answer is missing", f)
		}
	}
}
