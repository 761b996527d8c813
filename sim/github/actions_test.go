package github_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	githubsim "github.com/agentbot/agentbot/sim/github"
)

// TestCIAndReviewConformance exercises the CI and review operations of
// the subset, each answer checked against GitHub's description.
func TestCIAndReviewConformance(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newValidator(t)
	c := w.client(t, v, nil)
	// Answers the subset does not describe (a 404 where it lists none)
	// are checked without the validator.
	plain := w.client(t, nil, nil)
	ctx := context.Background()
	w.pushBranch(t, full, "agent/1-fix", "fix.go", "package fix\n")
	pr, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "agentbot-sim[bot]", Title: "Fix", Head: "agent/1-fix"})
	if err != nil {
		t.Fatal(err)
	}
	head := w.mustBranchSHA(t, "agent/1-fix")
	if _, _, err := c.Checks.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{Name: "agentbot", HeadSHA: head}); err != nil {
		t.Fatal(err)
	}
	lint, err := w.s.AddCIRun(full, githubsim.CIRunOptions{Ref: "agent/1-fix", Name: "lint", Conclusion: "failure",
		Title: "1 problem", Summary: "golint found a problem",
		Annotations: []githubsim.Annotation{{Path: "fix.go", StartLine: 1, Message: "package comment missing"}}})
	if err != nil {
		t.Fatal(err)
	}
	test, err := w.s.AddCIRun(full, githubsim.CIRunOptions{Ref: head, Name: "test", Conclusion: "failure", Actions: true,
		Log: "2026-12-01T10:00:00Z --- FAIL: TestFix\n"})
	if err != nil {
		t.Fatal(err)
	}
	// A webhook receiver that keeps nothing: the delivery is not under test.
	sink := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer sink.Close()
	hook := sink.URL
	reviewID, commentIDs, resp, err := w.s.DeliverReviewWithComments(ctx, hook, full, pr, "octocat", "CHANGES_REQUESTED", "",
		[]githubsim.InlineComment{{Path: "fix.go", Line: 1, Body: "Name it better."}, {Path: "README.md", Line: 1, Body: "Say why."}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	suites, _, err := c.Checks.ListCheckSuitesForRef(ctx, owner, name, head, nil)
	if err != nil || suites.GetTotal() != 3 {
		t.Fatalf("suites on the branch: %v, %v; want agentbot's, lint's and test's", suites, err)
	}
	var apps []string
	for _, s := range suites.CheckSuites {
		apps = append(apps, s.GetApp().GetSlug())
	}
	if !slices.Contains(apps, "github-actions") || !slices.Contains(apps, "ci-service") {
		t.Errorf("suites' apps %v; want github-actions and ci-service among them", apps)
	}
	runs, _, err := c.Checks.ListCheckRunsCheckSuite(ctx, owner, name, test.SuiteID, &github.ListCheckRunsOptions{Status: github.String("completed")})
	if err != nil || runs.GetTotal() != 1 || runs.CheckRuns[0].GetID() != test.RunID || runs.CheckRuns[0].GetConclusion() != "failure" {
		t.Fatalf("runs of the test suite: %v, %v", runs, err)
	}
	if _, _, err := plain.Checks.ListCheckRunsCheckSuite(ctx, owner, name, 424242, nil); !isStatus(err, 404) {
		t.Errorf("runs of a missing suite: %v; want 404", err)
	}
	notes, _, err := c.Checks.ListCheckRunAnnotations(ctx, owner, name, lint.RunID, nil)
	if err != nil || len(notes) != 1 || notes[0].GetMessage() != "package comment missing" {
		t.Fatalf("annotations: %v, %v", notes, err)
	}
	if _, _, err := plain.Checks.ListCheckRunAnnotations(ctx, owner, name, 424242, nil); !isStatus(err, 404) {
		t.Errorf("annotations of a missing run: %v; want 404", err)
	}
	u, _, err := c.Actions.GetWorkflowJobLogs(ctx, owner, name, test.RunID, 0)
	if err != nil {
		t.Fatalf("job logs: %v", err)
	}
	logResp, err := http.Get(u.String()) // signed: no token
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(logResp.Body)
	logResp.Body.Close()
	if !strings.Contains(string(body), "--- FAIL: TestFix") {
		t.Errorf("log: %q", body)
	}
	if _, _, err := plain.Actions.GetWorkflowJobLogs(ctx, owner, name, lint.RunID, 0); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("log of a check Actions did not run: %v; want 404", err)
	}
	comments, _, err := c.PullRequests.ListReviewComments(ctx, owner, name, pr, reviewID, nil)
	if err != nil || len(comments) != 2 || comments[0].GetID() != commentIDs[0] || comments[1].GetPath() != "README.md" {
		t.Fatalf("review comments: %v, %v", comments, err)
	}
	if _, _, err := c.PullRequests.ListReviewComments(ctx, owner, name, pr, 424242, nil); !isStatus(err, 404) {
		t.Errorf("comments of a missing review: %v; want 404", err)
	}

	for _, f := range v.failures {
		t.Error(f)
	}
	for _, op := range []string{"checks/list-suites-for-ref", "checks/list-for-suite", "checks/list-annotations",
		"actions/download-job-logs-for-workflow-run", "pulls/list-comments-for-review"} {
		if _, ok := v.seen[op]; !ok {
			t.Errorf("operation %s was never exercised", op)
		}
	}
}

// isStatus reports whether err is GitHub answering with code.
func isStatus(err error, code int) bool {
	e, ok := err.(*github.ErrorResponse)
	return ok && e.Response.StatusCode == code
}
