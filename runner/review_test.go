package runner_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// reviewPolicy's check is the repository's Go tests.
const reviewPolicy = `version: 1
checks:
  - {name: test, run: "go test ./..."}
`

// fixedStats is stats.go with Sum right: the base a pull request starts
// from.
const fixedStats = `// Package stats computes simple statistics over integer samples.
package stats

// Sum returns the sum of xs.
func Sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}

// Mean returns the arithmetic mean of xs, or 0 for no samples.
func Mean(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	return float64(Sum(xs)) / float64(len(xs))
}
`

// meanLine is the line of the buggy Mean's return in buggyStats.
const meanLine = 18

// buggyStats divides in integers: Mean([1 2]) is 1. The repository's
// own tests still pass (Mean(2, 4, 6) is 4 either way).
var buggyStats = strings.Replace(fixedStats, "return float64(Sum(xs)) / float64(len(xs))", "return float64(Sum(xs) / len(xs))", 1)

// meanTest shows the bug: it fails on buggyStats and passes on fixedStats.
const meanTest = `package stats

import "testing"

func TestMeanOfTwo(t *testing.T) {
	if got := Mean([]int{1, 2}); got != 1.5 {
		t.Fatalf("Mean(1, 2) = %v; want 1.5", got)
	}
}
`

// reviewPull opens grace's pull request changing stats.go to stats, over
// a main whose Sum is right, and returns its number.
func reviewPull(t *testing.T, w *world, stats string) int {
	t.Helper()
	return reviewPullOn(t, w, "mean", "grace", stats)
}

// reviewPullOn is reviewPull from branch head, by author.
func reviewPullOn(t *testing.T, w *world, head, author, stats string) int {
	t.Helper()
	if _, err := w.sim.Commit(repo, "main", "ada", "Fix Sum", map[string]string{"stats.go": fixedStats}); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.CreateBranch(repo, head, branchSHA(t, w, "main")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.Commit(repo, head, author, "Simplify Mean", map[string]string{"stats.go": stats}); err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: author, Title: "Simplify Mean", Head: head})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// reviewTask is "/agent review" by ada on pull request pr.
func (w *world) reviewTask(t *testing.T, id string, pr int) app.Task {
	t.Helper()
	return w.commandOn(t, id, pr, "ada", app.VerbReview, func(tk *app.Task) { tk.IsPR = true })
}

// finding is report_finding's arguments; test is a Go test file's content
// at path, or none.
func finding(t *testing.T, severity, path string, line int, title, testPath, test string) llmtest.Call {
	t.Helper()
	args := map[string]any{"severity": severity, "path": path, "line": line, "title": title, "body": "Because " + title + "."}
	if test != "" {
		args["test"] = map[string]string{"path": testPath, "content": test}
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return llmtest.Call{Name: "report_finding", Arguments: llmtest.Arguments(b)}
}

func finishReview(summary string) llmtest.Call {
	return llmtest.Call{Name: "finish_review", Arguments: llmtest.Arguments(`{"summary":"` + summary + `"}`)}
}

// runReview runs task tk to its end, which must be a success.
func runReview(t *testing.T, w *world, tk app.Task) {
	t.Helper()
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record(tk.ID); rec.State != app.StateSucceeded {
		t.Fatalf("review ended %s (%s)", rec.State, rec.Step)
	}
}

// botReviews are the App's reviews of pull request pr.
func botReviews(w *world, pr int) []githubsim.Review {
	var out []githubsim.Review
	for _, r := range w.sim.Reviews(repo, pr) {
		if r.Author == w.sim.App().BotLogin {
			out = append(out, r)
		}
	}
	return out
}

func TestReviewPostsAProvenBugInline(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPolicy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"stats.go"}`}}},
		{ToolCalls: []llmtest.Call{
			finding(t, "medium", "stats.go", meanLine, "Mean divides in integers", "mean_review_test.go", meanTest),
			finding(t, "low", "stats.go", 4, "Sum could be named Total", "", ""),
		}},
		{ToolCalls: []llmtest.Call{finishReview("Mean now truncates.")}},
	}})
	rec := w.recorded(t)
	pr := reviewPull(t, w, buggyStats)
	head, main := branchSHA(t, w, "mean"), branchSHA(t, w, "main")
	runReview(t, w, w.reviewTask(t, "V1", pr))

	reviews := botReviews(w, pr)
	if len(reviews) != 1 || reviews[0].State != "COMMENTED" || reviews[0].CommitID != head {
		t.Fatalf("reviews %+v; want one COMMENTED review on %s", reviews, head)
	}
	comments := w.sim.ReviewComments(repo, pr)
	if len(comments) != 1 {
		t.Fatalf("%d inline comments; want 1: %+v", len(comments), comments)
	}
	c := comments[0]
	if c.Path != "stats.go" || c.Line != meanLine || c.ReviewID != reviews[0].ID {
		t.Errorf("comment on %s:%d of review %d; want stats.go:%d of %d", c.Path, c.Line, c.ReviewID, meanLine, reviews[0].ID)
	}
	for _, want := range []string{
		"**🟠 Medium** · ✅ proven by a test — **Mean divides in integers**",
		"<details><summary>Test `mean_review_test.go`: fails on " + head[:7] + ", passes on the base " + main[:7] + "</summary>",
		"func TestMeanOfTwo(t *testing.T) {",
		"--- FAIL: TestMeanOfTwo",
		"Mean(1, 2) = 1; want 1.5",
	} {
		if !strings.Contains(c.Body, want) {
			t.Errorf("the inline comment lacks %q:\n%s", want, c.Body)
		}
	}
	// The low remark has no test and min_severity is medium: not posted.
	for _, text := range []string{reviews[0].Body, c.Body, w.status("V1")} {
		if strings.Contains(text, "Total") {
			t.Errorf("the unproven low remark was posted:\n%s", text)
		}
	}
	runs := w.sim.CheckRuns(repo)
	if len(runs) != 1 || runs[0].HeadSHA != head || runs[0].Conclusion != "neutral" || runs[0].Title != "Review: 1 finding, 1 proven" {
		t.Errorf("check runs %+v; want one neutral run on %s", runs, head)
	}
	var proofs []string
	for _, e := range rec.trace("V1", app.TraceCheck) {
		proofs = append(proofs, e.Name+" "+e.Outcome)
	}
	if fmt.Sprint(proofs) != "[proof head test failed proof base test passed]" {
		t.Errorf("proofs in the trace %q", proofs)
	}
	if o := rec.outcomes["V1"]; o.Review == nil || *o.Review != (app.ReviewOutcome{Findings: 2, Proven: 1, Posted: 1}) {
		t.Errorf("outcome %+v; want a review of 2 findings, 1 proven, 1 posted", o.Review)
	}
	// Nothing was pushed.
	if got := branchSHA(t, w, "mean"); got != head {
		t.Errorf("the pull request's branch moved to %s", got)
	}
	if left := w.sandboxesLeft(t, "V1-proof1"); left != "" {
		t.Errorf("proof sandboxes are still there: %s", left)
	}
}

func TestReviewOfACleanPullRequestSaysNoFindings(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, reviewPolicy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{finishReview("Looks right.")}},
	}})
	pr := reviewPull(t, w, strings.Replace(fixedStats, "// Sum returns the sum of xs.", "// Sum returns the sum of xs, 0 for none.", 1))
	runReview(t, w, w.reviewTask(t, "V1", pr))
	if r := botReviews(w, pr); len(r) != 0 {
		t.Errorf("a clean pull request got reviews %+v", r)
	}
	if c := w.sim.ReviewComments(repo, pr); len(c) != 0 {
		t.Errorf("a clean pull request got inline comments %+v", c)
	}
	runs := w.sim.CheckRuns(repo)
	if len(runs) != 1 || runs[0].Name != app.ReviewCheckName || runs[0].Conclusion != "neutral" || runs[0].Title != "Review: No findings" || !strings.HasPrefix(runs[0].Summary, "No findings.") {
		t.Errorf("check runs %+v; want one neutral run %q saying no findings", runs, app.ReviewCheckName)
	}
	// The diff reached the model.
	if task := w.taskText(t); !strings.Contains(task, "+// Sum returns the sum of xs, 0 for none.") {
		t.Errorf("the task message lacks the diff:\n%s", task)
	}
}

func TestReviewCapsInlineComments(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, reviewPolicy+"review: {max_comments: 2, min_severity: low}\n", llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{
			finding(t, "low", "stats.go", 15, "first low", "", ""),
			finding(t, "high", "stats.go", 16, "the high one", "", ""),
			finding(t, "medium", "stats.go", meanLine, "the medium one", "", ""),
			finding(t, "low", "stats.go", 19, "second low", "", ""),
			// Off the diff: GitHub takes no inline comment there.
			finding(t, "high", "stats.go", 4, "off the diff", "", ""),
		}},
		{ToolCalls: []llmtest.Call{finishReview("Several remarks.")}},
	}})
	pr := reviewPull(t, w, buggyStats)
	runReview(t, w, w.reviewTask(t, "V1", pr))
	comments := w.sim.ReviewComments(repo, pr)
	if len(comments) != 2 {
		t.Fatalf("%d inline comments; want the cap, 2", len(comments))
	}
	if !strings.Contains(comments[0].Body, "🔴 High** · ⚠️ unproven — **the high one") || !strings.Contains(comments[1].Body, "the medium one") {
		t.Errorf("inline comments not most severe first:\n%s\n---\n%s", comments[0].Body, comments[1].Body)
	}
	reviews := botReviews(w, pr)
	if len(reviews) != 1 {
		t.Fatalf("%d reviews; want 1", len(reviews))
	}
	body := reviews[0].Body
	if !strings.Contains(body, "2 inline comments, 3 more below") || !strings.Contains(body, "first low") || !strings.Contains(body, "second low") ||
		!strings.Contains(body, "`stats.go`:4: off the diff") ||
		strings.Contains(body, "the high one") {
		t.Errorf("the review's body does not summarize the rest:\n%s", body)
	}
}

func TestReviewBlocksOnAProvenFindingWhenThePolicySaysSo(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPolicy+"review: {block_on: proven}\n", llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{finding(t, "medium", "stats.go", meanLine, "Mean divides in integers", "mean_review_test.go", meanTest)}},
		{ToolCalls: []llmtest.Call{finishReview("Mean now truncates.")}},
	}})
	pr := reviewPull(t, w, buggyStats)
	runReview(t, w, w.reviewTask(t, "V1", pr))
	if r := botReviews(w, pr); len(r) != 1 || r[0].State != "CHANGES_REQUESTED" {
		t.Errorf("reviews %+v; want one requesting changes", r)
	}
	if runs := w.sim.CheckRuns(repo); len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Errorf("check runs %+v; want one failing", runs)
	}
}

func TestReviewOfAnIssueIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, reviewPolicy, llmtest.Script{})
	tk := w.reviewTask(t, "V1", w.issue)
	tk.IsPR = false
	w.store.add(tk)
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("V1"); rec.State != app.StateRefused {
		t.Errorf("review of an issue ended %s; want refused", rec.State)
	}
	if s := w.status("V1"); !strings.Contains(s, "`/agent review` reviews pull requests, and #1 is an issue.") {
		t.Errorf("status:\n%s", s)
	}
	if len(w.model.Requests()) != 0 {
		t.Error("the model was asked")
	}
}
