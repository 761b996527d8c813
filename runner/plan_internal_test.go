package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
)

func TestPlanFilesAreTheFilesSection(t *testing.T) {
	text := "## Change\n\nEdit `stats.go`.\n\n## Files\n\n- `stats.go`\n* `stats_test.go` (new)\n- `stats.go`\n\n## Checks\n\n- `fixed`\n"
	if got := planFiles(text); !slices.Equal(got, []string{"stats.go", "stats_test.go"}) {
		t.Errorf("planFiles = %q; want the two files of the Files section, once each", got)
	}
}

func TestPlanSectionNamesDepartures(t *testing.T) {
	tk := &task{Task: &app.Task{}, prog: progress{Plan: &plan{Files: []string{"stats.go"}, ApprovedBy: "ada"}}}
	if got := planSection(tk, &agent.State{Touched: []string{"stats.go"}}); !strings.Contains(got, "keeps to its files") {
		t.Errorf("a change within the plan: %q", got)
	}
	got := planSection(tk, &agent.State{Touched: []string{"stats.go", "mean.go"}})
	if !strings.Contains(got, "## Departures from the approved plan") || !strings.Contains(got, "`mean.go`") || strings.Contains(got, "`stats.go`") {
		t.Errorf("a change past the plan: %q", got)
	}
	tk.prog.Plan.ApprovedBy = ""
	if got := planSection(tk, &agent.State{Touched: []string{"mean.go"}}); got != "" {
		t.Errorf("a plan only shown: %q; want no section", got)
	}
}

func TestSpreadIsMedianAndRange(t *testing.T) {
	if got := spread([]float64{9, 1, 4, 3}, "%.1f"); got != "3.5 (1.0–9.0)" {
		t.Errorf("spread = %q", got)
	}
	if got := spread([]float64{2}, "%.0f"); got != "2" {
		t.Errorf("spread of one = %q", got)
	}
}
