package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/queue"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// TestMergedAndRevertedPullRequestInStats follows the agent's pull request
// past its opening: a maintainer squash-merges it untouched, GitHub
// delivers the pull_request "closed" event, someone pushes its revert to
// main, and the push is delivered twice; agentbot stats then shows one
// merge, every line kept, and one revert.
func TestMergedAndRevertedPullRequestInStats(t *testing.T) {
	t.Parallel()
	w := startE2E(t, map[string]string{policy.PolicyPath: quickPolicy})
	ctx := t.Context()
	id := fixTo(t, w, app.StateSucceeded)
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	pr := prs[0].Number
	outcomes := queue.NewOutcomes(w.RDB)

	merge, resp, err := w.Sim.DeliverMerge(ctx, w.Webhook, w.Repo, pr, githubsim.MergeSquash, "grace")
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deliver the merge: %v %v", resp, err)
	}
	o := waitOutcome(t, outcomes, w.Repo, pr, func(o app.TaskOutcome) bool { return o.Merged })
	if o.MergeCommit != merge || o.Survival == nil || o.Survival.Total == 0 || o.Survival.Kept != o.Survival.Total || o.Task != id {
		t.Fatalf("outcome after the merge %+v (survival %+v); want task %s merged as %s with every line kept", o, o.Survival, id, merge)
	}

	// The outcome names the model that did the work (the worker's default,
	// as the policy names none), which is what stats --by model groups by.
	opt := w.RDB.Options()
	redisURL := fmt.Sprintf("redis://%s/%d", opt.Addr, opt.DB)
	env, out, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": redisURL})
	if err := cmdStats(ctx, []string{"--by", "model", "--json", "--since", "all"}, env); err != nil {
		t.Fatal(err)
	}
	var byModel statsByReport
	if err := json.Unmarshal([]byte(out.String()), &byModel); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if o.Model != "gpt-4.1" || len(byModel.Groups) != 1 || byModel.Groups[0].Key != o.Model || byModel.Groups[0].Merged != 1 ||
		byModel.Groups[0].MeanSurvival != 1 || byModel.Groups[0].Survival.N != 1 {
		t.Errorf("stats --by model %s; want the task's model, gpt-4.1, with one merge, fully kept", out)
	}

	revert, err := w.Sim.RevertCommit(w.Repo, "main", merge, "grace")
	if err != nil {
		t.Fatal(err)
	}
	// The intake answers the second, a replay of the first's body, as a
	// duplicate (200); either way the revert counts once.
	for i, want := range []int{http.StatusAccepted, http.StatusOK} {
		resp, err := w.Sim.DeliverPush(ctx, w.Webhook, w.Repo, "main", merge, revert, "grace")
		if err != nil || resp.StatusCode != want {
			t.Fatalf("deliver the push, time %d: %v %v; want %d", i+1, resp, err, want)
		}
	}
	waitOutcome(t, outcomes, w.Repo, pr, func(o app.TaskOutcome) bool { return o.Reverted })

	env, out, _ = testEnv(map[string]string{"AGENTBOT_REDIS_URL": redisURL})
	if err := cmdStats(ctx, []string{"--json", "--since", "all"}, env); err != nil {
		t.Fatal(err)
	}
	var report statsReport
	if err := json.Unmarshal([]byte(out.String()), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(report.Total) != 1 {
		t.Fatalf("stats %s", out)
	}
	all := report.Total[0]
	if all.Tasks != 1 || all.Merged != 1 || all.Reverted != 1 || all.RevertRate != 1 || all.SurvivalShare == nil || *all.SurvivalShare != 1 ||
		all.Survival != *o.Survival {
		t.Errorf("stats %s; want one task, merged with every line kept, reverted once", out)
	}

	// serve's workers count the same on its /metrics, each event once.
	metrics := servedMetrics(t, w)
	for _, want := range []string{"agentbot_tasks_total", "agentbot_prs_merged_total", "agentbot_prs_reverted_total", "agentbot_pr_survival_ratio_count"} {
		if !countsOne(metrics, want, w.Repo) {
			t.Errorf("/metrics lacks %s{…repo=%q…} 1", want, w.Repo)
		}
	}
}

// servedMetrics is what serve answers on /metrics.
func servedMetrics(t *testing.T, w *demo.World) string {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(w.Webhook, "/webhook") + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	metrics, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	return string(metrics)
}

// countsOne reports whether metrics has a series of name for repo at 1.
func countsOne(metrics, name, repo string) bool {
	for line := range strings.Lines(metrics) {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, `repo="`+repo+`"`) && strings.HasSuffix(line, "} 1\n") {
			return true
		}
	}
	return false
}

// waitOutcome polls the outcome of repo#pr until done says it is there.
func waitOutcome(t *testing.T, outcomes *queue.Outcomes, repo string, pr int, done func(app.TaskOutcome) bool) app.TaskOutcome {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		o, err := outcomes.ByPR(t.Context(), repo, pr)
		if err != nil {
			t.Fatal(err)
		}
		if done(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("outcome of %s#%d never got there: %+v", repo, pr, o)
		}
	}
}
