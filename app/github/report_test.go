package github_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// faults are the failures GitHub answers that agentbot must ride out: a
// server error, a secondary rate limit (429 and 403 with Retry-After) and a
// primary one.
var faults = []struct {
	name  string
	fault githubsim.Fault
}{
	{"5xx", githubsim.Fault{Status: 502, Times: 2}},
	{"429", githubsim.Fault{Status: 429, RetryAfter: 3 * time.Second, Times: 1}},
	{"secondary 403", githubsim.Fault{Status: 403, Secondary: true, RetryAfter: 2 * time.Second, Times: 1}},
	{"primary 403", githubsim.Fault{Status: 403, RateLimitReset: time.Now().Add(30 * time.Second), Times: 1}},
}

func TestStatusCommentIsPostedOnceUnderFaults(t *testing.T) {
	t.Parallel()
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			w := newWorld(t)
			w.addRepo(t, "acme/a", nil)
			n, err := w.sim.AddIssue("acme/a", "ada", "flaky test", "/agent fix")
			if err != nil {
				t.Fatal(err)
			}
			inst := w.installation(t, "acme/a")
			ctx := t.Context()
			w.sim.Inject("POST", "/repos/acme/a/issues/*/comments", f.fault)
			w.sim.Inject("PATCH", "/repos/acme/a/issues/comments/*", f.fault)
			status := inst.StatusComment("acme/a", n, "T1")
			for _, body := range []string{"Queued.", "Running: step 1.", "Done: #2"} {
				if err := status.Set(ctx, body); err != nil {
					t.Fatalf("Set(%q): %v", body, err)
				}
			}
			cs := w.sim.Comments("acme/a", n)
			if len(cs) != 1 {
				t.Fatalf("%d comments, want 1: %+v", len(cs), cs)
			}
			if !strings.HasSuffix(cs[0].Body, "\nDone: #2") || !strings.Contains(cs[0].Body, "<!-- agentbot:task=T1 -->") {
				t.Errorf("comment says %q", cs[0].Body)
			}
			if cs[0].Edits != 2 {
				t.Errorf("%d edits, want 2", cs[0].Edits)
			}
			if len(*w.sleeps) == 0 {
				t.Error("no retry happened: the fault was not met")
			}
		})
	}
}

// TestCreatesSurviveALostAnswer is the case looking first exists for:
// GitHub created the comment or pull request, but agentbot saw a 502.
func TestCreatesSurviveALostAnswer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{"main.go": "package main\n"})
	w.push(t, "acme/a", "agent/1-fix", map[string]string{"main.go": "package main // fixed\n"})
	n, _ := w.sim.AddIssue("acme/a", "ada", "bug", "/agent fix")
	inst := w.installation(t, "acme/a")
	ctx := t.Context()

	w.sent.loseAnswer(fmt.Sprintf("POST /repos/acme/a/issues/%d/comments", n))
	status := inst.StatusComment("acme/a", n, "T1")
	if err := status.Set(ctx, "Queued."); err != nil {
		t.Fatal(err)
	}
	if cs := w.sim.Comments("acme/a", n); len(cs) != 1 || status.ID() != cs[0].ID || !strings.HasSuffix(cs[0].Body, "Queued.") {
		t.Errorf("comments %+v, status id %d", cs, status.ID())
	}

	w.sent.loseAnswer("POST /repos/acme/a/pulls")
	pr, err := inst.EnsurePullRequest(ctx, "acme/a", app.PullRequestDraft{Head: "agent/1-fix", Base: "main", Title: "Fix", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if prs := w.sim.PullRequests("acme/a"); len(prs) != 1 || pr.Number != prs[0].Number {
		t.Errorf("pull requests %+v, got %+v", prs, pr)
	}
	if got := w.sent.count("POST /repos/acme/a/pulls"); got != 1 {
		t.Errorf("%d POSTs of the pull request, want 1", got)
	}
}

func TestStatusCommentIsFoundAgainAfterARestart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", nil)
	n, _ := w.sim.AddIssue("acme/a", "ada", "bug", "/agent fix")
	ctx := t.Context()
	// Another task's status and a user quoting the marker must not be taken.
	if err := w.installation(t, "acme/a").StatusComment("acme/a", n, "T0").Set(ctx, "older task"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.AddComment("acme/a", n, "ada", "<!-- agentbot:task=T1 -->\nquoted by a user"); err != nil {
		t.Fatal(err)
	}
	// A long discussion puts the status comment beyond the first page.
	for i := range 120 {
		if _, err := w.sim.AddComment("acme/a", n, "bob", fmt.Sprintf("comment %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.installation(t, "acme/a").StatusComment("acme/a", n, "T1").Set(ctx, "Running: step 3."); err != nil {
		t.Fatal(err)
	}
	// A new process: no cache, no remembered comment id.
	after := w.installation(t, "acme/a").StatusComment("acme/a", n, "T1")
	if err := after.Set(ctx, "Done."); err != nil {
		t.Fatal(err)
	}
	var mine []githubsim.Comment
	for _, c := range w.sim.Comments("acme/a", n) {
		if strings.Contains(c.Body, "task=T1") && c.Author != "ada" {
			mine = append(mine, c)
		}
	}
	if len(mine) != 1 || !strings.HasSuffix(mine[0].Body, "\nDone.") || mine[0].ID != after.ID() {
		t.Errorf("status comments of T1: %+v", mine)
	}
	if got := len(w.sim.Comments("acme/a", n)); got != 123 {
		t.Errorf("%d comments in the thread, want 123", got)
	}
}

func TestLongStatusIsTrimmedToGitHubsLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", nil)
	n, _ := w.sim.AddIssue("acme/a", "ada", "bug", "/agent fix")
	long := "Summary\n" + strings.Repeat("a line of test output\n", 10_000) + "FAIL: TestX\n"
	if err := w.installation(t, "acme/a").StatusComment("acme/a", n, "T1").Set(t.Context(), long); err != nil {
		t.Fatal(err)
	}
	cs := w.sim.Comments("acme/a", n)
	if len(cs) != 1 {
		t.Fatalf("%d comments", len(cs))
	}
	b := cs[0].Body
	if len(b) > app.MaxTextLength || !strings.Contains(b, "Summary") || !strings.HasSuffix(b, "FAIL: TestX\n") || !strings.Contains(b, "characters cut") {
		t.Errorf("body of %d bytes: %q … %q", len(b), b[:80], b[len(b)-80:])
	}
}

func TestReactionsOnIssueAndReviewComments(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", nil)
	n, _ := w.sim.AddIssue("acme/a", "ada", "bug", "")
	id, err := w.sim.AddComment("acme/a", n, "ada", "/agent fix")
	if err != nil {
		t.Fatal(err)
	}
	inst := w.installation(t, "acme/a")
	ctx := t.Context()
	task := &app.Task{Repo: "acme/a", Number: n, CommentID: id}
	w.sim.Inject("POST", "/repos/acme/a/issues/comments/*/reactions", githubsim.Fault{Status: 500, Times: 1})
	for _, r := range []app.Reaction{app.ReactionReceived, app.ReactionReceived, app.ReactionDone} {
		if err := inst.React(ctx, task, r); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range w.sim.Comments("acme/a", n)[0].Reactions {
		got = append(got, r.Content)
	}
	if strings.Join(got, ",") != "eyes,rocket" {
		t.Errorf("reactions %v, want eyes, rocket", got)
	}
	// A label trigger has no comment: nothing to react to, no error.
	if err := inst.React(ctx, &app.Task{Repo: "acme/a", Number: n}, app.ReactionFailed); err != nil {
		t.Error(err)
	}
}

func TestReactionOnAReviewComment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	n, id := w.reviewComment(t)
	task := &app.Task{Repo: "acme/a", Number: n, IsPR: true, ReviewComment: &app.ReviewComment{ID: id, Path: "main.go", Line: 3}}
	if err := w.installation(t, "acme/a").React(t.Context(), task, app.ReactionReceived); err != nil {
		t.Fatal(err)
	}
	rcs := w.sim.ReviewComments("acme/a", n)
	if len(rcs) != 1 || len(rcs[0].Reactions) != 1 || rcs[0].Reactions[0].Content != "eyes" {
		t.Errorf("review comments %+v", rcs)
	}
}

func TestCheckRunIsCreatedOnceAndCompleted(t *testing.T) {
	t.Parallel()
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			w := newWorld(t)
			w.addRepo(t, "acme/a", map[string]string{"go.mod": "module a\n"})
			sha, err := w.sim.BranchSHA("acme/a", "main")
			if err != nil {
				t.Fatal(err)
			}
			inst := w.installation(t, "acme/a")
			ctx := t.Context()
			w.sim.Inject("POST", "/repos/acme/a/check-runs", f.fault)
			w.sim.Inject("PATCH", "/repos/acme/a/check-runs/*", f.fault)
			run := inst.CheckRun("acme/a", sha, "T1", 0)
			if err := run.Complete(ctx, app.ConclusionFailure, app.CheckOutput{Title: "Failed", Summary: "first"}); err != nil {
				t.Fatal(err)
			}
			// A resumed worker knows the id from the task's state.
			resumed := inst.CheckRun("acme/a", sha, "T1", run.ID())
			trace := strings.Repeat("tool call\n", 10_000)
			if err := resumed.Complete(ctx, app.ConclusionSuccess, app.CheckOutput{Title: "Done", Summary: "**checks passed**", Text: trace}); err != nil {
				t.Fatal(err)
			}
			runs := w.sim.CheckRuns("acme/a")
			if len(runs) != 1 {
				t.Fatalf("%d check runs, want 1", len(runs))
			}
			r := runs[0]
			if r.Name != app.CheckName || r.HeadSHA != sha || r.ExternalID != "T1" || r.Status != "completed" ||
				r.Conclusion != "success" || r.Summary != "**checks passed**" || len(r.Text) > app.MaxTextLength {
				t.Errorf("check run %+v", r)
			}
		})
	}
}

func TestPullRequestIsOpenedOnceUnderFaults(t *testing.T) {
	t.Parallel()
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			w := newWorld(t)
			w.addRepo(t, "acme/a", map[string]string{"main.go": "package main\n"})
			for _, u := range []string{"rev1", "rev2"} {
				if err := w.sim.SetPermission("acme/a", u, "write"); err != nil {
					t.Fatal(err)
				}
			}
			w.push(t, "acme/a", "agent/1-fix", map[string]string{"main.go": "package main // fixed\n"})
			inst := w.installation(t, "acme/a")
			ctx := t.Context()
			for _, route := range []string{"/repos/acme/a/pulls", "/repos/acme/a/issues/*/labels", "/repos/acme/a/pulls/*/requested_reviewers"} {
				w.sim.Inject("POST", route, f.fault)
			}
			d := app.PullRequestDraft{
				Head: "agent/1-fix", Base: "main", Title: "Fix #1", Body: "What changed and why.",
				Spec: app.PullRequestSpec{Draft: true, Labels: []string{"agent"}, Reviewers: []string{"rev1", "rev2"}},
			}
			first, err := inst.EnsurePullRequest(ctx, "acme/a", d)
			if err != nil {
				t.Fatal(err)
			}
			again, err := w.installation(t, "acme/a").EnsurePullRequest(ctx, "acme/a", d)
			if err != nil {
				t.Fatal(err)
			}
			if !first.Created || again.Created || again.Number != first.Number || first.HTMLURL == "" {
				t.Errorf("first %+v, again %+v", first, again)
			}
			prs := w.sim.PullRequests("acme/a")
			if len(prs) != 1 {
				t.Fatalf("%d pull requests, want 1", len(prs))
			}
			p := prs[0]
			if p.Title != "Fix #1" || p.Body != "What changed and why." || !p.Pull.Draft || p.Pull.Head != "agent/1-fix" ||
				strings.Join(p.Labels, ",") != "agent" || strings.Join(p.Pull.Reviewers, ",") != "rev1,rev2" {
				t.Errorf("pull request %+v %+v", p, p.Pull)
			}
		})
	}
}

// BenchmarkStatusCommentEdit measures one status update as a running task
// makes it: a PATCH of the known comment through the installation client.
func BenchmarkStatusCommentEdit(b *testing.B) {
	sim, err := githubsim.New(githubsim.Options{AppKey: githubsim.SharedKey()})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	inst := sim.AddInstallation("acme")
	if err := sim.AddRepo(inst, "acme/a", nil); err != nil {
		b.Fatal(err)
	}
	n, _ := sim.AddIssue("acme/a", "ada", "bug", "/agent fix")
	gh, err := github.NewApp(github.Config{AppID: sim.App().ID, PrivateKey: sim.App().PrivateKeyPEM, APIURL: sim.APIURL()})
	if err != nil {
		b.Fatal(err)
	}
	client, _ := gh.Installation(inst, "acme/a")
	status := client.StatusComment("acme/a", n, "T1")
	ctx := b.Context()
	if err := status.Set(ctx, "Queued."); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if err := status.Set(ctx, fmt.Sprintf("Running: step %d.", i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFitText(b *testing.B) {
	trace := strings.Repeat("=== RUN TestSomething\n--- FAIL: TestSomething (0.01s)\n", 20_000)
	b.SetBytes(int64(len(trace)))
	for b.Loop() {
		app.FitText(trace, app.MaxTextLength)
	}
}

func TestReplyInThreadIsPostedOnceUnderFaults(t *testing.T) {
	t.Parallel()
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			w := newWorld(t)
			n, id := w.reviewComment(t)
			w.sim.Inject("POST", "/repos/acme/a/pulls/*/comments/*/replies", f.fault)
			inst := w.installation(t, "acme/a")
			// Twice, as a retried task would.
			for range 2 {
				if err := inst.ReplyInThread(t.Context(), "acme/a", n, id, "T1", "Done: pushed abc."); err != nil {
					t.Fatal(err)
				}
			}
			var replies []githubsim.ReviewComment
			for _, c := range w.sim.ReviewComments("acme/a", n) {
				if c.InReplyTo == id {
					replies = append(replies, c)
				}
			}
			if len(replies) != 1 || !strings.Contains(replies[0].Body, "Done: pushed abc.") || replies[0].Author != w.sim.App().BotLogin {
				t.Errorf("replies %+v; want one by the App", replies)
			}
		})
	}
}

// reviewComment opens a pull request in a new repository acme/a and leaves
// "/agent rename f" on its main.go line 3 as ada; it returns the pull
// request's number and the comment's id.
func (w *world) reviewComment(t *testing.T) (pr int, comment int64) {
	t.Helper()
	w.addRepo(t, "acme/a", map[string]string{"main.go": "package main\n"})
	w.push(t, "acme/a", "feature", map[string]string{"main.go": "package main\n\nfunc f() {}\n"})
	n, err := w.sim.AddPullRequest("acme/a", githubsim.PullOptions{Author: "ada", Title: "f", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	intake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer intake.Close()
	id, _, err := w.sim.DeliverReviewComment(t.Context(), intake.URL, "acme/a", n, "ada", "main.go", 3, "/agent rename f")
	if err != nil {
		t.Fatal(err)
	}
	return n, id
}
