package app_test

import (
	"math"
	"testing"

	"github.com/agentbot/agentbot/app"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

func TestWilsonInterval(t *testing.T) {
	// Reference values from the closed form with z = 1.959964.
	for _, tc := range []struct {
		k, n      int
		low, high float64
	}{
		{0, 10, 0, 0.2775},       // no success: the interval still admits some
		{10, 10, 0.7225, 1},      // all successes
		{2, 3, 0.2077, 0.9385},   // few tasks: wide
		{30, 50, 0.4618, 0.7239}, // more tasks: narrower around 0.6
		{1, 2, 0.0945, 0.9055},   // symmetric around one half
		{12, 10, 0.7225, 1},      // k above n is clamped
		{-1, 10, 0, 0.2775},      // and below 0
		{0, 0, 0, 0},             // nothing measured
	} {
		got := app.WilsonInterval(tc.k, tc.n)
		if !near(got.Low, tc.low) || !near(got.High, tc.high) || got.N != max(tc.n, 0) {
			t.Errorf("WilsonInterval(%d, %d) = %+v, want [%.4f, %.4f] over %d", tc.k, tc.n, got, tc.low, tc.high, tc.n)
		}
	}
}

func TestMeanInterval(t *testing.T) {
	for _, tc := range []struct {
		name            string
		xs              []float64
		mean, low, high float64
	}{
		{"none", nil, 0, 0, 0},
		{"one says nothing of the spread", []float64{0.7}, 0.7, 0, 1},
		{"equal values have no spread", []float64{0.5, 0.5, 0.5}, 0.5, 0.5, 0.5},
		// mean 0.8, sd 0.2646, t(2) = 4.3027: 0.8 ± 0.6572, clipped above.
		{"three", []float64{0.9, 0.5, 1}, 0.8, 0.1428, 1},
	} {
		mean, ci := app.MeanInterval(tc.xs)
		if !near(mean, tc.mean) || !near(ci.Low, tc.low) || !near(ci.High, tc.high) || ci.N != len(tc.xs) {
			t.Errorf("%s: MeanInterval(%v) = %v, %+v; want %v, [%v, %v]", tc.name, tc.xs, mean, ci, tc.mean, tc.low, tc.high)
		}
	}
}

func TestOutcomeStatsBy(t *testing.T) {
	merged := func(model string, kept, total int, reverted bool, cost float64) app.TaskOutcome {
		return app.TaskOutcome{Repo: "octo/api", Model: model, ChecksPassed: true, PR: 1, Cost: cost,
			Merged: true, Survival: &app.Survival{Kept: kept, Total: total}, Reverted: reverted}
	}
	outcomes := []app.TaskOutcome{
		merged("coder", 9, 10, false, 0.40),
		merged("coder", 1, 100, true, 0.20), // a large PR mostly rewritten counts once, like the small one
		{Repo: "octo/web", Model: "coder", Cost: 0.30, SafetyIncidents: 2},
		{Repo: "octo/web", Model: "mini", ChecksPassed: true, PR: 3, Cost: 0.05},               // open, not merged
		{Repo: "octo/web", Model: "mini", ChecksPassed: true, PR: 4, Cost: 0.05, Merged: true}, // survival not measured
	}
	stats := app.OutcomeStatsBy(outcomes, app.OutcomeModel)
	if len(stats) != 2 || stats[0].Key != "coder" || stats[1].Key != "mini" {
		t.Fatalf("groups: %+v", stats)
	}
	coder, mini := stats[0], stats[1]
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"coder tasks", float64(coder.Tasks), 3},
		{"coder succeeded", float64(coder.Succeeded), 2},
		{"coder merged", float64(coder.Merged), 2},
		{"coder reverted", float64(coder.Reverted), 1},
		{"coder mean survival", coder.MeanSurvival, (0.9 + 0.01) / 2},
		{"coder survival measured", float64(coder.Survival.N), 2},
		{"coder incidents", float64(coder.SafetyIncidents), 2},
		{"coder tasks with incidents", float64(coder.TasksWithIncidents), 1},
		{"coder cost per merged", coder.CostPerMerged, 0.90 / 2},
		{"coder success low", coder.Success.Low, app.WilsonInterval(2, 3).Low},
		{"coder revert high", coder.RevertRate.High, app.WilsonInterval(1, 2).High},
		{"coder incident share n", float64(coder.Incidents.N), 3},
		{"mini merged", float64(mini.Merged), 1},
		{"mini survival measured", float64(mini.Survival.N), 0},
		{"mini cost per merged", mini.CostPerMerged, 0.10},
		{"mini merge rate n", float64(mini.MergeRate.N), 2},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	byRepo := app.OutcomeStatsBy(outcomes, app.OutcomeRepo)
	if len(byRepo) != 2 || byRepo[0].Key != "octo/api" || byRepo[0].Tasks != 2 || byRepo[1].Tasks != 3 {
		t.Errorf("by repository: %+v", byRepo)
	}
	if got := app.OutcomeStatsBy(nil, app.OutcomeModel); len(got) != 0 {
		t.Errorf("no outcomes: %+v", got)
	}
	none := app.OutcomeStatsBy([]app.TaskOutcome{{Model: "m", Cost: 1}}, app.OutcomeModel)[0]
	if none.CostPerMerged != 0 || none.RevertRate != (app.Interval{}) || none.Survival != (app.Interval{}) {
		t.Errorf("a group without merges has no revert rate, survival or cost per merge: %+v", none)
	}
}
