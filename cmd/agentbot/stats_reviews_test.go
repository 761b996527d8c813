package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

// Reviews are counted apart from fixes: they add no task to the fixes'
// table, and their findings have a table of their own.
func TestStatsCountsReviewsApart(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	stats := statsOver(t, []app.TaskOutcome{
		{Task: "fix", Repo: "octo/api", Model: "coder", FinishedAt: now.Add(-time.Hour), ChecksPassed: true, PR: 1, Iterations: 4,
			WallTime: time.Minute, Tokens: 1000, Cost: 0.5},
		{Task: "r1", Repo: "octo/api", Model: "coder", FinishedAt: now.Add(-time.Hour), State: app.StateSucceeded, Cost: 0.25,
			Review: &app.ReviewOutcome{Findings: 3, Proven: 1, Posted: 2}},
		{Task: "r2", Repo: "octo/web", Model: "coder", FinishedAt: now.Add(-time.Hour), State: app.StateSucceeded, Cost: 0.25,
			Review: &app.ReviewOutcome{Findings: 0}},
	})
	table, err := stats()
	if err != nil {
		t.Fatal(err)
	}
	squeezed := squeeze(table)
	for _, want := range []string{
		"all 1 1 (100%) 1 $0.50 1000 4.0 1m0s 0 - - 0 (0)",
		"REVIEWS REVIEWS FINDINGS PROVEN POSTED RESOLVED DISMISSED COST",
		"octo/api 1 3 1 2 0 0 $0.25",
		"octo/web 1 0 0 0 0 0 $0.25",
		"ALL 2 3 1 2 0 0 $0.50",
	} {
		if !slices.Contains(squeezed, want) {
			t.Errorf("stats lacks the line %q:\n%s", want, table)
		}
	}
	out, err := stats("--repo", "octo/web")
	if err != nil || strings.Contains(out, "TASKS") || !strings.Contains(out, "octo/web 1 0 0 0 0 0 $0.25") && !slices.Contains(squeeze(out), "octo/web 1 0 0 0 0 0 $0.25") {
		t.Errorf("stats of a repository with reviews only: %v\n%s", err, out)
	}
}
