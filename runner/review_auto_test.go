package runner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// autoTask is the review a pull_request event on pr queues by itself: an
// action of grace's on head.
func (w *world) autoTask(id string, pr int, action, head string, draft bool) app.Task {
	tk := app.Task{ID: id, Delivery: "d-" + id, Event: "pull_request", InstallationID: w.inst, Repo: repo, Number: pr, IsPR: true,
		Verb: app.VerbReview, Requester: "grace", ReceivedAt: time.Now().UTC(),
		Auto: &app.AutoReview{Action: action, HeadSHA: head, Draft: draft}}
	w.store.add(tk)
	return tk
}

// An automatic review that its policy asks for runs as "/agent review"
// does, and speaks only through its review and its check run: no status
// comment, no reaction, nobody quoted.
func TestAutomaticReviewRunsWhenThePolicyAsks(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, reviewPolicy+"review: {auto: pushed, paths: [\"*.go\"]}\n", llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{finding(t, "high", "stats.go", meanLine, "Mean divides in integers", "", "")}},
		{ToolCalls: []llmtest.Call{finishReview("Mean now truncates.")}},
	}})
	rec := w.recorded(t)
	pr := reviewPull(t, w, buggyStats)
	head := branchSHA(t, w, "mean")
	runReview(t, w, w.autoTask("A1", pr, "synchronize", head, false))

	reviews := botReviews(w, pr)
	if len(reviews) != 1 || reviews[0].CommitID != head || !strings.Contains(reviews[0].Body, "agentbot review") {
		t.Fatalf("reviews %+v; want one on %s", reviews, head)
	}
	if c := w.sim.ReviewComments(repo, pr); len(c) != 1 || !strings.Contains(c[0].Body, "Mean divides in integers") {
		t.Errorf("inline comments %+v; want the finding", c)
	}
	if runs := w.sim.CheckRuns(repo); len(runs) != 1 || runs[0].HeadSHA != head || runs[0].Title != "Review: 1 finding, 0 proven" {
		t.Errorf("check runs %+v; want one on the head", runs)
	}
	if c := w.sim.Comments(repo, pr); len(c) != 0 {
		t.Errorf("an automatic review commented: %+v", c)
	}
	var audited []string
	for _, e := range rec.entries {
		audited = append(audited, string(e.Kind)+" "+e.Detail)
	}
	if len(audited) == 0 || audited[0] != "command pull_request synchronize (automatic review)" {
		t.Errorf("audit %q; want the event first", audited)
	}
}

// What the default branch's policy does not ask for ends quietly, before
// the model is asked: nothing on GitHub, the reason in the task's record,
// and nothing in the audit log but for review.paths, which takes the
// checkout of an admitted task to decide.
func TestAutomaticReviewsThePolicyDoesNotAskFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, policy, action string
		draft, fork, stale   bool
		why                  string
		audited              int
	}{
		{name: "auto off", policy: "", action: "opened", why: "review.auto is off"},
		{name: "a push under auto opened", policy: "review: {auto: opened}\n", action: "synchronize",
			why: "review.auto is opened: a push is not reviewed by itself"},
		{name: "a draft", policy: "review: {auto: opened}\n", action: "opened", draft: true,
			why: "the pull request is a draft, and review.drafts is false"},
		{name: "a fork", policy: "review: {auto: opened}\n", action: "opened", fork: true,
			why: "the pull request comes from a fork, and trigger.allow_forks is false"},
		{name: "a head moved on", policy: "review: {auto: pushed}\n", action: "synchronize", stale: true,
			why: "the pull request's head moved from 0123456 to "},
		{name: "no path of review.paths", policy: "review: {auto: opened, paths: [\"docs/**\"]}\n", action: "reopened",
			why: "the pull request changes none of review.paths", audited: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorldWithoutSandboxes(t, reviewPolicy+c.policy, llmtest.Script{})
			rec := w.recorded(t)
			var pr int
			if c.fork {
				if err := w.sim.AddFork("mallory/stats", map[string]string{"stats.go": buggyStats}); err != nil {
					t.Fatal(err)
				}
				var err error
				if pr, err = w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "mallory", Title: "Simplify Mean", Head: "main", HeadRepo: "mallory/stats"}); err != nil {
					t.Fatal(err)
				}
			} else {
				pr = reviewPull(t, w, buggyStats)
			}
			head := pullHead(t, w, pr)
			if c.stale {
				head = "0123456789abcdef0123456789abcdef01234567"
			}
			tk := w.autoTask("A1", pr, c.action, head, c.draft)
			if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
				t.Fatal(err)
			}
			if r := w.store.record("A1"); r.State != app.StateRefused || !strings.HasPrefix(r.Step, c.why) {
				t.Errorf("ended %s (%s); want refused: %s", r.State, r.Step, c.why)
			}
			if n := len(w.model.Requests()); n != 0 {
				t.Errorf("the model was asked %d times", n)
			}
			if len(botReviews(w, pr)) != 0 || len(w.sim.CheckRuns(repo)) != 0 || len(w.sim.Comments(repo, pr)) != 0 {
				t.Errorf("something was posted: reviews %+v, check runs %+v, comments %+v", botReviews(w, pr), w.sim.CheckRuns(repo), w.sim.Comments(repo, pr))
			}
			if len(rec.entries) != c.audited {
				t.Errorf("audited %+v; want %d entries", rec.entries, c.audited)
			}
		})
	}
}

// pullHead is the commit pull request pr's head branch points at.
func pullHead(t *testing.T, w *world, pr int) string {
	t.Helper()
	is, err := w.sim.Issue(repo, pr)
	if err != nil {
		t.Fatal(err)
	}
	sha, err := w.sim.BranchSHA(is.Pull.HeadRepo, is.Pull.Head)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}
