package runner

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
)

func followUpTask() *task {
	tk := &task{
		Task:  &app.Task{ID: "t1", Repo: "octo/hello", Number: 7, Requester: "alice", Verb: app.VerbFixCI},
		issue: app.IssueInfo{Pull: &app.PullInfo{Head: "agent/3-x", HeadRepo: "octo/hello", Base: "main"}},
		log:   slog.New(slog.DiscardHandler),
	}
	tk.rep = (&Runner{}).reporter(tk)
	return tk
}

func TestCITextGivesTheModelWhyChecksFailed(t *testing.T) {
	t.Parallel()
	tk := followUpTask()
	answer := func(d app.CIDecision, task string) app.CIAnswer { return app.CIAnswer{Decision: d, Task: task} }
	all := []ciFailure{{check: app.CICheck{Name: "test", AppSlug: "github-actions", Conclusion: "failure",
		Title: "1 failing", Summary: "exit code 1",
		Annotations: []app.CIAnnotation{{Path: "a.go", StartLine: 3, Level: "failure", Message: "undefined: x"}},
		Log:         "ok\n```\n--- FAIL: TestA\n", LogCut: true}, answer: answer(app.CIFollowUp, "t1")},
		{check: app.CICheck{Name: "lint"}, base: &app.CICheck{Conclusion: "failure", HTMLURL: "https://x/runs/9"},
			answer: app.CIAnswer{Decision: app.CIFailsOnBase, Task: "t0", BaseRun: "https://x/runs/9"}},
		{check: app.CICheck{Name: "vet", Summary: "vet output"}, answer: answer(app.CIFollowUp, "t0")},
		{check: app.CICheck{Name: "race"}, answer: answer(app.CIFollowUpsUsed, "t1")},
	}
	text := ciText(tk, "abc123", all)
	for _, want := range []string{"(abc123)", "### test (github-actions, failure)", "1 failing", "exit code 1",
		"- a.go:3 failure: undefined: x", "The job's log, its end:", "````text\nok\n```\n--- FAIL: TestA\n````",
		"lint fails on main too", "leave it", "vet was answered by an earlier follow-up"} {
		if !strings.Contains(text, want) {
			t.Errorf("CI text lacks %q:\n%s", want, text)
		}
	}
	for _, not := range []string{"### vet", "vet output", "### race"} {
		if strings.Contains(text, not) {
			t.Errorf("CI text holds %q, which this follow-up does not address:\n%s", not, text)
		}
	}
}

func TestCIAnswersAreTheirOwnersOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := redisStore(t)
	r := &Runner{cfg: Config{Pulls: store}}
	tk := ciTask("agentbot[bot]", 0)
	answer := func(owner app.RecordOwner, check string) app.CIAnswer {
		return app.CIAnswer{Owner: owner, Head: "abc", AppID: 15368, Check: check, Task: "t1", Decision: app.CIFailsOnBase}
	}
	mine := answer(app.RecordOwner{InstallationID: 7, RepoID: 70}, "Test")
	if _, err := store.AnswerCI(ctx, "octo/hello", 2, []app.CIAnswer{mine,
		answer(app.RecordOwner{InstallationID: 7, RepoID: 71}, "Vet"), answer(app.RecordOwner{}, "Lint")}); err != nil {
		t.Fatal(err)
	}
	got, err := r.ciAnswers(ctx, tk)
	if err != nil || len(got) != 1 || got[0] != mine {
		t.Errorf("answers %+v, %v; want only %+v, of the task's own installation and repository", got, err, mine)
	}
	// A person's /agent fix-ci is answered whatever came before.
	tk.CI = nil
	if got, err := r.ciAnswers(ctx, tk); len(got) != 0 || err != nil {
		t.Errorf("a person's fix-ci goes by the answers %+v, %v; want none", got, err)
	}
}

func TestTaskTextAddsTheFollowUp(t *testing.T) {
	t.Parallel()
	tk := followUpTask()
	var none *followUp
	if got := none.taskText(tk); got != "" {
		t.Errorf("no instructions, no follow-up: %q", got)
	}
	tk.Instructions = "keep it short"
	f := &followUp{text: "## The review's inline comments"}
	if got := f.taskText(tk); got != "keep it short\n\n## The review's inline comments" {
		t.Errorf("task text %q", got)
	}
	tk.Instructions = ""
	if got := f.taskText(tk); got != "## The review's inline comments" {
		t.Errorf("task text %q", got)
	}
}

func TestReviewRepliesSayWhatChanged(t *testing.T) {
	t.Parallel()
	tk := followUpTask()
	tk.rep.ran(&agent.State{Summary: "Name things\n\nlonger", Diff: "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-x\n+y\n"})
	tk.prog.Pushed = "0123456789abcdef0123456789abcdef01234567"
	tk.prog.PR = &app.PullRequest{Number: 8, HTMLURL: "https://github.com/octo/hello/pull/8"}
	changed := tk.rep.changedPaths()
	if !changed["a.go"] || len(changed) != 1 {
		t.Fatalf("changed %v; want a.go", changed)
	}
	link := "[0123456](https://github.com/octo/hello/pull/8/commits/" + tk.prog.Pushed + ")"
	reply := func(path string, final app.State, status string) string {
		return text.ReviewReply(tk.rep.report(tk.rep.acct.run), path, final, changed[path], status)
	}
	if got := reply("a.go", app.StateSucceeded, ""); got != "✅ Changed `a.go` in "+link+": Name things" {
		t.Errorf("reply on a changed file: %q", got)
	}
	if got := reply("b.go", app.StateSucceeded, ""); !strings.HasPrefix(got, "`b.go` is unchanged in "+link) {
		t.Errorf("reply on an unchanged file: %q", got)
	}
	if got := reply("a.go", app.StateFailed, "❌ **Failed:** checks red\n\nmore"); got != "Nothing changed: ❌ **Failed:** checks red" {
		t.Errorf("reply after a failure: %q", got)
	}
}

func TestQuietRefusals(t *testing.T) {
	t.Parallel()
	tk := followUpTask()
	tk.Task.CI = &app.CIEvent{Kind: "check_run"}
	if !quiet(tk) {
		t.Error("a CI follow-up's refusal is said")
	}
	tk.Task.CI, tk.Task.Review = nil, &app.ReviewRef{ID: 1}
	if quiet(tk) {
		t.Error("a review with /agent fix is refused without a word")
	}
	tk.Task.Review.Implicit = true
	if !quiet(tk) {
		t.Error("a review that requests changes is refused in words")
	}
}
