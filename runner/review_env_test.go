package runner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// addTest shows the bug of a pull request making Add subtract; it needs
// the module example.com/mathx, which only setup can download.
const addTest = `package stats

import "testing"

func TestAddReview(t *testing.T) {
	if got := Add(1, 2); got != 3 {
		t.Fatalf("Add(1, 2) = %d; want 3", got)
	}
}
`

// A review's proofs run over the environment a fix prepared: the
// pull request's head has the default branch's go.sum, so its key is the
// fix's, the proofs reuse it without reaching the module proxy (a pull
// request's setup has no network: without the environment, the test
// could not build on either commit), and the finding is proven.
func TestReviewProofsReuseThePreparedEnvironment(t *testing.T) {
	t.Parallel()
	demo := demoScript(t)
	script := llmtest.Script{}
	for _, s := range demo.Steps {
		if len(s.ToolCalls) == 1 && s.ToolCalls[0].Name == "run_checks" {
			continue // finish runs the checks
		}
		script.Steps = append(script.Steps, s)
	}
	script.Steps = append(script.Steps,
		llmtest.Step{ToolCalls: []llmtest.Call{finding(t, "high", "deps.go", 12, "Add subtracts", "add_review_test.go", addTest)}},
		llmtest.Step{ToolCalls: []llmtest.Call{finishReview("Add is wrong.")}})
	w := newEnvWorld(t, script)

	key, ok := strings.CutPrefix(w.fixIssue(t, "T1"), "setup: built ")
	if !ok {
		t.Fatal("the fix built no environment")
	}
	fetched := w.proxy.Requests.Load()

	main, err := w.sim.BranchSHA(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sim.CreateBranch(repo, "add", main); err != nil {
		t.Fatal(err)
	}
	deps := strings.Replace(w.files["deps.go"], "return mathx.Add(a, b)", "return mathx.Add(a, -b)", 1)
	if _, err := w.sim.Commit(repo, "add", "grace", "Simplify Add", map[string]string{"deps.go": deps}); err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "grace", Title: "Simplify Add", Head: "add"})
	if err != nil {
		t.Fatal(err)
	}
	comment, err := w.sim.AddComment(repo, pr, "ada", "/agent review")
	if err != nil {
		t.Fatal(err)
	}
	tk := app.Task{ID: "V1", Delivery: "d-V1", Event: "issue_comment", InstallationID: w.inst, Repo: repo, Number: pr, IsPR: true,
		Verb: app.VerbReview, Requester: "ada", CommentID: comment, ReceivedAt: time.Now().UTC()}
	w.store.add(tk)
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("V1"); rec.State != app.StateSucceeded {
		t.Fatalf("review ended %s (%s)", rec.State, rec.Step)
	}
	if got := w.traces.setupDetail("V1"); got != "setup: cached "+key {
		t.Errorf("the review's setup: %q; want the fix's environment, cached %s", got, key)
	}
	if n := w.proxy.Requests.Load(); n != fetched {
		t.Errorf("the review reached the module proxy %d times", n-fetched)
	}
	comments := w.sim.ReviewComments(repo, pr)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "✅ proven by a test") || !strings.Contains(comments[0].Body, "Add(1, 2) = -1; want 3") {
		t.Errorf("inline comments %+v; want the finding proven", comments)
	}
}
