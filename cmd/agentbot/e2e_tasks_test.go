package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// The end-to-end tests of a task's run beyond the plain fix: approvals,
// one task at a time per issue, follow-ups from review threads, the
// repository's trigger label and the setup phase.

// waitState waits until task id is in state want; a final state on the
// way is a failure.
func waitState(t *testing.T, w *demo.World, id string, want app.State) queue.Record {
	t.Helper()
	for deadline := time.Now().Add(e2eTimeout); ; time.Sleep(50 * time.Millisecond) {
		rec, err := w.Store.Task(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State == want {
			return rec
		}
		if rec.State.Final() || time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s); want %s", id, rec.State, rec.Step, want)
		}
	}
}

// statusOf is the body of task id's status comment on the world's issue.
func statusOf(w *demo.World, id string) string {
	for _, c := range w.Sim.Comments(w.Repo, w.Issue) {
		if strings.Contains(c.Body, "agentbot:task="+id) {
			return c.Body
		}
	}
	return ""
}

// loopState is the agent loop's saved state of task id.
func loopState(t *testing.T, w *demo.World, id string) agent.State {
	t.Helper()
	raw, err := w.Store.LoadState(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var st agent.State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// humanWrites is the quick policy with every write paused for an approver.
const humanWrites = quickPolicy + "tools: {write: human}\n"

func TestApproveResumesThePausedFix(t *testing.T) {
	t.Parallel()
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: humanWrites}}, nil)
	ctx := t.Context()
	if err := w.Sim.SetPermission(w.Repo, "grace", "maintain"); err != nil {
		t.Fatal(err)
	}
	_, none, err := w.DeliverComment(ctx, "grace", "/agent approve")
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, none); rec.State != app.StateRefused || !strings.Contains(statusOf(w, none), "No task on #1 is waiting for approval.") {
		t.Errorf("approve with nothing paused: %s\n%s", rec.State, statusOf(w, none))
	}

	_, fix, err := w.DeliverComment(ctx, demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, w, fix, app.StateAwaitingApproval)
	// The record says so first, then the status comment: an approver who
	// answers the comment finds the task waiting.
	for deadline := time.Now().Add(e2eTimeout); ; time.Sleep(20 * time.Millisecond) {
		s := statusOf(w, fix)
		if strings.Contains(s, "Waiting for approval") && strings.Contains(s, "edit_file") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status of the paused fix:\n%s", s)
		}
	}
	// The requester may write but is no approver.
	_, refused, err := w.DeliverComment(ctx, demo.Requester, "/agent approve")
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, refused); rec.State != app.StateRefused || !strings.Contains(statusOf(w, refused), "only approvers may approve or deny") {
		t.Errorf("approve by a writer: %s\n%s", rec.State, statusOf(w, refused))
	}
	if rec, _ := w.Store.Task(ctx, fix); rec.State != app.StateAwaitingApproval {
		t.Fatalf("the refused approval moved the fix to %s", rec.State)
	}

	_, approve, err := w.DeliverComment(ctx, "grace", "/agent approve")
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, approve); rec.State != app.StateSucceeded {
		t.Fatalf("approval ended %s (%s)", rec.State, rec.Step)
	}
	if rec := waitFinal(t, w, fix); rec.State != app.StateSucceeded {
		t.Fatalf("the approved fix ended %s (%s)", rec.State, rec.Step)
	}
	if s := statusOf(w, approve); !strings.Contains(s, "Approved by @grace") || !strings.Contains(s, "it ended **succeeded**") {
		t.Errorf("approval's reply:\n%s", s)
	}
	// The fix, resumed by the approval, still links its page; the
	// approval, answered at once, links none.
	if s := statusOf(w, fix); !strings.Contains(s, "**Done:** #2") || !strings.Contains(s, "[Follow this task](") {
		t.Errorf("status of the fix:\n%s", s)
	}
	if s := statusOf(w, approve); strings.Contains(s, "Follow this task") {
		t.Errorf("the approval links a page:\n%s", s)
	}
	st := loopState(t, w, fix)
	if len(st.Approvals) != 1 || st.Approvals[0].By != "grace" || !st.Approvals[0].Approved || st.Approvals[0].Tool != "edit_file" {
		t.Errorf("approvals %+v; want edit_file approved by grace", st.Approvals)
	}
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 {
		t.Fatalf("pull requests %+v; want one", prs)
	}
	src, _ := exec.Command("git", "--git-dir", filepath.Join(w.SimDir, "acme", "stats.git"), "show", prs[0].Pull.Head+":stats.go").Output()
	if !strings.Contains(string(src), "for i := 0;") {
		t.Errorf("the approved edit is not on the branch:\n%s", src)
	}
	assertCheckOnHead(t, w, prs[0].Pull.Head, "success")
	assertApprovalAudited(t, w, fix, approve)
}

func TestDeniedCallIsToldToTheModel(t *testing.T) {
	t.Parallel()
	// The sample's model edits (paused, then denied), then calls finish,
	// which the failing check refuses; its four iterations are then spent.
	policyYAML := humanWrites + "limits: {iterations: 4}\n"
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: policyYAML}}, nil)
	ctx := t.Context()
	if err := w.Sim.SetPermission(w.Repo, "grace", "admin"); err != nil {
		t.Fatal(err)
	}
	_, fix, err := w.DeliverComment(ctx, demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, w, fix, app.StateAwaitingApproval)
	_, deny, err := w.DeliverComment(ctx, "grace", "/agent deny")
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, deny); rec.State != app.StateSucceeded {
		t.Fatalf("denial ended %s (%s)", rec.State, rec.Step)
	}
	if s := statusOf(w, deny); !strings.Contains(s, "Denied by @grace") || !strings.Contains(s, "it ended **failed**") {
		t.Errorf("denial's reply:\n%s", s)
	}
	if rec := waitFinal(t, w, fix); rec.State != app.StateFailed {
		t.Errorf("the denied fix ended %s (%s); want failed", rec.State, rec.Step)
	}
	if s := statusOf(w, fix); !strings.Contains(s, "iterations: 4 steps taken") {
		t.Errorf("status of the denied fix:\n%s", s)
	}
	st := loopState(t, w, fix)
	if len(st.Approvals) != 1 || st.Approvals[0].By != "grace" || st.Approvals[0].Approved {
		t.Errorf("approvals %+v; want one denial by grace", st.Approvals)
	}
	told := false
	for _, m := range st.Messages {
		told = told || strings.Contains(m.Content, "@grace, an approver, denied this call")
	}
	if !told || st.Step != 4 {
		t.Errorf("the model was not told of the denial, or did not go on (%d steps)", st.Step)
	}
	if prs := w.Sim.PullRequests(w.Repo); len(prs) != 0 {
		t.Errorf("pull requests %+v; want none", prs)
	}
}

// assertCheckOnHead checks that the one check run of head's task is on
// the branch's head commit, where the pull request shows it.
func assertCheckOnHead(t *testing.T, w *demo.World, branch, conclusion string) {
	t.Helper()
	sha, err := w.Sim.BranchSHA(w.Repo, branch)
	if err != nil {
		t.Fatal(err)
	}
	var on []githubsim.CheckRun
	for _, c := range w.Sim.CheckRuns(w.Repo) {
		if c.HeadSHA == sha {
			on = append(on, c)
		}
	}
	if len(on) != 1 || on[0].Status != "completed" || on[0].Conclusion != conclusion || !strings.Contains(on[0].Summary, "| check |") {
		t.Errorf("check runs on %s's head %s: %+v; want one completed %s with the checks", branch, sha, on, conclusion)
	}
}

func TestTasksOnOneIssueRunOneAtATime(t *testing.T) {
	t.Parallel()
	// The first fix plays the sample's recorded fix; the second, asked
	// while it runs, fails on its iterations. The model answers in script
	// order, so two tasks that ran at once would take each other's steps.
	script, err := llmtest.Load(filepath.Join(sampleDir, "model.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	script.Steps = slices.Concat(script.Steps, unsafeModel.Steps)
	policyYAML := strings.Replace(slowCheckPolicy, "sleep 3", "sleep 5", 1) + "limits: {iterations: 4}\n"
	// Two slots for the installation: the second fix must wait on its
	// issue's lock, not on the installation's limit.
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: policyYAML}, script: &script,
		workerFlags: []string{"--max-per-installation", "2"}}, nil)
	ctx := t.Context()
	_, first, err := w.DeliverComment(ctx, demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, w, first, app.StateRunning)
	_, second, err := w.DeliverComment(ctx, demo.Requester, "/agent fix it differently")
	if err != nil {
		t.Fatal(err)
	}
	// stop and status never wait.
	_, status, err := w.DeliverComment(ctx, demo.Requester, "/agent status")
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, status); rec.State != app.StateSucceeded {
		t.Errorf("status ended %s", rec.State)
	}
	if rec, _ := w.Store.Task(ctx, first); rec.State.Final() {
		t.Fatalf("the first fix ended (%s) before status was answered: the test shows nothing", rec.State)
	}
	waiting := "waiting behind task " + first
	for deadline := time.Now().Add(e2eTimeout); ; time.Sleep(20 * time.Millisecond) {
		rec, err := w.Store.Task(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Step == waiting {
			break
		}
		if rec.State != app.StateQueued || time.Now().After(deadline) {
			t.Fatalf("second fix is %s (%s); want it %s", rec.State, rec.Step, waiting)
		}
	}
	if s := statusOf(w, second); !strings.Contains(s, "waiting behind task `"+first+"`") {
		t.Errorf("status of the waiting fix:\n%s", s)
	}
	if rec := waitFinal(t, w, first); rec.State != app.StateSucceeded {
		t.Fatalf("first fix ended %s (%s)", rec.State, rec.Step)
	}
	rec := waitFinal(t, w, second)
	if rec.State != app.StateFailed || !strings.Contains(statusOf(w, second), "iterations: 4 steps taken") {
		t.Errorf("second fix ended %s (%s); want failed on its iterations:\n%s", rec.State, rec.Step, statusOf(w, second))
	}
	if prs := w.Sim.PullRequests(w.Repo); len(prs) != 1 {
		t.Errorf("%d pull requests; want the first fix's", len(prs))
	}
}

func TestReviewCommentFollowUpIsAnsweredInItsThread(t *testing.T) {
	t.Parallel()
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: quickPolicy}, script: followUp(t)}, nil)
	ctx := t.Context()
	fixTo(t, w, app.StateSucceeded)
	const branch = "agent/1-sum-drops-the-first-sample"
	assertCheckOnHead(t, w, branch, "success")

	commentID, resp, err := w.Sim.DeliverReviewComment(ctx, w.Webhook, w.Repo, 2, demo.Requester, "stats.go", 3, "/agent also say what Sum of no samples is")
	if err != nil {
		t.Fatal(err)
	}
	id := acceptedTask(t, resp)
	if rec := waitFinal(t, w, id); rec.State != app.StateSucceeded {
		t.Fatalf("follow-up ended %s (%s)", rec.State, rec.Step)
	}
	var replies []githubsim.ReviewComment
	for _, c := range w.Sim.ReviewComments(w.Repo, 2) {
		if c.InReplyTo == commentID {
			replies = append(replies, c)
		}
	}
	if len(replies) != 1 || replies[0].Author != w.Sim.App().BotLogin || !strings.Contains(replies[0].Body, "**Done:** #2") {
		t.Errorf("replies in the review thread %+v; want one by the App saying Done", replies)
	}
	w.Issue = 2
	if s := statusOf(w, id); !strings.Contains(s, "**Done:** #2") {
		t.Errorf("status comment of the follow-up:\n%s", s)
	}
	// The follow-up's commit has its own check run; the fix's stays on
	// the commit before it.
	assertCheckOnHead(t, w, branch, "success")
	if runs := w.Sim.CheckRuns(w.Repo); len(runs) != 2 || runs[0].HeadSHA == runs[1].HeadSHA {
		t.Errorf("check runs %+v; want one on each commit", runs)
	}
}

// acceptedTask reads the task id from the intake's 202.
func acceptedTask(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var answer struct {
		Task string `json:"task"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusAccepted || answer.Task == "" {
		t.Fatalf("the webhook was not accepted: %s (%v)", resp.Status, err)
	}
	return answer.Task
}

func TestTheRepositorysTriggerLabelStartsAFix(t *testing.T) {
	t.Parallel()
	policyYAML := quickPolicy + "trigger: {label: \"bot:fix\"}\n"
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: policyYAML}}, nil)
	ctx := t.Context()
	label := func(name string) string {
		resp, err := w.Sim.DeliverLabeled(ctx, w.Webhook, w.Repo, w.Issue, name, demo.Requester)
		if err != nil {
			t.Fatal(err)
		}
		return acceptedTask(t, resp)
	}
	// The server's default label is not this repository's: no answer.
	for _, other := range []string{"bug", "agent:fix"} {
		if rec := waitFinal(t, w, label(other)); rec.State != app.StateRefused {
			t.Errorf("label %s: task ended %s; want refused", other, rec.State)
		}
	}
	if bot, _ := botComments(w, 0); len(bot) != 0 {
		t.Errorf("comments %+v after other labels; want none", bot)
	}
	if rec := waitFinal(t, w, label("bot:fix")); rec.State != app.StateSucceeded {
		t.Fatalf("label bot:fix: task ended %s (%s)", rec.State, rec.Step)
	}
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "Fixes #1") {
		t.Errorf("pull requests %+v; want one fixing #1", prs)
	}
	if bot, _ := botComments(w, 0); len(bot) != 1 || !strings.Contains(bot[0].Body, "**Done:** #2") {
		t.Errorf("comments %+v; want the one status comment", bot)
	}
}

func TestSetupPreparesTheTreeBeforeTheAgent(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		".gitignore": ".cache/\n",
		policy.PolicyPath: `version: 1
setup: {network: false, run: ["mkdir -p .cache && id -u > .cache/setup-by"]}
checks:
  - {name: prepared, run: 'test "$(cat .cache/setup-by)" = 65532'}
  - {name: fixed, run: "! grep -q 'i := 1' stats.go"}
paths: {allow: ["**/*.go"]}
`,
	}
	w := startWorld(t, worldOptions{files: files}, nil)
	_, id, err := w.DeliverComment(t.Context(), demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, id); rec.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", rec.State, rec.Step, statusOf(w, id))
	}
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "| prepared | ") {
		t.Fatalf("pull requests %+v; want one whose checks include prepared", prs)
	}
	out, err := exec.Command("git", "--git-dir", filepath.Join(w.SimDir, "acme", "stats.git"), "diff", "--name-only", "main..."+prs[0].Pull.Head).Output()
	if err != nil || string(out) != "stats.go\n" {
		t.Errorf("changed files %q (%v); want stats.go only, not the setup's cache", out, err)
	}
}

func TestFailingSetupEndsTheTaskSayingWhy(t *testing.T) {
	t.Parallel()
	policyYAML := `version: 1
setup: {network: false, run: ["echo 'go: module cache unreachable' >&2; exit 3"]}
checks:
  - {name: fixed, run: "! grep -q 'i := 1' stats.go"}
`
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: policyYAML}}, nil)
	commentID, id, err := w.DeliverComment(t.Context(), demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, id); rec.State != app.StateFailed {
		t.Fatalf("task ended %s (%s); want failed", rec.State, rec.Step)
	}
	s := statusOf(w, id)
	for _, want := range []string{"exited 3", "go: module cache unreachable", "the agent did not start"} {
		if !strings.Contains(s, want) {
			t.Errorf("status comment lacks %q:\n%s", want, s)
		}
	}
	if runs := w.Sim.CheckRuns(w.Repo); len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Errorf("check runs %+v; want one failure", runs)
	}
	_, command := botComments(w, commentID)
	if r := reactionsBy(command, w.Sim.App().BotLogin); !slices.Equal(r, []string{"eyes", "confused"}) {
		t.Errorf("reactions %v; want eyes then confused", r)
	}
}
