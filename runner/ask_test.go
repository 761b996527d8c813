package runner_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// askTask is "/agent ask <question>" by ada on the world's issue.
func (w *world) askTask(t *testing.T, id, question string) app.Task {
	t.Helper()
	comment, err := w.sim.AddComment(repo, w.issue, "ada", "/agent ask "+question)
	if err != nil {
		t.Fatal(err)
	}
	tk := app.Task{ID: id, Delivery: "d-" + id, Event: "issue_comment", InstallationID: w.inst, Repo: repo,
		Number: w.issue, Verb: app.VerbAsk, Instructions: question, Requester: "ada", CommentID: comment, ReceivedAt: time.Now().UTC()}
	w.store.add(tk)
	return tk
}

func TestAskAnswersWithLinksAndChangesNothing(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, quickPolicy, llmtest.Script{Steps: []llmtest.Step{
		{Text: "Reading Sum.", ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"stats.go"}`}}},
		{ToolCalls: []llmtest.Call{{Name: "answer", Arguments: `{"answer":"Sum starts its loop at index 1 (` + "`stats.go:7`" + `), so the first sample is never added; Mean divides that sum (stats.go:14-19)."}`}}},
	}})
	before, err := w.sim.Branches(repo)
	if err != nil {
		t.Fatal(err)
	}
	main := before["main"]
	tk := w.askTask(t, "Q1", "why is the sum wrong?")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("Q1"); rec.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s)", rec.State, rec.Step)
	}
	status := w.status("Q1")
	web := strings.TrimSuffix(w.sim.URL(), "/") + "/acme/stats"
	for _, want := range []string{
		"💬 **Answer**",
		"[`stats.go:7`](" + web + "/blob/" + main + "/stats.go#L7)",
		"[`stats.go:14-19`](" + web + "/blob/" + main + "/stats.go#L14-L19)",
		"nothing was changed",
		"> why is the sum wrong?",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("the answer lacks %q:\n%s", want, status)
		}
	}
	// Nothing changed: no branch, no pull request, no write tool offered.
	after, err := w.sim.Branches(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || after["main"] != main {
		t.Errorf("branches %v after a question; want %v", after, before)
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 0 {
		t.Errorf("%d pull requests after a question", len(prs))
	}
	reqs := w.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2", len(reqs))
	}
	for i, req := range reqs {
		names := req.ToolNames()
		for _, write := range []string{"edit_file", "write_file", "apply_patch", "run_command", "run_checks", "finish"} {
			if slices.Contains(names, write) {
				t.Errorf("request %d offered %s: %v", i, write, names)
			}
		}
		if !slices.Contains(names, "answer") {
			t.Errorf("request %d did not offer answer: %v", i, names)
		}
	}
	if sys := reqs[0].Messages[0].Content; !strings.Contains(sys, "You cannot change files or run commands") {
		t.Errorf("system prompt:\n%s", sys)
	}
	if task := w.taskText(t); !strings.Contains(task, "Question: why is the sum wrong?") {
		t.Errorf("task message:\n%s", task)
	}
	runs := w.sim.CheckRuns(repo)
	if len(runs) != 1 || runs[0].HeadSHA != main || runs[0].Conclusion != "neutral" || !strings.Contains(runs[0].Text, `read\_file`) {
		t.Errorf("check runs %+v; want one neutral run with the trace on %s", runs, main)
	}
}

func TestAskWithoutAnAnswerSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, quickPolicy+"limits: {iterations: 2}\n", llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"stats.go"}`}}},
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"i := 1","new_string":"i := 0"}`}}},
	}})
	tk := w.askTask(t, "Q1", "can you fix it?")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("Q1"); rec.State != app.StateFailed {
		t.Errorf("task ended %s (%s); want failed", rec.State, rec.Step)
	}
	if s := w.status("Q1"); !strings.Contains(s, "**No answer.** iterations") {
		t.Errorf("status:\n%s", s)
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 0 {
		t.Errorf("%d pull requests", len(prs))
	}
}

// hostileAnswer is an answer that, posted as written, would notify a user
// and a team in the App's name, and would hide the page after it: a
// <details> left open, an image fetched from anywhere, and an unclosed
// comment over the usage line and the quoted request.
const hostileAnswer = `Ask @grace or @acme/admins. <details><summary>more</summary> <img src=https://evil.example/px.gif> <!-- the rest is hidden`

// assertInert fails unless body, posted by the App, mentions nobody the
// hostile answer names and holds none of its HTML; the one comment is the
// hidden marker that starts every post of the App.
func assertInert(t *testing.T, what, body string) {
	t.Helper()
	for _, live := range []string{"@grace", "@acme/admins", "<details", "<img", "<summary"} {
		if strings.Contains(body, live) {
			t.Errorf("the %s carries %q live:\n%s", what, live, body)
		}
	}
	if n := strings.Count(body, "<!--"); n != 1 || !strings.HasPrefix(body, "<!-- agentbot:") {
		t.Errorf("the %s opens %d HTML comments; want only its marker:\n%s", what, n, body)
	}
}

func TestAskAnswerIsInert(t *testing.T) {
	t.Parallel()
	answer, _ := json.Marshal(map[string]string{"answer": hostileAnswer})
	w := newWorldWithoutSandboxes(t, quickPolicy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "answer", Arguments: llmtest.Arguments(answer)}}},
	}})
	tk := w.askTask(t, "Q1", "who knows Sum?")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	status := w.status("Q1")
	assertInert(t, "status comment", status)
	// The answer reads the same, and the page goes on after it.
	for _, want := range []string{"Ask @\u200dgrace or @\u200dacme/admins.", "&lt;details>", "&lt;!-- the rest is hidden", "<sub>1 iterations", "> who knows Sum?"} {
		if !strings.Contains(status, want) {
			t.Errorf("the status comment lacks %q:\n%s", want, status)
		}
	}
}

func TestAskOnADiffLineRepliesInert(t *testing.T) {
	t.Parallel()
	answer, _ := json.Marshal(map[string]string{"answer": hostileAnswer})
	w := newWorldWithoutSandboxes(t, quickPolicy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "answer", Arguments: llmtest.Arguments(answer)}}},
	}})
	main, err := w.sim.BranchSHA(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sim.CreateBranch(repo, "sum-fix", main); err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "ada", Title: "Fix Sum", Head: "sum-fix"})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := w.sim.AddReviewComment(repo, pr, 0, "ada", "stats.go", 7, "/agent ask who knows this loop?", 0)
	if err != nil {
		t.Fatal(err)
	}
	tk := app.Task{ID: "Q1", Delivery: "d-Q1", Event: "pull_request_review_comment", InstallationID: w.inst, Repo: repo,
		Number: pr, Verb: app.VerbAsk, Instructions: "who knows this loop?", Requester: "ada",
		ReviewComment: &app.ReviewComment{ID: rc, Path: "stats.go", Line: 7}, ReceivedAt: time.Now().UTC()}
	w.store.add(tk)
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	var status string
	for _, c := range w.sim.Comments(repo, pr) {
		if strings.Contains(c.Body, "agentbot:task=Q1") {
			status = c.Body
		}
	}
	if status == "" {
		t.Fatal("no status comment on the pull request")
	}
	assertInert(t, "status comment", status)
	replies := 0
	for _, c := range w.sim.ReviewComments(repo, pr) {
		if c.InReplyTo == rc {
			replies++
			assertInert(t, "thread reply", c.Body)
		}
	}
	if replies != 1 {
		t.Errorf("%d replies in the thread; want 1", replies)
	}
}
