package github_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	githubsim "github.com/agentbot/agentbot/sim/github"
	"github.com/google/go-github/v62/github"
)

func TestPagination(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	n, err := w.s.AddIssue(full, "octocat", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := w.s.AddComment(full, n, "octocat", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	c := w.client(t, nil, nil)
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 2}}
	var bodies []string
	for {
		page, resp, err := c.Issues.ListComments(ctx, owner, name, n, opts)
		if err != nil {
			t.Fatal(err)
		}
		if resp.LastPage != 0 && resp.LastPage != 3 {
			t.Errorf("last page %d, want 3", resp.LastPage)
		}
		for _, cm := range page {
			bodies = append(bodies, cm.GetBody())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if fmt.Sprint(bodies) != "[0 1 2 3 4]" {
		t.Errorf("paged bodies %v", bodies)
	}
}

func TestContentsReadsTheRequestedRef(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := w.client(t, nil, nil)
	before := w.mustBranchSHA(t, "main")
	w.pushBranch(t, full, "widen", ".github/agent.yml", "version: 1\npaths: {allow: ['**']}\n")
	branch, _, err := c.Repositories.GetBranch(ctx, owner, name, "main", 0)
	if err != nil || branch.GetCommit().GetSHA() != before {
		t.Fatalf("branch main: %v %v", branch, err)
	}
	for ref, want := range map[string]string{
		"":      "version: 1\nchecks:\n  - {name: test, run: go test ./...}\n",
		before:  "version: 1\nchecks:\n  - {name: test, run: go test ./...}\n",
		"widen": "version: 1\npaths: {allow: ['**']}\n",
	} {
		f, _, _, err := c.Repositories.GetContents(ctx, owner, name, ".github/agent.yml", &github.RepositoryContentGetOptions{Ref: ref})
		if err != nil {
			t.Fatalf("ref %q: %v", ref, err)
		}
		got, err := f.GetContent()
		if err != nil || got != want || f.GetEncoding() != "base64" {
			t.Errorf("ref %q: %q (%v), want %q", ref, got, err, want)
		}
	}
	_, dir, _, err := c.Repositories.GetContents(ctx, owner, name, "", nil)
	if err != nil || len(dir) != 3 {
		t.Errorf("root listing %d entries, %v", len(dir), err)
	}
	_, _, resp, err := c.Repositories.GetContents(ctx, owner, name, "README.md", &github.RepositoryContentGetOptions{Ref: "no-such-branch"})
	if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing ref: %v, want 404", err)
	}
	// A large file survives GitHub's line-wrapped base64.
	big := make([]byte, 10000)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	w.pushBranch(t, full, "big", "big.txt", string(big))
	f, _, _, err := c.Repositories.GetContents(ctx, owner, name, "big.txt", &github.RepositoryContentGetOptions{Ref: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.GetContent(); got != string(big) {
		t.Errorf("big file differs; raw content %q...", base64.StdEncoding.EncodeToString([]byte(got))[:20])
	}
}

func TestPullRequestsLabelsAndReviewers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := w.client(t, nil, nil)
	if err := w.s.SetPermission(full, "reviewer", "write"); err != nil {
		t.Fatal(err)
	}
	w.pushBranch(t, full, "agent/7-x", "x.go", "package x\n")
	if _, _, err := c.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String("X"), Head: github.String("agent/7-x"), Base: github.String("main")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String("X"), Head: github.String("main"), Base: github.String("main")}); err == nil {
		t.Error("pull request without commits was opened")
	}
	if _, _, err := c.Issues.AddLabelsToIssue(ctx, owner, name, 1, []string{"agent", "agent"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PullRequests.RequestReviewers(ctx, owner, name, 1, github.ReviewersRequest{Reviewers: []string{"reviewer"}}); err != nil {
		t.Fatal(err)
	}
	if _, resp, err := c.PullRequests.RequestReviewers(ctx, owner, name, 1, github.ReviewersRequest{Reviewers: []string{"stranger"}}); resp == nil || resp.StatusCode != 422 {
		t.Errorf("non-collaborator reviewer: %v, want 422", err)
	}
	prs := w.s.PullRequests(full)
	if len(prs) != 1 || fmt.Sprint(prs[0].Labels) != "[agent]" || fmt.Sprint(prs[0].Pull.Reviewers) != "[reviewer]" || prs[0].Author != w.s.App().BotLogin {
		t.Errorf("pull requests %+v", prs)
	}
	if err := w.s.AddFork("mallory/widgets", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "mallory", Title: "M", Head: "main", HeadRepo: "mallory/widgets"}); err != nil {
		t.Fatal(err)
	}
	// A bare branch name is ignored, as GitHub ignores it: both come back.
	for head, want := range map[string]int{"acme:agent/7-x": 1, "agent/7-x": 2, "someone:agent/7-x": 0, "acme:other": 0, "mallory:main": 1, "acme:main": 0} {
		list, _, err := c.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{Head: head})
		if err != nil || len(list) != want {
			t.Errorf("head %s: %d pull requests (%v), want %d", head, len(list), err, want)
		}
	}
	pr, _, err := c.PullRequests.Get(ctx, owner, name, 1)
	if err != nil || pr.GetAdditions() != 1 || pr.GetCommits() != 1 || pr.GetChangedFiles() != 1 {
		t.Errorf("pull request stats %d/%d/%d (%v)", pr.GetAdditions(), pr.GetCommits(), pr.GetChangedFiles(), err)
	}
	// A push to the head branch moves the pull request's head.
	w.pushBranch(t, full, "agent/7-x", "y.go", "package x\n")
	pr, _, err = c.PullRequests.Get(ctx, owner, name, 1)
	if sha, _ := w.s.BranchSHA(full, "agent/7-x"); err != nil || pr.GetHead().GetSHA() != sha {
		t.Errorf("head %s after push, branch at %s (%v)", pr.GetHead().GetSHA(), sha, err)
	}
	// A check run on the head commit lists the pull request.
	run, _, err := c.Checks.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: pr.GetHead().GetSHA()})
	if err != nil || len(run.PullRequests) != 1 || run.PullRequests[0].GetNumber() != 1 {
		t.Errorf("check run %+v (%v)", run, err)
	}
}

func TestForkPullRequest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.s.AddFork("mallory/widgets", map[string]string{"evil.go": "package evil\n"}); err != nil {
		t.Fatal(err)
	}
	n, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "mallory", Title: "evil", Head: "main", HeadRepo: "mallory/widgets"})
	if err != nil {
		t.Fatal(err)
	}
	pr, _, err := w.client(t, nil, nil).PullRequests.Get(context.Background(), owner, name, n)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.GetHead().GetRepo().GetFork() || pr.GetHead().GetRepo().GetFullName() != "mallory/widgets" || pr.GetHead().GetLabel() != "mallory:main" {
		t.Errorf("head %+v", pr.GetHead())
	}
}

// TestConcurrentUse hammers one repository from many clients while a
// reader takes copies; run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	n, err := w.s.AddIssue(full, "octocat", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	sha := w.mustBranchSHA(t, "main")
	const workers, each = 8, 5
	var wg sync.WaitGroup
	for i := range workers {
		c := w.client(t, nil, nil)
		wg.Go(func() {
			for j := range each {
				cm, _, err := c.Issues.CreateComment(ctx, owner, name, n, &github.IssueComment{Body: github.String(fmt.Sprint(i, j))})
				if err != nil {
					t.Error(err)
					return
				}
				if _, _, err := c.Issues.EditComment(ctx, owner, name, cm.GetID(), &github.IssueComment{Body: github.String("edited")}); err != nil {
					t.Error(err)
				}
				if _, _, err := c.Reactions.CreateIssueCommentReaction(ctx, owner, name, cm.GetID(), "rocket"); err != nil {
					t.Error(err)
				}
				if _, _, err := c.Checks.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{Name: "c", HeadSHA: sha}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			for _, c := range w.s.Comments(full, n) {
				_ = len(c.Reactions)
			}
			_ = w.s.CheckRuns(full)
		}
	})
	wg.Wait()
	cs := w.s.Comments(full, n)
	if len(cs) != workers*each {
		t.Fatalf("%d comments, want %d", len(cs), workers*each)
	}
	for _, c := range cs {
		if c.Body != "edited" || c.Edits != 1 || len(c.Reactions) != 1 {
			t.Errorf("comment %+v", c)
		}
	}
	if got := len(w.s.CheckRuns(full)); got != workers*each {
		t.Errorf("%d check runs, want %d", got, workers*each)
	}
}

// The org-wide policy lives in a repository named ".github".
func TestDotGithubRepository(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.s.AddRepo(w.install, owner+"/.github", map[string]string{".github/agent.yml": "version: 1\n"}); err != nil {
		t.Fatal(err)
	}
	f, _, _, err := w.client(t, nil, nil).Repositories.GetContents(context.Background(), owner, ".github", ".github/agent.yml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.GetContent(); got != "version: 1\n" {
		t.Errorf("content %q", got)
	}
	if out, err := git("", "clone", "--quiet", w.cloneURL(owner+"/.github", w.token(t, nil)), t.TempDir()+"/c"); err != nil {
		t.Errorf("clone: %v\n%s", err, out)
	}
}

func TestCheckRunValidation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := w.client(t, nil, nil)
	sha := w.mustBranchSHA(t, "main")
	tests := []struct {
		name string
		opts github.CreateCheckRunOptions
		ok   bool
	}{
		{"in progress", github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: sha, Status: github.String("in_progress")}, true},
		{"unknown commit", github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: strings.Repeat("0", 40)}, false},
		{"completed without conclusion", github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: sha, Status: github.String("completed")}, false},
		{"output without summary", github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: sha, Output: &github.CheckRunOutput{Title: github.String("t")}}, false},
		{"summary over the limit", github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: sha, Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String(strings.Repeat("x", 65536))}}, false},
		{"summary at the limit", github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: sha, Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String(strings.Repeat("é", 65535))}}, true},
		{"conclusion completes", github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: sha, Conclusion: github.String("failure")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.s.CheckRuns(full))
			run, resp, err := c.Checks.CreateCheckRun(ctx, owner, name, tt.opts)
			if tt.ok != (err == nil) {
				t.Fatalf("err %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				if resp.StatusCode != 422 || len(w.s.CheckRuns(full)) != before {
					t.Errorf("refusal %d stored a run", resp.StatusCode)
				}
				return
			}
			if tt.opts.Conclusion != nil && (run.GetStatus() != "completed" || run.CompletedAt == nil) {
				t.Errorf("run %+v", run)
			}
		})
	}
}

func TestRepliesReactionsAndReviews(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := w.client(t, nil, nil)
	srv, got := receiver(t)
	w.pushBranch(t, full, "feature", "f.go", "package f\n")
	n, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "octocat", Title: "Feature", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := w.s.DeliverReviewComment(ctx, srv.URL, full, n, "octocat", "f.go", 1, "/agent rename")
	if err != nil {
		t.Fatal(err)
	}
	<-got

	// The replies route threads under the first comment, as GitHub does.
	first, _, err := c.PullRequests.CreateCommentInReplyTo(ctx, owner, name, n, "On it.", root)
	if err != nil {
		t.Fatal(err)
	}
	req, err := c.NewRequest("POST", fmt.Sprintf("repos/%s/pulls/%d/comments/%d/replies", full, n, first.GetID()), map[string]string{"body": "Done."})
	if err != nil {
		t.Fatal(err)
	}
	var second github.PullRequestComment
	if _, err := c.Do(ctx, req, &second); err != nil {
		t.Fatal(err)
	}
	if second.GetInReplyTo() != root || second.GetPath() != "f.go" {
		t.Errorf("reply %+v", second)
	}

	if _, _, err := c.Reactions.CreateIssueReaction(ctx, owner, name, n, "eyes"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PullRequests.CreateReview(ctx, owner, name, n, &github.PullRequestReviewRequest{Event: github.String("APPROVE")}); err != nil {
		t.Fatal(err)
	}
	is, err := w.s.Issue(full, n)
	if err != nil || len(is.Reactions) != 1 || is.Reactions[0].Content != "eyes" || is.Pull == nil || is.Pull.Head != "feature" {
		t.Errorf("issue %+v (%v)", is, err)
	}
	if rv := w.s.Reviews(full, n); len(rv) != 1 || rv[0].State != "APPROVED" || rv[0].Author != w.s.App().BotLogin {
		t.Errorf("reviews %+v", rv)
	}
	head := w.mustBranchSHA(t, "feature")
	if branches, err := w.s.Branches(full); err != nil || len(branches) != 2 || branches["feature"] != head || branches["main"] == "" {
		t.Errorf("branches %v (%v)", branches, err)
	}
}
