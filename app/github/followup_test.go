package github_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

func TestCIChecksReadWhyAnotherAppsCheckFailed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const repo = "acme/widgets"
	w.addRepo(t, repo, map[string]string{"README.md": "# widgets\n"})
	inst := w.installation(t, repo)
	ctx := t.Context()
	sha, err := w.sim.BranchSHA(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	// agentbot's own failed check run is no CI failure.
	if err := inst.CheckRun(repo, sha, "task-1", 0).Complete(ctx, app.ConclusionFailure, app.CheckOutput{Title: "No pull request", Summary: "x"}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for n := range 5000 {
		fmt.Fprintf(&log, "2026-12-01T10:00:00Z step %d ok\n", n)
	}
	log.WriteString("--- FAIL: TestWidget (0.00s)\n    widget_test.go:9: got 1, want 2\n")
	test, err := w.sim.AddCIRun(repo, githubsim.CIRunOptions{Ref: "main", Name: "test", Conclusion: "failure", Actions: true,
		Title: "1 failing test", Summary: "Process completed with exit code 1.", Log: log.String(),
		Annotations: []githubsim.Annotation{{Path: "widget_test.go", StartLine: 9, Message: "got 1, want 2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.AddCIRun(repo, githubsim.CIRunOptions{Ref: "main", Name: "lint", Conclusion: "success"}); err != nil {
		t.Fatal(err)
	}

	checks, err := inst.CIChecks(ctx, repo, sha, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 {
		t.Fatalf("checks %+v; want test and lint, not agentbot's", checks)
	}
	var got app.CICheck
	var lintApp int64
	for _, c := range checks {
		if c.Name == "test" {
			got = c
			continue
		}
		lintApp = c.AppID
		if c.Log != "" || len(c.Annotations) != 0 {
			t.Errorf("the passing check %s was read further: %+v", c.Name, c)
		}
	}
	if got.ID != test.RunID || got.AppSlug != "github-actions" || got.Conclusion != "failure" || got.Title != "1 failing test" || got.HTMLURL == "" {
		t.Errorf("test check %+v", got)
	}
	if len(got.Annotations) != 1 || got.Annotations[0].Path != "widget_test.go" || got.Annotations[0].StartLine != 9 {
		t.Errorf("annotations %+v", got.Annotations)
	}
	if !got.LogCut || len(got.Log) > app.CILogTailBytes || !strings.HasSuffix(got.Log, "got 1, want 2\n") || !strings.HasPrefix(got.Log, "2026-") {
		t.Errorf("log tail (%d bytes, cut %v) starts %q; want the last whole lines within %d bytes",
			len(got.Log), got.LogCut, got.Log[:min(40, len(got.Log))], app.CILogTailBytes)
	}
	// The latest run of a check comes first, even within one second.
	rerun, err := w.sim.AddCIRun(repo, githubsim.CIRunOptions{Ref: "main", Name: "lint", Conclusion: "failure"})
	if err != nil {
		t.Fatal(err)
	}
	lint, err := inst.CIChecks(ctx, repo, sha, "lint", lintApp)
	if err != nil || len(lint) != 2 || lint[0].ID != rerun.RunID {
		t.Errorf("lint runs %+v, %v; want the failed rerun first", lint, err)
	}
	// Narrowed to one check of one App, as on the base commit.
	only, err := inst.CIChecks(ctx, repo, sha, "test", got.AppID)
	if err != nil || len(only) != 1 || only[0].ID != test.RunID {
		t.Errorf("the test check alone: %+v, %v", only, err)
	}
}

func TestReviewCommentsAreTheReviewsOwn(t *testing.T) {
	t.Parallel()
	w, repo, pr := pullWorld(t)
	sink := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer sink.Close()
	ctx := context.Background()
	if _, _, err := w.sim.DeliverReviewComment(ctx, sink.URL, repo, pr, "octocat", "fix.go", 1, "Not part of the review."); err != nil {
		t.Fatal(err)
	}
	id, ids, resp, err := w.sim.DeliverReviewWithComments(ctx, sink.URL, repo, pr, "octocat", "CHANGES_REQUESTED", "",
		[]githubsim.InlineComment{{Path: "fix.go", Line: 1, Body: "Name it."}, {Path: "README.md", Line: 1, Body: "Say why."}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	inst := w.installation(t, repo)
	if err := inst.ReplyInThread(ctx, repo, pr, ids[0], "task-1", "Done."); err != nil {
		t.Fatal(err)
	}
	got, err := inst.ReviewComments(ctx, repo, pr, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != ids[0] || got[0].Body != "Name it." || got[0].Author != "octocat" || got[1].Path != "README.md" || got[1].Line != 1 {
		t.Errorf("review comments %+v; want the review's two, without the reply or the other comment", got)
	}
}

// A pull request's review threads are read to the last, past GraphQL's
// page of 100.
func TestReviewThreadsReadsEveryPage(t *testing.T) {
	t.Parallel()
	w, repo, pr := pullWorld(t)
	var ids []int64
	for n := range 250 {
		id, err := w.sim.AddReviewComment(repo, pr, 0, "octocat", "fix.go", 1, fmt.Sprintf("thread %d", n), 0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	threads, err := w.installation(t, repo).ReviewThreads(t.Context(), repo, pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) != len(ids) {
		t.Fatalf("%d threads; want %d", len(threads), len(ids))
	}
	for i, th := range threads {
		if th.CommentID != ids[i] || th.Resolved {
			t.Fatalf("thread %d: %+v; want comment %d, open", i, th, ids[i])
		}
	}
}

// pullWorld is a world whose repository acme/widgets has pull request pr,
// which changes fix.go.
func pullWorld(t *testing.T) (*world, string, int) {
	t.Helper()
	w := newWorld(t)
	const repo = "acme/widgets"
	w.addRepo(t, repo, map[string]string{"README.md": "# widgets\n"})
	w.push(t, repo, "agent/1-fix", map[string]string{"fix.go": "package fix\n"})
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "octocat", Title: "Fix", Head: "agent/1-fix"})
	if err != nil {
		t.Fatal(err)
	}
	return w, repo, pr
}
