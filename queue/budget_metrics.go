package queue

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbot/agentbot/app/policy"
)

// BudgetCollector exports the budgets per period as gauges, worked out
// from Redis at scrape time: each budget's limits, and per subject that
// spent, what it spent in the period and the forecast for the period at
// the current rate. unit is "usd" or "tokens".
type BudgetCollector struct {
	budgets  *Budgets
	config   []policy.Budget
	now      func() time.Time
	limit    *prometheus.Desc
	spent    *prometheus.Desc
	forecast *prometheus.Desc
}

// budgetScrapeTimeout bounds the Redis reads of one scrape.
const budgetScrapeTimeout = 5 * time.Second

// NewBudgetCollector returns a collector of budgets over b; register it on
// the metrics registry. now is the clock (time.Now when nil).
func NewBudgetCollector(b *Budgets, budgets []policy.Budget, now func() time.Time) *BudgetCollector {
	if now == nil {
		now = time.Now
	}
	subject := []string{"budget", "scope", "subject", "subject_id", "unit"}
	return &BudgetCollector{
		budgets: b, config: budgets, now: now,
		limit:    prometheus.NewDesc("agentbot_budget_limit", "A budget's limit per period.", []string{"budget", "scope", "unit"}, nil),
		spent:    prometheus.NewDesc("agentbot_budget_spent", "What the subject spent against the budget in its current period.", subject, nil),
		forecast: prometheus.NewDesc("agentbot_budget_forecast", "What the subject will have spent in the budget's period at the current rate.", subject, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *BudgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.spent
	ch <- c.forecast
}

// Collect implements prometheus.Collector. A Redis failure makes the
// scrape report the error rather than a wrong zero.
func (c *BudgetCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.config {
		for unit, v := range limitedUnits(b, policy.Spend{Tokens: b.Tokens, USD: b.USD}) {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, v, b.Name, string(b.Per), unit)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), budgetScrapeTimeout)
	defer cancel()
	statuses, err := c.budgets.Report(ctx, c.config, c.now())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.spent, err)
		return
	}
	for _, st := range statuses {
		labels := []string{st.Budget.Name, string(st.Subject.Scope), st.Subject.String(), strconv.FormatInt(st.Subject.ID, 10)}
		for unit, v := range limitedUnits(st.Budget, st.Spent) {
			ch <- prometheus.MustNewConstMetric(c.spent, prometheus.GaugeValue, v, append(labels, unit)...)
		}
		for unit, v := range limitedUnits(st.Budget, st.Forecast) {
			ch <- prometheus.MustNewConstMetric(c.forecast, prometheus.GaugeValue, v, append(labels, unit)...)
		}
	}
}

// limitedUnits is s in the units b limits, by unit.
func limitedUnits(b policy.Budget, s policy.Spend) map[string]float64 {
	out := map[string]float64{}
	if b.USD > 0 {
		out["usd"] = s.USD
	}
	if b.Tokens > 0 {
		out["tokens"] = float64(s.Tokens)
	}
	return out
}
