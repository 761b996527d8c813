package runner_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// parentOf is the parent of commit sha in the world's repository.
func (w *world) parentOf(t *testing.T, sha string) string {
	t.Helper()
	dir, err := w.sim.GitDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "--git-dir", dir, "rev-parse", sha+"^").CombinedOutput()
	if err != nil {
		t.Fatalf("git rev-parse %s^: %v\n%s", sha, err, out)
	}
	return strings.TrimSpace(string(out))
}

// pullsFrom are the world's pull requests whose head is branch.
func (w *world) pullsFrom(branch string) []githubsim.Issue {
	var out []githubsim.Issue
	for _, p := range w.sim.PullRequests(repo) {
		if p.Pull.Head == branch {
			out = append(out, p)
		}
	}
	return out
}

// "/agent fix" on a person's pull request never moves their branch, even
// one named under the agent's branch prefix: the change goes to a new
// branch from its head, in a pull request against it; each command is its
// own proposal.
func TestFixOnAPersonsPullRequestOpensOneAgainstItsBranch(t *testing.T) {
	t.Parallel()
	script := demoScript(t)
	script.Steps = append(script.Steps, script.Steps...) // two fixes
	w := newWorld(t, quickPolicy, script)
	if err := w.sim.CreateBranch(repo, "agent/sum-notes", branchSHA(t, w, "main")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.Commit(repo, "agent/sum-notes", "grace", "Note Sum", map[string]string{"NOTES.md": "Sum adds every sample.\n"}); err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "grace", Title: "Note Sum", Head: "agent/sum-notes"})
	if err != nil {
		t.Fatal(err)
	}
	head := branchSHA(t, w, "agent/sum-notes")
	var branches []string
	for _, id := range []string{"T1", "T2"} {
		tk := w.commandOn(t, id, pr, "ada", app.VerbFix, func(tk *app.Task) { tk.IsPR = true })
		if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
			t.Fatal(err)
		}
		if rec := w.store.record(id); rec.State != app.StateSucceeded {
			t.Fatalf("fix %s ended %s (%s)", id, rec.State, rec.Step)
		}
		if got := branchSHA(t, w, "agent/sum-notes"); got != head {
			t.Fatalf("grace's branch moved from %s to %s", head, got)
		}
		branch := fmt.Sprintf("agent/%d-note-sum-%d", pr, tk.CommentID)
		opened := w.pullsFrom(branch)
		if len(opened) != 1 || opened[0].Pull.Base != "agent/sum-notes" || opened[0].Number == pr {
			t.Fatalf("pull requests from %s: %+v; want one new one against agent/sum-notes", branch, opened)
		}
		if want := fmt.Sprintf("Proposed to `agent/sum-notes`, the branch of #%d, which agentbot does not push to", pr); !strings.Contains(opened[0].Body, want) {
			t.Errorf("the pull request does not say %q:\n%s", want, opened[0].Body)
		}
		if p := w.parentOf(t, branchSHA(t, w, branch)); p != head {
			t.Errorf("the fix's commit is on %s; want grace's head %s", p, head)
		}
		if !strings.Contains(w.fileOn(t, branch, "stats.go"), "i := 0") {
			t.Errorf("%s lacks the fix", branch)
		}
		branches = append(branches, branch)
	}
	if branches[0] == branches[1] || len(w.sim.PullRequests(repo)) != 3 {
		t.Errorf("two fixes made %q and pull requests %+v; want two branches, two new pull requests", branches, w.sim.PullRequests(repo))
	}
}
