package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

func TestStatsBy(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	stats := statsOver(t, []app.TaskOutcome{
		{Task: "a", Repo: "octo/api", Model: "coder", FinishedAt: now.Add(-time.Hour), ChecksPassed: true, PR: 1, Cost: 0.40,
			Merged: true, Survival: &app.Survival{Kept: 9, Total: 10}},
		{Task: "b", Repo: "octo/api", Model: "coder", FinishedAt: now.Add(-time.Hour), ChecksPassed: true, PR: 2, Cost: 0.20,
			Merged: true, Survival: &app.Survival{Kept: 1, Total: 2}, Reverted: true},
		{Task: "c", Repo: "octo/web", Model: "coder", FinishedAt: now.Add(-time.Hour), Cost: 0.30, SafetyIncidents: 2},
		{Task: "d", Repo: "octo/web", Model: "mini\x1b[31m", FinishedAt: now.Add(-time.Hour), Cost: 0.10},
	})

	out, err := stats("--by", "model")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"MODEL TASKS SUCCESS MERGED MEAN SURVIVAL REVERTED INCIDENTS COST/MERGED",
		// 2 of 3 succeeded and merged: Wilson [21-94%]; survival (0.9+0.5)/2
		// with t(1) spans everything; 1 of 2 merges reverted.
		"coder 3 2 67% [21-94%] 2 67% [21-94%] 70% [0-100%] of 2 1 50% [9-91%] 2 in 1 33% [6-79%] $0.45",
		// The model name a repository chose is printed inert.
		`mini\x1b[31m 1 0 0% [0-79%] 0 0% [0-79%] - 0 0 in 0 0% [0-79%] -`,
	} {
		if !slices.Contains(squeeze(out), want) {
			t.Errorf("stats --by model lacks the line %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("stats --by model printed an escape sequence:\n%q", out)
	}

	out, err = stats("--by", "repo", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		By         string             `json:"by"`
		Confidence float64            `json:"confidence"`
		Groups     []app.OutcomeStats `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if rep.By != "repo" || rep.Confidence != 0.95 || len(rep.Groups) != 2 || rep.Groups[0].Key != "octo/api" ||
		rep.Groups[0].Merged != 2 || math.Abs(rep.Groups[0].CostPerMerged-0.30) > 1e-9 || rep.Groups[1].Tasks != 2 {
		t.Errorf("stats --by repo --json:\n%s", out)
	}

	if out, err := stats("--by", "model", "--repo", "no/such"); err != nil || !strings.Contains(out, "No finished tasks") {
		t.Errorf("stats --by model of an unknown repository: %v\n%s", err, out)
	}
	if out, err := stats("--by", "user"); err == nil || !strings.Contains(err.Error(), "want model or repo") || out != "" {
		t.Errorf("stats --by user: err %v, printed %q; want a usage error and nothing printed", err, out)
	}
}
