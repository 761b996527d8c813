package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestOutcomesSaveFindAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewOutcomes(connect(t, redistest.Start(t)))
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	for _, o := range []app.TaskOutcome{
		{Task: "t1", Repo: "o/api", Model: "m1", FinishedAt: t0, ChecksPassed: true, PR: 12, Cost: 0.2},
		{Task: "t2", Repo: "o/api", Model: "m1", FinishedAt: t0.Add(30 * time.Minute), Iterations: 30},
		{Task: "t3", Repo: "o/web", Model: "m2", FinishedAt: t0.Add(50 * time.Minute), ChecksPassed: true, PR: 3},
	} {
		if err := s.Save(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	// A merge arrives: find the task by its PR and save it again.
	o, err := s.ByPR(ctx, "o/api", 12)
	if err != nil || o.Task != "t1" || o.Cost != 0.2 || !o.FinishedAt.Equal(t0) {
		t.Fatalf("ByPR(o/api#12) = %+v, %v", o, err)
	}
	o.Merged, o.MergeCommit, o.Survival = true, "abc1234", &app.Survival{Kept: 3, Total: 4}
	if err := s.Save(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Outcome(ctx, "t1"); err != nil || !got.Merged || *got.Survival != (app.Survival{Kept: 3, Total: 4}) {
		t.Errorf("outcome after the merge: %+v, %v", got, err)
	}

	all, err := s.Since(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Task != "t1" || all[2].Task != "t3" || !all[0].Merged {
		t.Errorf("all outcomes: %+v", all)
	}
	recent, err := s.Since(ctx, t0.Add(20*time.Minute))
	if err != nil || len(recent) != 2 || recent[0].Task != "t2" {
		t.Errorf("outcomes of the last 40 minutes: %+v, %v", recent, err)
	}
	if none, err := s.Since(ctx, time.Now().Add(time.Hour)); err != nil || len(none) != 0 {
		t.Errorf("outcomes from the future: %+v, %v", none, err)
	}
}

func TestOutcomesRefuseBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewOutcomes(connect(t, redistest.Start(t)))
	for _, o := range []app.TaskOutcome{{Repo: "o/r"}, {Task: "t1"}} {
		if err := s.Save(ctx, o); app.ErrorCode(err) != app.EInvalid {
			t.Errorf("Save(%+v): %v, want an invalid error", o, err)
		}
	}
	if all, err := s.Since(ctx, time.Time{}); err != nil || len(all) != 0 {
		t.Errorf("refused outcomes were stored: %+v, %v", all, err)
	}
	if _, err := s.Outcome(ctx, "t1"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("unknown task: %v, want not found", err)
	}
	if _, err := s.ByPR(ctx, "o/r", 1); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("unknown PR: %v, want not found", err)
	}
}

func TestOutcomeMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m, err := NewOutcomeMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ok := app.TaskOutcome{Repo: "o/api", Model: "m1", ChecksPassed: true, PR: 1, Iterations: 4, WallTime: time.Minute, Tokens: 1000, Cost: 0.25,
		Survival: &app.Survival{Kept: 1, Total: 2}}
	failed := app.TaskOutcome{Repo: "o/api", Model: "m1", Iterations: 30, Tokens: 5000, Cost: 0.75, SafetyIncidents: 2}
	m.Finished(ok)
	m.Finished(failed)
	m.Merged(ok)
	m.Reverted(ok)

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"succeeded", testutil.ToFloat64(m.tasks.WithLabelValues("o/api", "m1", "succeeded")), 1},
		{"failed", testutil.ToFloat64(m.tasks.WithLabelValues("o/api", "m1", "failed")), 1},
		{"cost", testutil.ToFloat64(m.cost.WithLabelValues("o/api", "m1")), 1.0},
		{"tokens", testutil.ToFloat64(m.tokens.WithLabelValues("o/api", "m1")), 6000},
		{"incidents", testutil.ToFloat64(m.incidents.WithLabelValues("o/api", "m1")), 2},
		{"merged", testutil.ToFloat64(m.merged.WithLabelValues("o/api", "m1")), 1},
		{"reverted", testutil.ToFloat64(m.reverted.WithLabelValues("o/api", "m1")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	const want = `
# HELP agentbot_pr_survival_ratio Share of the agent's diff that survives in the merged pull request.
# TYPE agentbot_pr_survival_ratio histogram
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.1"} 0
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.2"} 0
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.3"} 0
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.4"} 0
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.5"} 1
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.6"} 1
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.7"} 1
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.8"} 1
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="0.9"} 1
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="1"} 1
agentbot_pr_survival_ratio_bucket{model="m1",repo="o/api",le="+Inf"} 1
agentbot_pr_survival_ratio_sum{model="m1",repo="o/api"} 0.5
agentbot_pr_survival_ratio_count{model="m1",repo="o/api"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "agentbot_pr_survival_ratio"); err != nil {
		t.Error(err)
	}
	if _, err := NewOutcomeMetrics(reg); err == nil {
		t.Error("registering the outcome metrics twice on one registry succeeded")
	}
}

func TestOutcomesMarkReverted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewOutcomes(connect(t, redistest.Start(t)))
	const sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85"
	for _, o := range []app.TaskOutcome{
		{Task: "t1", Repo: "o/api", PR: 12, Merged: true, MergeCommit: sha},
		{Task: "t2", Repo: "o/api", PR: 13, Merged: true, MergeCommit: "0123456789abcdef0123456789abcdef01234567"},
		{Task: "t3", Repo: "o/api", PR: 14},
		{Task: "t4", Repo: "o/web", PR: 12, Merged: true, MergeCommit: sha},
	} {
		if err := s.Save(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		r    app.Revert
		want string
	}{
		{"a revert commit naming the merge commit abbreviated", app.Revert{Repo: "O/API", Reverts: []string{sha[:7]}}, "[t1]"},
		{"the same revert delivered again", app.Revert{Repo: "o/api", Reverts: []string{sha}}, "[]"},
		{"a revert PR naming the PR", app.Revert{Repo: "o/api", RevertsPRs: []int{13}}, "[t2]"},
		{"a revert of a PR never merged", app.Revert{Repo: "o/api", RevertsPRs: []int{14}}, "[]"},
	}
	for _, c := range cases {
		marked, err := s.MarkReverted(ctx, c.r)
		if err != nil {
			t.Fatal(err)
		}
		var tasks []string
		for _, o := range marked {
			tasks = append(tasks, o.Task)
		}
		if got := fmt.Sprint(tasks); got != c.want {
			t.Errorf("%s: marked %s, want %s", c.name, got, c.want)
		}
	}
	for task, want := range map[string]bool{"t1": true, "t2": true, "t3": false, "t4": false} {
		if o, err := s.Outcome(ctx, task); err != nil || o.Reverted != want {
			t.Errorf("%s reverted = %v (%v), want %v", task, o.Reverted, err, want)
		}
	}
}
