package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue/redistest"
)

// A loop's records are running totals: each counts only its increase,
// in the hour it is made, for every subject of the task.
func TestBudgetsCountIncreasesOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := NewBudgets(connect(t, redistest.Start(t)))
	task := sampleTask("t1", time.Now())
	task.RequesterID = 900
	subjects := policy.TaskSubjects(task, 42)
	at := time.Date(2026, 12, 4, 10, 20, 0, 0, time.UTC)
	record := func(loop string, tokens int64, usd float64, at time.Time) {
		t.Helper()
		if err := b.Record(ctx, loop, subjects, policy.Spend{Tokens: tokens, USD: usd}, at); err != nil {
			t.Fatal(err)
		}
	}
	record("t1", 100, 0.25, at)
	record("t1", 100, 0.25, at.Add(time.Minute)) // repeated after a crash: nothing more
	record("t1", 300, 0.75, at.Add(time.Hour))   // 200 more, the next hour
	record("t1", 250, 0.5, at.Add(2*time.Hour))  // below the last record: nothing
	record("t1-attempt-2", 50, 0.1, at.Add(time.Hour))

	month := policy.Budget{Name: "m", Per: policy.PerRequester, USD: 1}
	window := policy.Budget{Name: "w", Per: policy.PerRepository, Window: time.Hour, Tokens: 1000}
	statuses, err := b.Statuses(ctx, []policy.BudgetOf{{Budget: month, Subject: subjects[2]}, {Budget: window, Subject: subjects[1]}}, at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses[0].Spent; got.Tokens != 350 || got.USD != 0.85 {
		t.Errorf("the month's spending %+v; want 350 tokens and $0.85", got)
	}
	if got := statuses[1].Spent; got.Tokens != 250 {
		t.Errorf("the last hour's spending %+v; want 250 tokens", got)
	}
	spenders, err := b.Spenders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range spenders {
		names = append(names, s.Key()+"="+s.String())
	}
	if got := strings.Join(names, " "); got != "installation:7=octo repository:42=octo/hello requester:900=@alice" {
		t.Errorf("spenders: %s", got)
	}
}

// Hours older than SpendHistory leave a subject's hash when a new hour's
// spending arrives, and subjects that spent nothing since leave the index.
func TestBudgetsForgetOldHours(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	b := NewBudgets(rdb)
	old := policy.BudgetSubject{Scope: policy.PerRepository, ID: 1, Name: "octo/old"}
	live := policy.BudgetSubject{Scope: policy.PerRepository, ID: 2, Name: "octo/live"}
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	if err := b.Record(ctx, "a", []policy.BudgetSubject{old, live}, policy.Spend{Tokens: 10}, start); err != nil {
		t.Fatal(err)
	}
	later := start.Add(SpendHistory + 2*time.Hour)
	if err := b.Record(ctx, "b", []policy.BudgetSubject{live}, policy.Spend{Tokens: 5}, later); err != nil {
		t.Fatal(err)
	}
	fields, err := rdb.HKeys(ctx, spendKey(live)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 3 { // t:, u: of the new hour, and name
		t.Errorf("the live subject's hash holds %q; want the new hour's fields and its name", fields)
	}
	spenders, err := b.Spenders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(spenders) != 1 || spenders[0] != live {
		t.Errorf("spenders %+v; want only %+v", spenders, live)
	}
}

func TestBudgetCollector(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := NewBudgets(connect(t, redistest.Start(t)))
	now := time.Date(2026, 12, 11, 0, 0, 0, 0, time.UTC) // 10 days into December
	ada := policy.BudgetSubject{Scope: policy.PerRequester, ID: 5, Name: "ada"}
	if err := b.Record(ctx, "t", []policy.BudgetSubject{ada}, policy.Spend{Tokens: 1000, USD: 2}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewBudgetCollector(b, []policy.Budget{{Name: "people", Per: policy.PerRequester, USD: 20}}, func() time.Time { return now }))
	want := `
# HELP agentbot_budget_forecast What the subject will have spent in the budget's period at the current rate.
# TYPE agentbot_budget_forecast gauge
agentbot_budget_forecast{budget="people",scope="requester",subject="@ada",subject_id="5",unit="usd"} 6.2
# HELP agentbot_budget_limit A budget's limit per period.
# TYPE agentbot_budget_limit gauge
agentbot_budget_limit{budget="people",scope="requester",unit="usd"} 20
# HELP agentbot_budget_spent What the subject spent against the budget in its current period.
# TYPE agentbot_budget_spent gauge
agentbot_budget_spent{budget="people",scope="requester",subject="@ada",subject_id="5",unit="usd"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
