package runner_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// A finding's thread fixes the finding: "/agent fix" replied to the
// review's inline comment is a fix whose task is the finding and its test,
// and whose reproduction is that test on the pull request's head. On a
// person's pull request it is a new pull request against the branch; on
// agentbot's own, a commit on it. A fix paused for an approval is the
// finding's still once approved.
func TestFixInAFindingsThread(t *testing.T) {
	t.Parallel()
	fixed := "return float64(Sum(xs)) / float64(len(xs))"
	// A test the model weakens (it still fails on the head) is no longer
	// the finding's.
	weakened := strings.Replace(meanTest, "[]int{1, 2}); got != 1.5", "[]int{1, 4}); got != 2.5", 1)
	for _, c := range []struct {
		name, head string
		own        bool
		test       string // the test file the model writes
		approved   bool   // writes wait for an approver (tools.write: human)
	}{
		{"person", "mean", false, meanTest, false},
		{"agent", "agent/9-simplify-mean", true, meanTest, false},
		{"test altered", "mean", false, weakened, false},
		{"approved", "mean", false, meanTest, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pol := reviewPolicy
			if c.approved {
				pol += "tools: {write: human}\n"
			}
			w := newWorld(t, pol, llmtest.Script{Steps: []llmtest.Step{
				// The review.
				{ToolCalls: []llmtest.Call{finding(t, "medium", "stats.go", meanLine, "Mean divides in integers", "mean_review_test.go", meanTest)}},
				{ToolCalls: []llmtest.Call{finishReview("Mean now truncates.")}},
				// The fix.
				{ToolCalls: []llmtest.Call{{Name: "write_file", Arguments: llmtest.Arguments(jsonOf(t, map[string]string{"path": "mean_review_test.go", "content": c.test}))}}},
				{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: llmtest.Arguments(jsonOf(t, map[string]string{"path": "stats.go",
					"old_string": "return float64(Sum(xs) / len(xs))", "new_string": fixed}))}}},
				{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"title":"Divide Mean in floats","summary":"Mean divided in integers; it divides in floats now."}`}}},
			}})
			rec := w.recorded(t)
			author := "grace"
			if c.own {
				author = w.sim.App().BotLogin
			}
			pr := reviewPullOn(t, w, c.head, author, buggyStats)
			head := branchSHA(t, w, c.head)
			runReview(t, w, w.reviewTask(t, "V1", pr))
			comments := w.sim.ReviewComments(repo, pr)
			if len(comments) != 1 {
				t.Fatalf("%d inline comments; want the finding's", len(comments))
			}
			root := comments[0].ID
			if !strings.Contains(comments[0].Body, "Reply `/agent fix` in this thread") {
				t.Errorf("the finding's comment does not say how to fix it:\n%s", comments[0].Body)
			}

			reply, err := w.sim.AddReviewComment(repo, pr, 0, "ada", "", 0, "/agent fix", root)
			if err != nil {
				t.Fatal(err)
			}
			tk := app.Task{ID: "F1", Delivery: "d-F1", Event: "pull_request_review_comment", InstallationID: w.inst, Repo: repo,
				Number: pr, IsPR: true, Verb: app.VerbFix, Requester: "ada", CommentID: reply, ReceivedAt: time.Now().UTC(),
				ReviewComment: &app.ReviewComment{ID: reply, Path: "stats.go", Line: meanLine, InReplyTo: root}}
			w.store.add(tk)
			if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
				t.Fatal(err)
			}
			if c.approved {
				if r := w.store.record("F1"); r.State != app.StateAwaitingApproval {
					t.Fatalf("the fix ended %s (%s); want it waiting for approval", r.State, r.Step)
				}
				if err := w.sim.SetPermission(repo, "grace", "maintain"); err != nil { // an approver
					t.Fatal(err)
				}
				for _, id := range []string{"A1", "A2"} { // the test file, then stats.go
					approve := w.commandOn(t, id, pr, "grace", app.VerbApprove, func(tk *app.Task) { tk.IsPR = true })
					if err := w.runner.ProcessTask(t.Context(), approve); err != nil {
						t.Fatal(err)
					}
				}
			}
			if r := w.store.record("F1"); r.State != app.StateSucceeded {
				t.Fatalf("the fix ended %s (%s)", r.State, r.Step)
			}

			// The task is the finding and its test.
			text := fixTaskText(t, w, "The review's finding to fix")
			for _, want := range []string{"`stats.go` line 18", "🟠 Medium", "✅ proven by a test", "Mean divides in integers",
				"Its test, `mean_review_test.go`, fails on this pull request's head", "func TestMeanOfTwo(t *testing.T) {"} {
				if !strings.Contains(text, want) {
					t.Errorf("the fix's task lacks %q:\n%s", want, text)
				}
			}
			// Its reproduction is the finding's test, failing on the head.
			var repro []string
			for _, e := range rec.trace("F1", app.TraceCheck) {
				if strings.HasPrefix(e.Name, "reproduce ") {
					repro = append(repro, e.Name+" "+e.Outcome)
				}
			}
			if !slices.Equal(repro, []string{"reproduce test failed"}) {
				t.Errorf("reproduction in the trace %q; want the test failing on the head", repro)
			}

			// The thread is answered with the pull request the fix is in.
			done := fmt.Sprintf("✅ **Done:** #%d ", pr)
			if !c.own {
				done = fmt.Sprintf("✅ **Done:** #%d ", pr+1)
			}
			var answers []string
			for _, rc := range w.sim.ReviewComments(repo, pr) {
				if rc.InReplyTo == root && rc.Author == w.sim.App().BotLogin {
					answers = append(answers, rc.Body)
				}
			}
			if len(answers) != 1 || !strings.Contains(answers[0], done) {
				t.Errorf("the finding's thread is answered %q; want one answer saying %q", answers, done)
			}
			pushed := branchSHA(t, w, c.head)
			if c.own {
				// A follow-up commit on agentbot's own branch.
				if pushed == head || w.parentOf(t, pushed) != head {
					t.Fatalf("the branch is at %s; want one commit on %s", pushed, head)
				}
				if len(w.sim.PullRequests(repo)) != 1 {
					t.Errorf("pull requests %+v; want only the one fixed", w.sim.PullRequests(repo))
				}
				assertFixed(t, w, c.head, fixed)
				return
			}
			if pushed != head {
				t.Errorf("grace's branch moved from %s to %s", head, pushed)
			}
			branch := fmt.Sprintf("agent/%d-simplify-mean-%d", pr, reply)
			opened := w.pullsFrom(branch)
			if len(opened) != 1 || opened[0].Pull.Base != c.head {
				t.Fatalf("pull requests from %s: %+v; want one against %s", branch, opened, c.head)
			}
			if w.parentOf(t, branchSHA(t, w, branch)) != head {
				t.Errorf("the fix is not a commit on grace's head %s", head)
			}
			body := opened[0].Body
			if c.test != meanTest {
				if !strings.Contains(body, "⚠️ **Not reproduced: the fix is unproven.** The change alters the finding's test `mean_review_test.go`.") {
					t.Errorf("the pull request does not say the finding's test was altered:\n%s", body)
				}
				return
			}
			if !strings.Contains(body, "✅ **Reproduced:**") || !strings.Contains(body, "TestMeanOfTwo") {
				t.Errorf("the pull request does not say the finding's test reproduced it:\n%s", body)
			}
			assertFixed(t, w, branch, fixed)
		})
	}
}

// assertFixed checks that branch has Mean fixed and the finding's test.
func assertFixed(t *testing.T, w *world, branch, fixed string) {
	t.Helper()
	if !strings.Contains(w.fileOn(t, branch, "stats.go"), fixed) || w.fileOn(t, branch, "mean_review_test.go") != meanTest {
		t.Errorf("%s lacks the fix or the finding's test", branch)
	}
}

// fixTaskText is the task message of the first request to the model that
// has marker in it.
func fixTaskText(t *testing.T, w *world, marker string) string {
	t.Helper()
	for _, r := range w.model.Requests() {
		for _, m := range r.Messages {
			if m.Role == llm.RoleUser && strings.Contains(m.Content, marker) {
				return m.Content
			}
		}
	}
	t.Fatalf("no task message has %q", marker)
	return ""
}

// jsonOf is v as JSON.
func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
