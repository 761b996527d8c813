package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// A push that fixes a proven finding: the next review shows the model
// only what changed since the head reviewed before, runs the finding's
// test again on the new head, where it passes, and so replies in the
// finding's thread and resolves it through GitHub's GraphQL API.
func TestReviewAfterAFixingPushResolvesTheThread(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reviewPolicy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{finding(t, "medium", "stats.go", meanLine, "Mean divides in integers", "mean_review_test.go", meanTest)}},
		{ToolCalls: []llmtest.Call{finishReview("Mean now truncates.")}},
		{ToolCalls: []llmtest.Call{finishReview("The fix is right.")}},
	}})
	rec := w.recorded(t)
	pr := reviewPull(t, w, buggyStats)
	first := branchSHA(t, w, "mean")
	runReview(t, w, w.reviewTask(t, "V1", pr))
	comments := w.sim.ReviewComments(repo, pr)
	if len(comments) != 1 {
		t.Fatalf("%d inline comments after the first review; want 1", len(comments))
	}
	thread := comments[0]

	fixed := strings.Replace(fixedStats, "// Mean returns the arithmetic mean", "// Mean returns the mean", 1)
	second, err := w.sim.Commit(repo, "mean", "grace", "Divide in floats", map[string]string{"stats.go": fixed})
	if err != nil {
		t.Fatal(err)
	}
	runReview(t, w, w.reviewTask(t, "V2", pr))

	var again string
	for _, m := range w.model.Requests()[2].Messages {
		if m.Role == llm.RoleUser {
			again = m.Content
			break
		}
	}
	if !strings.Contains(again, "## What changed since the last review ("+first[:7]+".."+second[:7]+")") ||
		!strings.Contains(again, "-\treturn float64(Sum(xs) / len(xs))") || strings.Contains(again, "-\treturn float64(Sum(xs)) / float64(len(xs))") {
		t.Errorf("the second review's task is not the change since the first:\n%s", again)
	}
	var replies []string
	for _, c := range w.sim.ReviewComments(repo, pr) {
		switch {
		case c.ID == thread.ID && c.ResolvedBy != w.sim.App().BotLogin:
			t.Errorf("the finding's thread is resolved by %q; want agentbot", c.ResolvedBy)
		case c.InReplyTo == thread.ID:
			replies = append(replies, c.Body)
		}
	}
	if len(replies) != 1 || !strings.Contains(replies[0], "Fixed on `"+second[:7]+"`") || !strings.Contains(replies[0], "`mean_review_test.go`") {
		t.Errorf("replies in the finding's thread %q; want one saying it is fixed", replies)
	}
	var proofs []string
	for _, e := range rec.trace("V2", app.TraceCheck) {
		proofs = append(proofs, e.Name+" "+e.Outcome)
	}
	if fmt.Sprint(proofs) != "[proof again test passed]" {
		t.Errorf("proofs of the second review %q", proofs)
	}
	if o := rec.outcomes["V2"]; o.Review == nil || o.Review.Resolved != 1 {
		t.Errorf("the second review's outcome %+v; want 1 finding resolved", o.Review)
	}
}

// A finding whose thread someone resolves with no commit fixing it is
// dismissed, counted by the next review; one left open is carried to the
// review after, which counts its dismissal then.
func TestReviewCountsDismissedFindings(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, reviewPolicy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{
			finding(t, "high", "stats.go", meanLine, "Mean divides in integers", "", ""),
			finding(t, "high", "stats.go", 16, "Mean of nothing", "", ""),
		}},
		{ToolCalls: []llmtest.Call{finishReview("Two remarks.")}},
		{ToolCalls: []llmtest.Call{finishReview("Nothing new.")}},
		{ToolCalls: []llmtest.Call{finishReview("Nothing new.")}},
	}})
	rec := w.recorded(t)
	pr := reviewPull(t, w, buggyStats)
	runReview(t, w, w.reviewTask(t, "V1", pr))
	comments := w.sim.ReviewComments(repo, pr)
	if len(comments) != 2 {
		t.Fatalf("%d inline comments; want 2", len(comments))
	}
	push := func(n int) {
		t.Helper()
		content := strings.Replace(buggyStats, "// Sum returns", fmt.Sprintf("// (%d) Sum returns", n), 1)
		if _, err := w.sim.Commit(repo, "mean", "grace", "Touch", map[string]string{"stats.go": content}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.sim.ResolveThread(repo, comments[0].ID, "grace"); err != nil {
		t.Fatal(err)
	}
	push(1)
	runReview(t, w, w.reviewTask(t, "V2", pr))
	if err := w.sim.ResolveThread(repo, comments[1].ID, "grace"); err != nil {
		t.Fatal(err)
	}
	push(2)
	runReview(t, w, w.reviewTask(t, "V3", pr))
	for _, id := range []string{"V2", "V3"} {
		if o := rec.outcomes[id]; o.Review == nil || o.Review.Dismissed != 1 || o.Review.Resolved != 0 {
			t.Errorf("%s's outcome %+v; want 1 finding dismissed", id, o.Review)
		}
	}
	if s := app.SummarizeReviews([]app.TaskOutcome{rec.outcomes["V1"], rec.outcomes["V2"], rec.outcomes["V3"]}); s[len(s)-1].Dismissed != 2 || s[len(s)-1].Findings != 2 {
		t.Errorf("summary %+v; want 2 findings, both dismissed", s[len(s)-1])
	}
}

// The findings of a review someone dismissed are dismissed, counted by
// the next review, which does not carry them on.
func TestReviewCountsTheFindingsOfADismissedReview(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, reviewPolicy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{finding(t, "high", "stats.go", meanLine, "Mean divides in integers", "", "")}},
		{ToolCalls: []llmtest.Call{finishReview("One remark.")}},
		{ToolCalls: []llmtest.Call{finishReview("Nothing new.")}},
		{ToolCalls: []llmtest.Call{finishReview("Nothing new.")}},
	}})
	rec := w.recorded(t)
	pr := reviewPull(t, w, buggyStats)
	runReview(t, w, w.reviewTask(t, "V1", pr))
	reviews := botReviews(w, pr)
	if len(reviews) != 1 {
		t.Fatalf("%d reviews; want 1", len(reviews))
	}
	if err := w.sim.DismissReview(repo, reviews[0].ID); err != nil {
		t.Fatal(err)
	}
	runReview(t, w, w.reviewTask(t, "V2", pr))
	runReview(t, w, w.reviewTask(t, "V3", pr))
	if o := rec.outcomes["V2"]; o.Review == nil || o.Review.Dismissed != 1 {
		t.Errorf("V2's outcome %+v; want the finding dismissed", o.Review)
	}
	if o := rec.outcomes["V3"]; o.Review == nil || o.Review.Dismissed != 0 {
		t.Errorf("V3's outcome %+v; want nothing counted again", o.Review)
	}
}
