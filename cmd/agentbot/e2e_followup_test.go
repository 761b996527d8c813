package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// The sample's fix goes to this branch and opens pull request #2.
const sampleBranch = "agent/1-sum-drops-the-first-sample"

// sampleThen is the sample's recorded fix followed by steps.
func sampleThen(t *testing.T, steps ...llmtest.Step) *llmtest.Script {
	t.Helper()
	s, err := llmtest.Load(filepath.Join(sampleDir, "model.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.Steps = append(s.Steps, steps...)
	return &s
}

// edit is an edit_file call.
func edit(path, old, replacement string) llmtest.Call {
	args, _ := json.Marshal(map[string]string{"path": path, "old_string": old, "new_string": replacement})
	return llmtest.Call{Name: "edit_file", Arguments: llmtest.Arguments(args)}
}

// branchLog is the subjects of the commits on the agent's branch, newest
// first.
func branchLog(t *testing.T, w *demo.World) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", filepath.Join(w.SimDir, "acme", "stats.git"), "log", "--format=%s", "main.."+sampleBranch).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// firstRequestAfter is the text of the first model request after the
// first n: the task message of the task that began there.
func firstRequestAfter(t *testing.T, w *demo.World, n int) string {
	t.Helper()
	reqs := w.LLM.Requests()
	if len(reqs) <= n {
		t.Fatalf("%d model requests; want more than %d", len(reqs), n)
	}
	var b strings.Builder
	for _, m := range reqs[n].Messages {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

func TestReviewIsOneFollowUpAnsweredInEachThread(t *testing.T) {
	t.Parallel()
	script := sampleThen(t,
		llmtest.Step{ToolCalls: []llmtest.Call{
			edit("stats.go", "// Sum returns the sum of xs.", "// Sum returns the sum of xs; 0 for none."),
			edit("stats.go", "// Mean returns the arithmetic mean of xs, or 0 for no samples.", "// Mean returns the arithmetic mean of xs; 0 for none."),
			edit("stats_test.go", "func TestSum(t *testing.T) {", "// TestSum covers empty, single and mixed-sign samples.\nfunc TestSum(t *testing.T) {"),
		}},
		llmtest.Step{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Say what Sum and Mean give for no samples"}`}}},
	)
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: quickPolicy}, script: script}, nil)
	ctx := t.Context()
	fixTo(t, w, app.StateSucceeded)
	before := len(w.LLM.Requests())

	// Three comments on paths the agent may change (two on lines it did
	// not touch), one on a path it may not.
	comments := []githubsim.InlineComment{
		{Path: "stats.go", Line: 4, Body: "Say what Sum of no samples is."},
		{Path: "stats.go", Line: 13, Body: "Same for Mean."},
		{Path: "stats_test.go", Line: 5, Body: "Document what TestSum covers."},
		{Path: "README.md", Line: 1, Body: "Mention the fix here."},
	}
	_, ids, resp, err := w.Sim.DeliverReviewWithComments(ctx, w.Webhook, w.Repo, 2, demo.Requester, "CHANGES_REQUESTED", "", comments)
	if err != nil {
		t.Fatal(err)
	}
	id := acceptedTask(t, resp)
	if rec := waitFinal(t, w, id); rec.State != app.StateSucceeded {
		t.Fatalf("review follow-up ended %s (%s)", rec.State, rec.Step)
	}

	task := firstRequestAfter(t, w, before)
	for _, c := range comments[:3] {
		if !strings.Contains(task, c.Body) {
			t.Errorf("the model's task lacks the comment %q:\n%s", c.Body, task)
		}
	}
	if log := branchLog(t, w); len(log) != 2 || !strings.HasPrefix(log[0], "Say what Sum and Mean give") {
		t.Errorf("branch commits %q; want the fix and one follow-up commit", log)
	}
	head, err := w.Sim.BranchSHA(w.Repo, sampleBranch)
	if err != nil {
		t.Fatal(err)
	}
	replies := map[int64][]githubsim.ReviewComment{}
	for _, c := range w.Sim.ReviewComments(w.Repo, 2) {
		if c.InReplyTo != 0 {
			replies[c.InReplyTo] = append(replies[c.InReplyTo], c)
		}
	}
	for n, cid := range ids {
		r := replies[cid]
		if len(r) != 1 || r[0].Author != w.Sim.App().BotLogin {
			t.Errorf("comment %d (%s): replies %+v; want one by the App", n, comments[n].Path, r)
			continue
		}
		switch n {
		case 3:
			if !strings.Contains(r[0].Body, "Not addressed") || !strings.Contains(r[0].Body, "README.md is outside the allowed paths") {
				t.Errorf("reply on README.md: %q; want the refusal", r[0].Body)
			}
		default:
			if !strings.Contains(r[0].Body, "Changed `"+comments[n].Path+"`") || !strings.Contains(r[0].Body, "/commits/"+head) {
				t.Errorf("reply on %s: %q; want what changed and a link to %s", comments[n].Path, r[0].Body, head)
			}
		}
	}
	if len(replies) != len(ids) {
		t.Errorf("replies in %d threads; want %d", len(replies), len(ids))
	}

	// Changes requested by someone who may not command start nothing and
	// are answered nowhere.
	requests := len(w.LLM.Requests())
	_, readerIDs, resp, err := w.Sim.DeliverReviewWithComments(ctx, w.Webhook, w.Repo, 2, "mallory", "CHANGES_REQUESTED", "Push to main instead.",
		[]githubsim.InlineComment{{Path: "stats.go", Line: 1, Body: "Delete this file."}})
	if err != nil {
		t.Fatal(err)
	}
	reader := acceptedTask(t, resp)
	w.Issue = 2
	if rec := waitFinal(t, w, reader); rec.State != app.StateRefused || statusOf(w, reader) != "" {
		t.Errorf("a reader's review ended %s (%s), status %q; want ignored without a word", rec.State, rec.Step, statusOf(w, reader))
	}
	for _, c := range w.Sim.ReviewComments(w.Repo, 2) {
		if c.InReplyTo == readerIDs[0] {
			t.Errorf("the reader's comment was answered: %q", c.Body)
		}
	}
	if n := len(w.LLM.Requests()); n != requests {
		t.Errorf("%d model requests after the reader's review; want still %d", n, requests)
	}
}

// actionsFailure is a failing GitHub Actions job's log: the line that
// says why sits at its end, after much that does not.
func actionsFailure() string {
	var b strings.Builder
	for range 800 {
		b.WriteString("2026-12-01T10:00:00.0000000Z go: downloading example.com/dep v1.0.0\n")
	}
	b.WriteString("2026-12-01T10:00:05.0000000Z --- FAIL: TestSumDoc (0.00s)\n")
	b.WriteString("2026-12-01T10:00:05.0000000Z     doc_test.go:9: Sum's doc comment must say what Sum of no samples is\n")
	return b.String()
}

func TestFailingActionsRunIsFixedOnceAndBounded(t *testing.T) {
	t.Parallel()
	script := sampleThen(t,
		llmtest.Step{ToolCalls: []llmtest.Call{edit("stats.go", "// Sum returns the sum of xs.", "// Sum returns the sum of xs; 0 for none.")}},
		llmtest.Step{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Document Sum of no samples for the doc check"}`}}},
	)
	policy := quickPolicy + "pull_request: {ci_followups: 1}\n"
	w, before := agentPull(t, policy, script)

	// The check passes on main, so the pull request broke it. The
	// App pushed the failing head, so it is the events' sender.
	bot := w.Sim.App().BotLogin
	addCIRun(t, w, githubsim.CIRunOptions{Ref: "main", Name: "test", Conclusion: "success", Actions: true})
	run := addCIRun(t, w, githubsim.CIRunOptions{Ref: sampleBranch, Name: "test", Conclusion: "failure", Actions: true, Actor: bot,
		Title: "Process completed with exit code 1", Log: actionsFailure(),
		Annotations: []githubsim.Annotation{{Path: "stats.go", StartLine: 4, Message: "doc comment incomplete"}}})
	id := deliverCIRun(t, w, run)
	// The same failure reported again, as the check run of the same job,
	// is no second follow-up.
	again := run
	again.Actions = false
	dup := deliverCIRun(t, w, again)
	oneFollowsUp(t, w, id, dup)
	task := firstRequestAfter(t, w, before)
	for _, want := range []string{"doc_test.go:9: Sum's doc comment must say what Sum of no samples is", "stats.go:4 failure: doc comment incomplete", "Process completed with exit code 1"} {
		if !strings.Contains(task, want) {
			t.Errorf("the model's task lacks %q", want)
		}
	}
	if strings.Contains(task, strings.Repeat("go: downloading example.com/dep v1.0.0\n2026-12-01T10:00:00.0000000Z ", 300)) {
		t.Error("the model's task holds the whole log, not its tail")
	}
	if log := branchLog(t, w); len(log) != 2 || !strings.HasPrefix(log[0], "Document Sum of no samples") {
		t.Errorf("branch commits %q; want the fix and the CI follow-up", log)
	}
	// The follow-up credits who asked for the pull request, by the
	// address GitHub attributes to their account; never the App.
	adaID, _ := w.Sim.UserID(demo.Requester)
	want := fmt.Sprintf("Co-authored-by: %s <%d+%s@users.noreply.github.com>", demo.Requester, adaID, demo.Requester)
	if trailers := coAuthorsOf(t, w, sampleBranch); len(trailers) != 1 || trailers[0] != want {
		t.Errorf("the CI follow-up's co-authors %q; want %q", trailers, want)
	}

	// CI fails on the follow-up's commit too: the one follow-up the
	// policy allows is used.
	next := addCIRun(t, w, githubsim.CIRunOptions{Ref: sampleBranch, Name: "test", Conclusion: "failure", Actions: true, Actor: bot, Log: "FAIL\n"})
	capped := deliverCIRun(t, w, next)
	if rec := waitFinal(t, w, capped); rec.State != app.StateRefused {
		t.Errorf("the follow-up past the cap ended %s (%s); want refused", rec.State, rec.Step)
	}
	if s := statusOf(w, capped); !strings.Contains(s, "ci_followups") || !strings.Contains(s, "/agent fix-ci") {
		t.Errorf("status past the cap:\n%s", s)
	}
	if log := branchLog(t, w); len(log) != 2 {
		t.Errorf("branch commits %q; want no commit past the cap", log)
	}
}

func TestCheckFailingOnMainTooStartsNoFollowUp(t *testing.T) {
	t.Parallel()
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: quickPolicy}}, nil)
	fixTo(t, w, app.StateSucceeded)
	before := len(w.LLM.Requests())
	w.Issue = 2

	older := addCIRun(t, w, githubsim.CIRunOptions{Ref: "main", Name: "lint", Conclusion: "success"})
	onMain := addCIRun(t, w, githubsim.CIRunOptions{Ref: "main", Name: "lint", Conclusion: "failure", Summary: "vet: broken"})
	run := addCIRun(t, w, githubsim.CIRunOptions{Ref: sampleBranch, Name: "lint", Conclusion: "failure", Summary: "vet: broken"})
	id := deliverCIRun(t, w, run)
	if rec := waitFinal(t, w, id); rec.State != app.StateRefused {
		t.Fatalf("ended %s (%s); want no follow-up", rec.State, rec.Step)
	}
	s := statusOf(w, id)
	if !strings.Contains(s, "this check fails on main too") || !strings.Contains(s, "/runs/"+strconv.FormatInt(onMain.RunID, 10)) || strings.Contains(s, "/runs/"+strconv.FormatInt(older.RunID, 10)) {
		t.Errorf("status:\n%s\nwant \"this check fails on main too\" with a link to the latest run on main", s)
	}
	// The same failure reported again is not answered twice.
	again := run
	again.Actions = true
	dup := deliverCIRun(t, w, again)
	if rec := waitFinal(t, w, dup); rec.State != app.StateRefused || statusOf(w, dup) != "" {
		t.Errorf("the same failure again ended %s (%s), status %q; want ignored without a word", rec.State, rec.Step, statusOf(w, dup))
	}
	if n := len(w.LLM.Requests()); n != before {
		t.Errorf("%d model requests after the fix's %d; want none", n, before)
	}
	if log := branchLog(t, w); len(log) != 1 {
		t.Errorf("branch commits %q; want only the fix", log)
	}
}

func TestSecondWorkflowFailingOnAHeadGetsItsFollowUp(t *testing.T) {
	t.Parallel()
	script := sampleThen(t,
		llmtest.Step{ToolCalls: []llmtest.Call{edit("stats.go", "// Mean returns the arithmetic mean of xs, or 0 for no samples.", "// Mean returns the arithmetic mean of xs; 0 for none.")}},
		llmtest.Step{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Shorten Mean's doc for the vet check"}`}}},
	)
	w, before := agentPull(t, quickPolicy, script)
	bot := w.Sim.App().BotLogin

	// "Test" fails on the head and on main: not the pull request's doing.
	onMain := addCIRun(t, w, githubsim.CIRunOptions{Ref: "main", Name: "Test", Conclusion: "failure", Actions: true})
	first := deliverCIRun(t, w, addCIRun(t, w, githubsim.CIRunOptions{Ref: sampleBranch, Name: "Test", Conclusion: "failure", Actions: true, Actor: bot, Log: "FAIL: flaky\n"}))
	if rec := waitFinal(t, w, first); rec.State != app.StateRefused || !strings.Contains(statusOf(w, first), "this check fails on main too") {
		t.Fatalf("Test failing on main too ended %s (%s), status:\n%s", rec.State, rec.Step, statusOf(w, first))
	}
	// A minute later "Vet" fails on the same head, and not on main: the
	// pull request broke it, and it is answered in its own right.
	addCIRun(t, w, githubsim.CIRunOptions{Ref: "main", Name: "Vet", Conclusion: "success", Actions: true})
	second := deliverCIRun(t, w, addCIRun(t, w, githubsim.CIRunOptions{Ref: sampleBranch, Name: "Vet", Conclusion: "failure", Actions: true, Actor: bot,
		Log: "stats.go:13: Mean's doc comment is too long\n"}))
	if rec := waitFinal(t, w, second); rec.State != app.StateSucceeded {
		t.Fatalf("Vet's follow-up ended %s (%s); status:\n%s", rec.State, rec.Step, statusOf(w, second))
	}
	task := firstRequestAfter(t, w, before)
	for _, want := range []string{"### Vet (github-actions, failure)", "Mean's doc comment is too long", "(Test fails on main too; it is not this pull request's to fix: leave it.)"} {
		if !strings.Contains(task, want) {
			t.Errorf("the model's task lacks %q:\n%s", want, task)
		}
	}
	if strings.Contains(task, "FAIL: flaky") {
		t.Errorf("the model's task holds the log of Test, which fails on main too:\n%s", task)
	}
	s := statusOf(w, second)
	for _, want := range []string{"- `Vet`: a follow-up addresses it",
		"- `Test`: this check fails on main too ([its latest run there](", "/runs/" + strconv.FormatInt(onMain.RunID, 10), "as task `" + first + "` answered"} {
		if !strings.Contains(s, want) {
			t.Errorf("status lacks %q:\n%s", want, s)
		}
	}
	if log := branchLog(t, w); len(log) != 2 || !strings.HasPrefix(log[0], "Shorten Mean's doc") {
		t.Errorf("branch commits %q; want the fix and Vet's follow-up", log)
	}
}

func TestChecksFailingTogetherMakeOneFollowUp(t *testing.T) {
	t.Parallel()
	script := sampleThen(t,
		llmtest.Step{ToolCalls: []llmtest.Call{
			edit("stats.go", "// Sum returns the sum of xs.", "// Sum returns the sum of xs; 0 for none."),
			edit("stats.go", "// Mean returns the arithmetic mean of xs, or 0 for no samples.", "// Mean returns the arithmetic mean of xs; 0 for none."),
		}},
		llmtest.Step{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Document Sum and Mean for the doc and vet checks"}`}}},
	)
	w, before := agentPull(t, quickPolicy, script)
	bot := w.Sim.App().BotLogin

	// Two workflows fail on the head, and pass on main, before either
	// event is answered.
	var ids []string
	for name, log := range map[string]string{"Doc": "stats.go:4: Sum's doc must say what no samples give\n", "Vet": "stats.go:13: Mean's doc comment is too long\n"} {
		addCIRun(t, w, githubsim.CIRunOptions{Ref: "main", Name: name, Conclusion: "success", Actions: true})
		run := addCIRun(t, w, githubsim.CIRunOptions{Ref: sampleBranch, Name: name, Conclusion: "failure", Actions: true, Actor: bot, Log: log})
		ids = append(ids, deliverCIRun(t, w, run))
	}
	one := oneFollowsUp(t, w, ids[0], ids[1])
	task := firstRequestAfter(t, w, before)
	for _, want := range []string{"### Doc (github-actions, failure)", "Sum's doc must say what no samples give", "### Vet (github-actions, failure)", "Mean's doc comment is too long"} {
		if !strings.Contains(task, want) {
			t.Errorf("the model's task lacks %q:\n%s", want, task)
		}
	}
	s := statusOf(w, one.ID)
	for _, want := range []string{"- `Doc`: a follow-up addresses it", "- `Vet`: a follow-up addresses it"} {
		if !strings.Contains(s, want) {
			t.Errorf("status lacks %q:\n%s", want, s)
		}
	}
	if log := branchLog(t, w); len(log) != 2 || !strings.HasPrefix(log[0], "Document Sum and Mean") {
		t.Errorf("branch commits %q; want the fix and one follow-up", log)
	}
}

// agentPull starts the world with policy and script, whose first task
// fixes the sample, and waits for the fix's pull request #2, the world's
// issue from then on. It returns the number of model requests the fix
// made.
func agentPull(t *testing.T, policyYAML string, script *llmtest.Script) (*demo.World, int) {
	t.Helper()
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: policyYAML}, script: script}, nil)
	fixTo(t, w, app.StateSucceeded)
	w.Issue = 2
	return w, len(w.LLM.Requests())
}

// oneFollowsUp waits for CI tasks a and b, started by failures on one
// head: either may run first, and one follows up on them, which it
// returns; the other ends without a word.
func oneFollowsUp(t *testing.T, w *demo.World, a, b string) queue.Record {
	t.Helper()
	one, other := waitFinal(t, w, a), waitFinal(t, w, b)
	if one.State == app.StateRefused {
		one, other = other, one
	}
	if one.State != app.StateSucceeded {
		t.Fatalf("CI follow-up ended %s (%s)", one.State, one.Step)
	}
	if other.State != app.StateRefused || statusOf(w, other.ID) != "" {
		t.Errorf("the other task on the same failures ended %s (%s), status %q; want it ended without a word", other.State, other.Step, statusOf(w, other.ID))
	}
	return one
}

// coAuthorsOf are the Co-authored-by trailers of the commit ref names.
func coAuthorsOf(t *testing.T, w *demo.World, ref string) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", filepath.Join(w.SimDir, "acme", "stats.git"), "log", "-1", "--format=%(trailers:key=Co-authored-by)", ref).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == '\n' })
}

// addCIRun records a CI run on the simulated GitHub.
func addCIRun(t *testing.T, w *demo.World, o githubsim.CIRunOptions) githubsim.CIRun {
	t.Helper()
	run, err := w.Sim.AddCIRun(w.Repo, o)
	if err != nil {
		t.Fatalf("add CI run %s on %s: %v", o.Name, o.Ref, err)
	}
	return run
}

// deliverCIRun delivers run's webhook and returns the task it queued.
func deliverCIRun(t *testing.T, w *demo.World, run githubsim.CIRun) string {
	t.Helper()
	resp, err := w.Sim.DeliverCIRun(t.Context(), w.Webhook, run)
	if err != nil {
		t.Fatalf("deliver CI run %d: %v", run.RunID, err)
	}
	return acceptedTask(t, resp)
}
