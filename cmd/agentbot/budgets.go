package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue"
)

// registerBudgetMetrics exports the budgets of the server config at file,
// if it has any, on reg.
func registerBudgetMetrics(reg prometheus.Registerer, rdb redis.UniversalClient, file string) error {
	server, err := policy.LoadServerConfig(file)
	if err != nil {
		return err
	}
	if len(server.Budgets) == 0 {
		return nil
	}
	if err := reg.Register(queue.NewBudgetCollector(queue.NewBudgets(rdb), server.Budgets, nil)); err != nil {
		return fmt.Errorf("register budget metrics: %w", err)
	}
	return nil
}

// budgetView is one budget of one subject as "stats --budgets --json"
// prints it.
type budgetView struct {
	Budget      string               `json:"budget"`
	Per         policy.BudgetScope   `json:"per"`
	Subject     policy.BudgetSubject `json:"subject"`
	Window      string               `json:"window,omitempty"` // "" for the calendar month
	PeriodStart time.Time            `json:"period_start"`
	Renews      *time.Time           `json:"renews,omitempty"`
	Limit       policy.Spend         `json:"limit"` // a zero field is no limit
	Spent       policy.Spend         `json:"spent"`
	Forecast    policy.Spend         `json:"forecast"`
	Over        bool                 `json:"over"`
}

// statsBudgets prints spending against each budget of the server config
// at file, with the forecast for the period at the current rate.
func statsBudgets(ctx context.Context, w io.Writer, redisURL, file string, asJSON bool) error {
	if file == "" {
		return fmt.Errorf("--budgets needs --config: the server config (server.yaml) that sets budgets")
	}
	server, err := policy.LoadServerConfig(file)
	if err != nil {
		return err
	}
	if len(server.Budgets) == 0 {
		return fmt.Errorf("%s sets no budgets", file)
	}
	var statuses []policy.BudgetStatus
	now := time.Now()
	err = withStore(ctx, redisURL, func(ctx context.Context, rdb *redis.Client) (err error) {
		statuses, err = queue.NewBudgets(rdb).Report(ctx, server.Budgets, now)
		return err
	})
	if err != nil {
		return err
	}
	views := make([]budgetView, 0, len(statuses))
	for _, st := range statuses {
		b := st.Budget
		v := budgetView{Budget: b.Name, Per: b.Per, Subject: st.Subject, PeriodStart: st.Start, Limit: policy.Spend{Tokens: b.Tokens, USD: b.USD},
			Spent: st.Spent, Forecast: st.Forecast, Over: st.Over()}
		if b.Window > 0 {
			v.Window = b.Span()
		}
		if !st.Renews.IsZero() {
			v.Renews = &st.Renews
		}
		views = append(views, v)
	}
	if asJSON {
		return printJSON(w, views)
	}
	return printBudgets(w, server.Budgets, views)
}

func printBudgets(w io.Writer, budgets []policy.Budget, views []budgetView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUDGET\tSUBJECT\tPERIOD\tSPENT\tLIMIT\tLEFT\tFORECAST\tRENEWS")
	for _, b := range budgets {
		period := b.Span()
		if b.Window > 0 {
			period = "last " + period
		}
		if !slices.ContainsFunc(views, func(v budgetView) bool { return v.Budget == b.Name }) {
			fmt.Fprintf(tw, "%s\t(no spending yet)\t%s\t-\t%s\t-\t-\t-\n", printable(b.Name), period, amounts(policy.Spend{Tokens: b.Tokens, USD: b.USD}, b))
			continue
		}
		for _, v := range views {
			if v.Budget != b.Name {
				continue
			}
			left := policy.Spend{Tokens: max(0, b.Tokens-v.Spent.Tokens), USD: max(0, b.USD-v.Spent.USD)}
			renews := "-"
			if v.Renews != nil {
				renews = v.Renews.UTC().Format("2006-01-02 15:04 UTC")
			}
			if v.Window == "" {
				period = v.PeriodStart.Format("2006-01")
			}
			subject := printable(v.Subject.String())
			if v.Over {
				subject += " (spent)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(b.Name), subject, period,
				amounts(v.Spent, b), amounts(v.Limit, b), amounts(left, b), amounts(v.Forecast, b), renews)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nforecast: the period's spending at the current rate (a month's so far over the whole month; a window's last day over the window).")
	return err
}

// amounts writes s in the units b limits: "$1.20, 3400 tokens".
func amounts(s policy.Spend, b policy.Budget) string {
	var parts []string
	if b.USD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", s.USD))
	}
	if b.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", s.Tokens))
	}
	return strings.Join(parts, ", ")
}
