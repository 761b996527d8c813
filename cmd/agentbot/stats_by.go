package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentbot/agentbot/app"
)

// groupings are what "stats --by" groups outcomes by.
var groupings = map[string]struct {
	title string
	key   func(app.TaskOutcome) string
}{
	"model": {"MODEL", app.OutcomeModel},
	"repo":  {"REPOSITORY", app.OutcomeRepo},
}

// statsByReport is what "agentbot stats --by" prints as JSON.
type statsByReport struct {
	Since      *time.Time         `json:"since,omitempty"`
	By         string             `json:"by"`
	Confidence float64            `json:"confidence"`
	Groups     []app.OutcomeStats `json:"groups"`
}

// printStatsBy prints one row per group with the rates an operator
// chooses a model by, each with its confidence interval.
func printStatsBy(w io.Writer, by string, stats []app.OutcomeStats) error {
	if len(stats) == 0 {
		_, err := fmt.Fprintln(w, "No finished tasks in this period.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tTASKS\tSUCCESS\tMERGED\tMEAN SURVIVAL\tREVERTED\tINCIDENTS\tCOST/MERGED\n", groupings[by].title)
	for _, s := range stats {
		key := printable(s.Key)
		if key == "" {
			key = "(none)"
		}
		survival, costPerMerged := "-", "-"
		if s.Survival.N > 0 {
			survival = fmt.Sprintf("%s %s of %d", percent(s.MeanSurvival), ciText(s.Survival), s.Survival.N)
		}
		if s.Merged > 0 {
			costPerMerged = fmt.Sprintf("$%.2f", s.CostPerMerged)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d in %s\t%s\n", key, s.Tasks,
			countCI(s.Succeeded, s.Success), countCI(s.Merged, s.MergeRate), survival, countCI(s.Reverted, s.RevertRate),
			s.SafetyIncidents, countCI(s.TasksWithIncidents, s.Incidents), costPerMerged)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n[low-high]: %.0f%% confidence intervals; Wilson score for shares (merged and incidents of tasks, reverted of merged),\n"+
		"Student's t for mean survival (the mean over merged PRs of the share of the agent's lines kept). Cost per merged PR counts failures too.\n",
		100*app.Confidence)
	return err
}

// countCI prints a count with its share and that share's interval:
// "2 67% [21-94%]", or "0" when there is nothing it is a share of.
func countCI(k int, ci app.Interval) string {
	if ci.N == 0 {
		return fmt.Sprint(k)
	}
	return fmt.Sprintf("%d %s %s", k, percent(float64(k)/float64(ci.N)), ciText(ci))
}

func ciText(ci app.Interval) string {
	return fmt.Sprintf("[%.0f-%.0f%%]", 100*ci.Low, 100*ci.High)
}
