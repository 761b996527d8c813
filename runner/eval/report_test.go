package eval

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestReportAggregates(t *testing.T) {
	t.Parallel()
	s := &Suite{Dir: "suite", Tasks: []Task{{Name: "alpha"}, {Name: "beta"}}}
	rep := newReport(s, 2, []Result{
		{Task: "alpha", Run: 1, Solved: true, Hidden: HiddenPass, Iterations: 4, Tokens: 1000, CostUSD: 0.01, Seconds: 10},
		{Task: "alpha", Run: 2, Solved: true, Hidden: HiddenFail, Iterations: 6, Tokens: 3000, CostUSD: 0.03, Seconds: 30,
			HiddenRuns: []HiddenRun{{Run: "go test ./...", ExitCode: 1, Output: "--- FAIL: TestCountHidden\nFAIL\n"}}},
		{Task: "beta", Run: 1, Solved: false, Hidden: HiddenSkipped, Iterations: 30, Tokens: 8000, CostUSD: 0.08, Seconds: 50, Stop: "iterations (30 iterations used)"},
		{Task: "beta", Run: 2, Solved: false, Hidden: HiddenSkipped, Iterations: 2, Tokens: 0, Seconds: 2, Error: "model: script exhausted"},
	})
	a, b, total := rep.Tasks[0].Summary, rep.Tasks[1].Summary, rep.Total
	if a.Runs != 2 || a.Solved != 2 || a.SuccessRate != 1 || a.HiddenPassed != 1 || a.HiddenRate != 0.5 || a.MeanIterations != 5 || a.MeanTokens != 2000 || a.MeanCostUSD != 0.02 || a.MeanSeconds != 20 {
		t.Errorf("alpha = %+v", a)
	}
	if b.Solved != 0 || b.HiddenRuns != 2 || b.HiddenPassed != 0 || b.MeanIterations != 16 {
		t.Errorf("beta = %+v", b)
	}
	if total.Runs != 4 || total.Solved != 2 || total.SuccessRate != 0.5 || total.HiddenPassed != 1 || total.HiddenRuns != 4 || total.MeanIterations != 10.5 {
		t.Errorf("total = %+v", total)
	}
	if rep.Passed() {
		t.Error("Passed() = true with failed runs")
	}

	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"task   runs  solved  hidden  iterations  tokens  cost     time\n",
		"alpha  2     2/2     1/2     5.0         2000    $0.0200  20.0s\n",
		"beta   2     0/2     0/2     16.0        4000    $0.0400  26.0s",
		"total  4     2/4     1/4     10.5        3000    $0.0300  23.0s",
		"alpha run 2: hidden \"go test ./...\" failed with exit 1:\n    --- FAIL: TestCountHidden\n    FAIL\n",
		"beta run 1: not solved: iterations (30 iterations used)",
		"beta run 2: model: script exhausted",
		"solved 50% (2/4) of runs; hidden tests passed in 25% (1/4)",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	var out bytes.Buffer
	if err := rep.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var decoded Report
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatalf("the JSON report does not decode: %v\n%s", err, out.String())
	}
	if decoded.Total != total || decoded.Tasks[0].Summary != a || len(decoded.Tasks[1].Results) != 2 || decoded.Tasks[1].Results[1].Error != "model: script exhausted" {
		t.Errorf("JSON round trip = %+v", decoded)
	}
	if !strings.Contains(out.String(), `"success_rate": 0.5`) {
		t.Errorf("JSON lacks the total's success rate:\n%s", out.String())
	}
}

func TestReportWithoutHiddenTests(t *testing.T) {
	t.Parallel()
	s := &Suite{Tasks: []Task{{Name: "plain"}}}
	rep := newReport(s, 1, []Result{{Task: "plain", Run: 1, Solved: true, Hidden: HiddenNone}})
	if !rep.Passed() || rep.Total.HiddenRuns != 0 {
		t.Errorf("total = %+v, want passed with no hidden runs", rep.Total)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "plain  1     1/1     -") || strings.Contains(table.String(), "hidden tests passed") {
		t.Errorf("table:\n%s", table.String())
	}
}
