package outcome_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/outcome"
	"github.com/agentbot/agentbot/runner/workspace"
	githubsim "github.com/agentbot/agentbot/sim/github"
	"github.com/agentbot/agentbot/webhook"
)

// counter is the Metrics, counting calls per task.
type counter struct {
	mu               sync.Mutex
	merged, reverted map[string]int
}

func (c *counter) Merged(o app.TaskOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merged[o.Task]++
}

func (c *counter) Reverted(o app.TaskOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reverted[o.Task]++
}

// world is a simulated GitHub, a real Redis and a Recorder over both.
type world struct {
	sim      *githubsim.Server
	inst     int64
	outcomes *queue.Outcomes
	metrics  *counter
	rec      *outcome.Recorder
	hook     *httptest.Server
	payloads chan []byte
}

func newWorld(t *testing.T) *world {
	t.Helper()
	sim, err := githubsim.New(githubsim.Options{AppKey: githubsim.SharedKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	gh, err := github.NewApp(github.Config{AppID: sim.App().ID, PrivateKey: sim.App().PrivateKeyPEM, APIURL: sim.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{sim: sim, inst: sim.AddInstallation("acme"), outcomes: queue.NewOutcomes(rdb),
		metrics: &counter{merged: map[string]int{}, reverted: map[string]int{}}, payloads: make(chan []byte, 4)}
	w.rec, err = outcome.New(outcome.Config{Outcomes: w.outcomes, Tokens: gh, Metrics: w.metrics,
		Workspaces: workspace.NewManager(t.TempDir(), workspace.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	// The simulator delivers to the test, which hands the payload to
	// app's detectors as intake does.
	w.hook = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.payloads <- b
		rw.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(w.hook.Close)
	return w
}

// numbered returns the lines "prefix 1" … "prefix n".
func numbered(prefix string, n int) []string {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("%s %d", prefix, i+1))
	}
	return lines
}

func file(lines ...[]string) string {
	var b strings.Builder
	b.WriteString("package calc\n\n")
	for _, ls := range lines {
		for _, l := range ls {
			b.WriteString("// " + l + "\n")
		}
	}
	return b.String()
}

// agentPR makes repo with calc.go, the agent's branch adding ten lines to
// it and its pull request, and saves the task's outcome as the runner
// does.
func (w *world) agentPR(t *testing.T, repo, task string) (pr int, o app.TaskOutcome) {
	t.Helper()
	if err := w.sim.AddRepo(w.inst, repo, map[string]string{"calc.go": file(numbered("old", 3))}); err != nil {
		t.Fatal(err)
	}
	base, _ := w.sim.BranchSHA(repo, "main")
	if err := w.sim.CreateBranch(repo, "agent/1-fix", base); err != nil {
		t.Fatal(err)
	}
	pushed, err := w.sim.Commit(repo, "agent/1-fix", "agentbot[bot]", "Fix the sum", map[string]string{"calc.go": file(numbered("old", 3), numbered("agent", 10))})
	if err != nil {
		t.Fatal(err)
	}
	pr, err = w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "agentbot[bot]", Title: "Fix the sum", Head: "agent/1-fix"})
	if err != nil {
		t.Fatal(err)
	}
	o = app.TaskOutcome{Task: task, Repo: repo, Model: "m", State: app.StateSucceeded, ChecksPassed: true, PR: pr, Base: base, Pushed: pushed}
	if err := w.outcomes.Save(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	return pr, o
}

// event turns the next delivery into the outcome event intake queues.
func (w *world) event(t *testing.T, name string) app.OutcomeEvent {
	t.Helper()
	var body []byte
	select {
	case body = <-w.payloads:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
	}
	m, err := webhook.DetectMerge(name, body)
	if err != nil {
		t.Fatal(err)
	}
	reverts, err := webhook.DetectReverts(name, body)
	if err != nil {
		t.Fatal(err)
	}
	repo := strings.Split(strings.Split(string(body), `"full_name":"`)[1], `"`)[0]
	return app.OutcomeEvent{ID: "e-" + name, Delivery: "d", Event: name, InstallationID: w.inst, Repo: repo,
		CloneURL: w.sim.URL() + "/" + repo + ".git", Merge: m, Reverts: reverts, ReceivedAt: time.Now()}
}

func (w *world) merge(t *testing.T, repo string, pr int, method string) (string, app.OutcomeEvent) {
	t.Helper()
	sha, _, err := w.sim.DeliverMerge(t.Context(), w.hook.URL, repo, pr, method, "grace")
	if err != nil {
		t.Fatal(err)
	}
	e := w.event(t, "pull_request")
	if e.Merge == nil || e.Merge.Commit != sha {
		t.Fatalf("event %+v; want the merge as %s", e, sha)
	}
	return sha, e
}

func (w *world) process(t *testing.T, e app.OutcomeEvent) {
	t.Helper()
	if err := w.rec.ProcessEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
}

func (w *world) outcome(t *testing.T, task string) app.TaskOutcome {
	t.Helper()
	o, err := w.outcomes.Outcome(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestMergedSurvival(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		name   string
		method string
		review map[string]string // a reviewer's commit on the branch before the merge
		want   app.Survival
	}{
		{"merged untouched", githubsim.MergeCommit, nil, app.Survival{Kept: 10, Total: 10}},
		{"half its lines rewritten", githubsim.MergeCommit,
			map[string]string{"calc.go": file(numbered("old", 3), numbered("agent", 10)[:5], numbered("reviewer", 5))}, app.Survival{Kept: 5, Total: 10}},
		{"squashed with a line rewritten", githubsim.MergeSquash,
			map[string]string{"calc.go": file(numbered("old", 3), numbered("agent", 10)[:9], []string{"reviewer"})}, app.Survival{Kept: 9, Total: 10}},
		{"rebased with a file of the reviewer's", githubsim.MergeRebase,
			map[string]string{"calc_test.go": "package calc\n"}, app.Survival{Kept: 10, Total: 10}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, task := fmt.Sprintf("acme/calc%d", i), fmt.Sprintf("t%d", i)
			pr, _ := w.agentPR(t, repo, task)
			if c.review != nil {
				if _, err := w.sim.Commit(repo, "agent/1-fix", "grace", "Review", c.review); err != nil {
					t.Fatal(err)
				}
			}
			// Others merge into main meanwhile.
			if _, err := w.sim.Commit(repo, "main", "ada", "Docs", map[string]string{"README.md": "calc\n"}); err != nil {
				t.Fatal(err)
			}
			sha, e := w.merge(t, repo, pr, c.method)
			w.process(t, e)
			o := w.outcome(t, task)
			if !o.Merged || o.MergeCommit != sha || o.Survival == nil || *o.Survival != c.want {
				t.Fatalf("outcome %+v survival %+v; want merged as %s with %+v", o, o.Survival, sha, c.want)
			}
			if w.metrics.merged[task] != 1 {
				t.Errorf("merge counted %d times", w.metrics.merged[task])
			}
		})
	}
	if got := w.outcome(t, "t1").Survival.EditDistance(); got != 0.5 {
		t.Errorf("edit distance of the half-rewritten PR %v, want 0.5", got)
	}
}

func TestSameDeliveryTwiceCountsOnce(t *testing.T) {
	w := newWorld(t)
	pr, _ := w.agentPR(t, "acme/calc", "t1")
	_, e := w.merge(t, "acme/calc", pr, githubsim.MergeCommit)
	w.process(t, e)
	w.process(t, e)
	if n := w.metrics.merged["t1"]; n != 1 {
		t.Errorf("merge counted %d times, want once", n)
	}
}

func TestPullRequestNotTheAgents(t *testing.T) {
	w := newWorld(t)
	_, agent := w.agentPR(t, "acme/calc", "t1")
	base, _ := w.sim.BranchSHA("acme/calc", "main")
	if err := w.sim.CreateBranch("acme/calc", "topic", base); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.Commit("acme/calc", "topic", "ada", "Mine", map[string]string{"b.go": "package calc\n"}); err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest("acme/calc", githubsim.PullOptions{Author: "ada", Title: "Mine", Head: "topic"})
	if err != nil {
		t.Fatal(err)
	}
	_, e := w.merge(t, "acme/calc", pr, githubsim.MergeCommit)
	w.process(t, e)
	if o := w.outcome(t, "t1"); o.Merged || o.Survival != nil || o.Pushed != agent.Pushed {
		t.Errorf("the agent's outcome changed: %+v", o)
	}
	if len(w.metrics.merged) != 0 {
		t.Errorf("merges counted: %v", w.metrics.merged)
	}
}

func TestReverts(t *testing.T) {
	w := newWorld(t)
	t.Run("a revert commit pushed directly", func(t *testing.T) {
		pr, _ := w.agentPR(t, "acme/pushed", "t1")
		sha, e := w.merge(t, "acme/pushed", pr, githubsim.MergeSquash)
		w.process(t, e)
		revert, err := w.sim.RevertCommit("acme/pushed", "main", sha, "ada")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.sim.DeliverPush(t.Context(), w.hook.URL, "acme/pushed", "main", sha, revert, "ada"); err != nil {
			t.Fatal(err)
		}
		e = w.event(t, "push")
		w.process(t, e)
		w.process(t, e)
		if o := w.outcome(t, "t1"); !o.Reverted || w.metrics.reverted["t1"] != 1 {
			t.Errorf("outcome %+v, counted %d times; want reverted once", o, w.metrics.reverted["t1"])
		}
	})
	t.Run("a revert pull request", func(t *testing.T) {
		repo := "acme/pulled"
		pr, _ := w.agentPR(t, repo, "t2")
		sha, e := w.merge(t, repo, pr, githubsim.MergeCommit)
		w.process(t, e)
		if err := w.sim.CreateBranch(repo, "revert-1", sha); err != nil {
			t.Fatal(err)
		}
		if _, err := w.sim.RevertCommit(repo, "revert-1", sha, "ada"); err != nil {
			t.Fatal(err)
		}
		revertPR, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "ada", Title: `Revert "Fix the sum"`,
			Body: fmt.Sprintf("Reverts %s#%d", repo, pr), Head: "revert-1"})
		if err != nil {
			t.Fatal(err)
		}
		_, e = w.merge(t, repo, revertPR, githubsim.MergeCommit)
		w.process(t, e)
		w.process(t, e)
		if o := w.outcome(t, "t2"); !o.Reverted || !o.Merged || w.metrics.reverted["t2"] != 1 {
			t.Errorf("outcome %+v, counted %d times; want reverted once", o, w.metrics.reverted["t2"])
		}
		if o := w.outcome(t, "t1"); w.metrics.reverted["t1"] != 1 || !o.Reverted {
			t.Errorf("the other repository's outcome: %+v", o)
		}
	})
}

func TestMergeWithoutRecordedCommits(t *testing.T) {
	w := newWorld(t)
	pr, o := w.agentPR(t, "acme/calc", "t1")
	o.Base, o.Pushed = "", ""
	if err := w.outcomes.Save(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	sha, e := w.merge(t, "acme/calc", pr, githubsim.MergeCommit)
	w.process(t, e)
	if o := w.outcome(t, "t1"); !o.Merged || o.MergeCommit != sha || o.Survival != nil || w.metrics.merged["t1"] != 1 {
		t.Errorf("outcome %+v; want merged, without survival, counted once", o)
	}
}
