package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
)

func TestStatsCommand(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	stats := statsOver(t, []app.TaskOutcome{
		{Task: "a", Repo: "octo/api", Model: "coder", FinishedAt: now.Add(-time.Hour), ChecksPassed: true, PR: 1, Iterations: 4,
			WallTime: 2 * time.Minute, Tokens: 10_000, Cost: 0.40, Merged: true, Survival: &app.Survival{Kept: 9, Total: 10}},
		{Task: "b", Repo: "octo/api", Model: "coder-fast", FinishedAt: now.Add(-2 * time.Hour), Iterations: 30,
			WallTime: 10 * time.Minute, Tokens: 50_000, Cost: 0.60, SafetyIncidents: 1},
		{Task: "c", Repo: "octo/web", Model: "coder", FinishedAt: now.Add(-3 * time.Hour), ChecksPassed: true, PR: 7, Iterations: 2,
			WallTime: time.Minute, Tokens: 4_000, Cost: 0.10, Merged: true, Survival: &app.Survival{Kept: 1, Total: 2}, Reverted: true},
		{Task: "old", Repo: "octo/web", Model: "coder", FinishedAt: now.AddDate(0, 0, -40), ChecksPassed: true, PR: 2, Cost: 5},
	})

	table, err := stats()
	if err != nil {
		t.Fatal(err)
	}
	squeezed := squeeze(table)
	for _, want := range []string{
		"REPOSITORY TASKS SUCCESS CHECKS OK COST/SUCCESS TOKENS AVG STEPS AVG TIME MERGED SURVIVAL REVERTED INCIDENTS (IN PRs)",
		"octo/api 2 1 (50%) 1 $1.00 60000 17.0 6m0s 1 90% 0 (0%) 1 (0)",  // 0.40 + 0.60 spent for one success
		"octo/web 1 1 (100%) 1 $0.10 4000 2.0 1m0s 1 50% 1 (100%) 0 (0)", // the 40-day-old task is out of the 30 days
		"coder 2 2 (100%) 2 $0.25 14000 3.0 1m30s 2 83% 1 (50%) 0 (0)",
		"coder-fast 1 0 (0%) 0 - 50000 30.0 10m0s 0 - - 1 (0)", // no success, no merge: no rates
		"all 3 2 (67%) 2 $0.55 64000 12.0 4m20s 2 83% 1 (50%) 1 (0)",
	} {
		if !slices.Contains(squeezed, want) {
			t.Errorf("stats lacks the line %q:\n%s", want, table)
		}
	}

	out, err := stats("--repo", "OCTO/web", "--since", "all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Total []struct {
			Tasks          int      `json:"tasks"`
			Succeeded      int      `json:"succeeded"`
			CostPerSuccess float64  `json:"cost_per_success_usd"`
			RevertRate     float64  `json:"revert_rate"`
			SurvivalShare  *float64 `json:"survival_share"`
		} `json:"total"`
		ByRepo []struct {
			Key string `json:"key"`
		} `json:"by_repo"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(report.Total) != 1 || len(report.ByRepo) != 1 || report.ByRepo[0].Key != "octo/web" {
		t.Fatalf("stats --repo octo/web --since all --json:\n%s", out)
	}
	if tot := report.Total[0]; tot.Tasks != 2 || tot.Succeeded != 2 || tot.CostPerSuccess != 2.55 || tot.RevertRate != 1 || tot.SurvivalShare == nil || *tot.SurvivalShare != 0.5 {
		t.Errorf("octo/web totals: %+v\n%s", tot, out)
	}

	if out, err := stats("--repo", "no/such"); err != nil || !strings.Contains(out, "No finished tasks") {
		t.Errorf("stats of an unknown repository: %v\n%s", err, out)
	}
	for _, bad := range [][]string{{"--since", "last month"}, {"--since", "30"}, {"octo/api"}} {
		if out, err := stats(bad...); err == nil || out != "" {
			t.Errorf("stats %q: err %v, printed %q; want an error and nothing printed", bad, err, out)
		}
	}
}

// statsOver stores outcomes and returns a runner of the stats command
// over them, which returns its output.
func statsOver(t *testing.T, outcomes []app.TaskOutcome) func(args ...string) (string, error) {
	t.Helper()
	rs, rdb := testRedis(t)
	store := queue.NewOutcomes(rdb)
	for _, o := range outcomes {
		if err := store.Save(t.Context(), o); err != nil {
			t.Fatalf("save outcome %s: %v", o.Task, err)
		}
	}
	return func(args ...string) (string, error) {
		env, out, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
		err := cmdStats(t.Context(), args, env)
		return out.String(), err
	}
}

// squeeze splits a table into lines with each run of padding squeezed to
// one space, so that columns compare without their widths.
func squeeze(table string) []string {
	var lines []string
	for line := range strings.Lines(table) {
		lines = append(lines, strings.Join(strings.Fields(line), " "))
	}
	return lines
}
