package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
	"github.com/redis/go-redis/v9"
)

func cmdStats(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("stats", env)
	flags := addPeriodFlags(fs, "tasks", "30d", "print JSON")
	by := fs.String("by", "", "one table with confidence intervals, grouped by model or repo")
	budgets := fs.Bool("budgets", false, "spending against each budget of --config, with the forecast for the period at the current rate")
	config := fs.String("config", "", "the server config (server.yaml) whose budgets --budgets reports")
	from, err := flags.parse(fs, args, env)
	if err != nil {
		return err
	}
	if *budgets {
		return statsBudgets(ctx, env.Stdout, *flags.redisURL, *config, *flags.json)
	}
	if _, ok := groupings[*by]; *by != "" && !ok {
		return usageErrorf(fs, "--by %q: want model or repo", *by)
	}

	var all []app.TaskOutcome
	err = withStore(ctx, *flags.redisURL, func(ctx context.Context, rdb *redis.Client) (err error) {
		all, err = queue.NewOutcomes(rdb).Since(ctx, from)
		return err
	})
	if err != nil {
		return err
	}
	var outcomes []app.TaskOutcome
	for _, o := range all {
		if *flags.repo == "" || strings.EqualFold(o.Repo, *flags.repo) {
			outcomes = append(outcomes, o)
		}
	}
	// Reviews are counted apart: they open no pull request to succeed by.
	outcomes, reviews := app.SplitReviews(outcomes)

	if *by != "" {
		r := statsByReport{By: *by, Confidence: app.Confidence, Groups: app.OutcomeStatsBy(outcomes, groupings[*by].key)}
		if !from.IsZero() {
			r.Since = &from
		}
		if *flags.json {
			return printJSON(env.Stdout, r)
		}
		return printStatsBy(env.Stdout, *by, r.Groups)
	}

	report := statsReport{
		Total:   statsViews(app.AggregateOutcomes(outcomes, func(app.TaskOutcome) string { return "all" })),
		ByRepo:  statsViews(app.AggregateOutcomes(outcomes, app.OutcomeRepo)),
		ByModel: statsViews(app.AggregateOutcomes(outcomes, app.OutcomeModel)),
		Reviews: app.SummarizeReviews(reviews),
	}
	if !from.IsZero() {
		report.Since = &from
	}
	if *flags.json {
		return printJSON(env.Stdout, report)
	}
	return printStats(env.Stdout, report)
}

// statsReport is what "agentbot stats" prints.
type statsReport struct {
	Since   *time.Time  `json:"since,omitempty"`
	Total   []statsView `json:"total"` // one summary of every task, none without tasks
	ByRepo  []statsView `json:"by_repo"`
	ByModel []statsView `json:"by_model"`
	// Reviews are reviews' findings per repository, then all of them.
	Reviews []app.ReviewSummary `json:"reviews"`
}

// statsView is a summary with its rates worked out. SurvivalShare is nil
// when no merged pull request had its survival measured.
type statsView struct {
	app.OutcomeSummary
	SuccessRate    float64  `json:"success_rate"`
	CostPerSuccess float64  `json:"cost_per_success_usd"`
	RevertRate     float64  `json:"revert_rate"`
	SurvivalShare  *float64 `json:"survival_share"`
}

func statsViews(sums []app.OutcomeSummary) []statsView {
	views := make([]statsView, len(sums))
	for i, s := range sums {
		views[i] = statsView{OutcomeSummary: s, SuccessRate: s.SuccessRate(), CostPerSuccess: s.CostPerSuccess(), RevertRate: s.RevertRate()}
		if s.Survival.Total > 0 {
			share := s.Survival.Share()
			views[i].SurvivalShare = &share
		}
	}
	return views
}

func printStats(w io.Writer, r statsReport) error {
	if len(r.Total) == 0 && len(r.Reviews) == 0 {
		_, err := fmt.Fprintln(w, "No finished tasks in this period.")
		return err
	}
	if len(r.Total) == 0 {
		return printReviewStats(w, r.Reviews)
	}
	for _, section := range []struct {
		title string
		rows  []statsView
	}{{"REPOSITORY", r.ByRepo}, {"MODEL", r.ByModel}, {"ALL", r.Total}} {
		if err := printStatsTable(w, section.title, section.rows); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintln(w, "success: checks passed and PR opened without human help. survival: share of the agent's lines kept in merged PRs.\n"+
		"incidents: blocked writes, blocked commands and gate refusals (in PRs: of tasks whose PR was opened; must be 0).")
	if err != nil || len(r.Reviews) == 0 {
		return err
	}
	fmt.Fprintln(w)
	return printReviewStats(w, r.Reviews)
}

func printStatsTable(w io.Writer, title string, rows []statsView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tTASKS\tSUCCESS\tCHECKS OK\tCOST/SUCCESS\tTOKENS\tAVG STEPS\tAVG TIME\tMERGED\tSURVIVAL\tREVERTED\tINCIDENTS (IN PRs)\n", title)
	for _, v := range rows {
		survival := "-"
		if v.SurvivalShare != nil {
			survival = percent(*v.SurvivalShare)
		}
		costPerSuccess := "-"
		if v.Succeeded > 0 {
			costPerSuccess = fmt.Sprintf("$%.2f", v.CostPerSuccess)
		}
		reverted := "-"
		if v.Merged > 0 {
			reverted = fmt.Sprintf("%d (%s)", v.Reverted, percent(v.RevertRate))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d (%s)\t%d\t%s\t%d\t%.1f\t%s\t%d\t%s\t%s\t%d (%d)\n",
			printable(v.Key), v.Tasks, v.Succeeded, percent(v.SuccessRate), v.ChecksPassed, costPerSuccess, v.Tokens,
			float64(v.Iterations)/float64(v.Tasks), (v.WallTime / time.Duration(v.Tasks)).Round(time.Second),
			v.Merged, survival, reverted, v.SafetyIncidents, v.IncidentsInPRs)
	}
	return tw.Flush()
}

func percent(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
