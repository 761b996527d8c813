package github_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	githubsim "github.com/agentbot/agentbot/sim/github"
)

// gitIn runs git in the simulator's bare repository of full.
func gitIn(t *testing.T, w *world, args ...string) string {
	t.Helper()
	dir, err := w.s.GitDir(full)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestMergeMethods(t *testing.T) {
	t.Parallel()
	for _, method := range []string{githubsim.MergeCommit, githubsim.MergeSquash, githubsim.MergeRebase} {
		t.Run(method, func(t *testing.T) {
			w := newWorld(t)
			srv, got := receiver(t)
			main0, _ := w.s.BranchSHA(full, "main")
			if _, err := w.s.Commit(full, "main", "octocat", "Branch off", nil); err != nil {
				t.Fatal(err)
			}
			if err := w.s.CreateBranch(full, "topic", main0); err != nil {
				t.Fatal(err)
			}
			c1, err := w.s.Commit(full, "topic", "octocat", "Add a", map[string]string{"a.txt": "a\n"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.s.Commit(full, "topic", "hubot", "Edit the README", map[string]string{"README.md": "# widgets\n\nMore.\n"}); err != nil {
				t.Fatal(err)
			}
			// main moves on meanwhile, in another file.
			mainTip, err := w.s.Commit(full, "main", "monalisa", "Add b", map[string]string{"b.txt": "b\n"})
			if err != nil {
				t.Fatal(err)
			}
			n, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "octocat", Title: "Topic", Head: "topic"})
			if err != nil {
				t.Fatal(err)
			}
			sha, resp, err := w.s.DeliverMerge(context.Background(), srv.URL, full, n, method, "monalisa")
			if err != nil || resp.StatusCode != 202 {
				t.Fatalf("merge: %v %v", resp, err)
			}
			if head, _ := w.s.BranchSHA(full, "main"); head != sha {
				t.Errorf("main at %s, want the merge commit %s", head, sha)
			}
			for path, want := range map[string]string{"a.txt": "a", "b.txt": "b", "README.md": "# widgets\n\nMore."} {
				if got := gitIn(t, w, "show", sha+":"+path); got != want {
					t.Errorf("%s at the merge: %q, want %q", path, got, want)
				}
			}
			parents := strings.Fields(gitIn(t, w, "log", "-1", "--format=%P", sha))
			count := gitIn(t, w, "rev-list", "--count", mainTip+".."+sha)
			switch method {
			case githubsim.MergeCommit:
				if len(parents) != 2 || parents[0] != mainTip || count != "3" {
					t.Errorf("merge commit parents %v, %s new commits", parents, count)
				}
			case githubsim.MergeSquash:
				if len(parents) != 1 || parents[0] != mainTip || count != "1" {
					t.Errorf("squash parents %v, %s new commits", parents, count)
				}
			case githubsim.MergeRebase:
				if len(parents) != 1 || count != "2" || gitIn(t, w, "log", "-1", "--format=%an %s", sha) != "hubot Edit the README" ||
					gitIn(t, w, "log", "-1", "--format=%s", sha+"^") != "Add a" || gitIn(t, w, "rev-parse", sha+"^") == c1 {
					t.Errorf("rebase parents %v, %s new commits", parents, count)
				}
			}
			d := <-got
			ev := checkDelivery(t, w, d, "pull_request").(*github.PullRequestEvent)
			pr := ev.GetPullRequest()
			if ev.GetAction() != "closed" || !pr.GetMerged() || pr.GetMergeCommitSHA() != sha || pr.GetState() != "closed" ||
				pr.GetMergedBy().GetLogin() != "monalisa" || pr.MergedAt == nil || ev.GetRepo().GetCloneURL() == "" {
				t.Errorf("closed event %+v", pr)
			}
			sameShape(t, fixture(t, "pull_request", "closed.payload.json"), d.body)
			if is, _ := w.s.Issue(full, n); is.State != "closed" || is.Pull.Merged == nil || is.Pull.Merged.Commit != sha {
				t.Errorf("pull request after the merge: %+v", is)
			}
			if _, err := w.s.Merge(full, n, method, "monalisa"); err == nil {
				t.Error("a merged pull request merged again")
			}
		})
	}
}

func TestRevertAndPush(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srv, got := receiver(t)
	before, _ := w.s.BranchSHA(full, "main")
	change, err := w.s.Commit(full, "main", "octocat", "Shout", map[string]string{"README.md": "# WIDGETS\n"})
	if err != nil {
		t.Fatal(err)
	}
	revert, err := w.s.RevertCommit(full, "main", change, "monalisa")
	if err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, w, "show", revert+":README.md"); got != "# widgets" {
		t.Errorf("README after the revert: %q", got)
	}
	if resp, err := w.s.DeliverPush(context.Background(), srv.URL, full, "main", before, revert, "monalisa"); err != nil || resp.StatusCode != 202 {
		t.Fatalf("push: %v %v", resp, err)
	}
	ev := checkDelivery(t, w, <-got, "push").(*github.PushEvent)
	if ev.GetRef() != "refs/heads/main" || ev.GetBefore() != before || ev.GetAfter() != revert || len(ev.Commits) != 2 ||
		ev.Commits[1].GetID() != revert || ev.GetHeadCommit().GetID() != revert || ev.GetRepo().GetDefaultBranch() != "main" ||
		ev.GetInstallation().GetID() != w.install {
		t.Fatalf("push event %+v", ev)
	}
	if msg := ev.Commits[1].GetMessage(); msg != "Revert \"Shout\"\n\nThis reverts commit "+change+"." {
		t.Errorf("revert message %q", msg)
	}
}
