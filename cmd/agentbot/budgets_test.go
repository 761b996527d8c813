package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue"
)

const budgetsConfig = `budgets:
  - {name: org, per: installation, usd: 5}
  - {name: people, per: requester, window: 30d, usd: 1, tokens: 100000}
  - {name: web, per: repository, only: [octo/web], tokens: 1000}
  - {name: nobody, per: requester, only: [carol], usd: 1}
`

// "stats --budgets" shows what the tasks spent, as their outcomes record
// it, against each budget, with the forecast and the renewal.
func TestStatsBudgets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Now().UTC()
	inst := policy.BudgetSubject{Scope: policy.PerInstallation, ID: 7, Name: "octo"}
	api, web := policy.BudgetSubject{Scope: policy.PerRepository, ID: 100, Name: "octo/api"}, policy.BudgetSubject{Scope: policy.PerRepository, ID: 101, Name: "octo/web"}
	alice, bob := policy.BudgetSubject{Scope: policy.PerRequester, ID: 11, Name: "alice"}, policy.BudgetSubject{Scope: policy.PerRequester, ID: 12, Name: "bob"}
	tasks := []struct {
		outcome  app.TaskOutcome
		subjects []policy.BudgetSubject
	}{
		{app.TaskOutcome{Task: "a", Repo: "octo/api", FinishedAt: now, Tokens: 10_000, Cost: 0.40}, []policy.BudgetSubject{inst, api, alice}},
		{app.TaskOutcome{Task: "b", Repo: "octo/api", FinishedAt: now, Tokens: 50_000, Cost: 0.60}, []policy.BudgetSubject{inst, api, bob}},
		{app.TaskOutcome{Task: "c", Repo: "octo/web", FinishedAt: now, Tokens: 4_000, Cost: 0.10}, []policy.BudgetSubject{inst, web, alice}},
	}
	rs, rdb := testRedis(t)
	outcomes, spending := queue.NewOutcomes(rdb), queue.NewBudgets(rdb)
	for _, tk := range tasks {
		o := tk.outcome
		if err := outcomes.Save(ctx, o); err != nil {
			t.Fatal(err)
		}
		// As a worker records a loop's spending: the same totals.
		if err := spending.Record(ctx, o.Task, tk.subjects, policy.Spend{Tokens: o.Tokens, USD: o.Cost}, now); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(config, []byte(budgetsConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	stats := func(args ...string) (string, error) {
		env, out, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
		err := cmdStats(ctx, args, env)
		return out.String(), err
	}

	out, err := stats("--budgets", "--config", config, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var views []budgetView
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	// What each budget's subjects spent is what their tasks' outcomes say.
	all, err := outcomes.Since(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	spentBy := func(repos ...string) policy.Spend {
		var s policy.Spend
		for _, o := range all {
			if len(repos) == 0 || slices.Contains(repos, o.Repo) {
				s = s.Add(policy.Spend{Tokens: o.Tokens, USD: o.Cost})
			}
		}
		return s
	}
	want := map[string]policy.Spend{
		"org installation:7":  spentBy(),
		"people requester:11": {Tokens: 14_000, USD: 0.50},
		"people requester:12": {Tokens: 50_000, USD: 0.60},
		"web repository:101":  spentBy("octo/web"),
	}
	got := map[string]policy.Spend{}
	for _, v := range views {
		got[v.Budget+" "+v.Subject.Key()] = v.Spent
	}
	if len(got) != len(want) {
		t.Errorf("stats --budgets --json reports %v; want %v", got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g.Tokens != w.Tokens || math.Abs(g.USD-w.USD) > 1e-9 {
			t.Errorf("%s spent %+v; want %+v", k, g, w)
		}
	}

	table, err := stats("--budgets", "--config", config)
	if err != nil {
		t.Fatal(err)
	}
	nextMonth := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02 15:04 UTC")
	squeezed := squeeze(table)
	for _, want := range []string{
		"BUDGET SUBJECT PERIOD SPENT LIMIT LEFT FORECAST RENEWS",
		// The last day's spending over the 30 days.
		"people @alice last 30d $0.50, 14000 tokens $1.00, 100000 tokens $0.50, 86000 tokens $15.00, 420000 tokens -",
		"people @bob last 30d $0.60, 50000 tokens $1.00, 100000 tokens $0.40, 50000 tokens $18.00, 1500000 tokens -",
		"web octo/web (spent) " + now.Format("2006-01") + " 4000 tokens 1000 tokens 0 tokens",
		"nobody (no spending yet) month - $1.00 - - -",
	} {
		if !slices.ContainsFunc(squeezed, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("stats --budgets lacks a line starting %q:\n%s", want, table)
		}
	}
	if !strings.Contains(table, nextMonth) {
		t.Errorf("the monthly budgets do not renew on %s:\n%s", nextMonth, table)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--budgets"}, "--budgets needs --config"},
		{[]string{"--budgets", "--config", writeFile(t, "repos: [acme/*]\n")}, "sets no budgets"},
		{[]string{"--budgets", "--config", writeFile(t, "budgets:\n  - {per: team, usd: 5}\n")}, `budgets[0].per: "team" is not installation, repository or requester`},
	} {
		if out, err := stats(bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) || out != "" {
			t.Errorf("stats %q: err %v, printed %q; want an error saying %q", bad.args, err, out, bad.want)
		}
	}
}

// writeFile writes a server config of data and returns its path.
func writeFile(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A worker's /metrics has the gauges of the server config's budgets, and
// none without budgets.
func TestRegisterBudgetMetrics(t *testing.T) {
	t.Parallel()
	_, rdb := testRedis(t)
	for _, tt := range []struct {
		config string
		want   int // agentbot_budget_limit series
	}{{budgetsConfig, 5}, {"repos: [acme/*]\n", 0}} {
		reg := prometheus.NewRegistry()
		if err := registerBudgetMetrics(reg, rdb, writeFile(t, tt.config)); err != nil {
			t.Fatal(err)
		}
		if n, err := testutil.GatherAndCount(reg, "agentbot_budget_limit"); err != nil || n != tt.want {
			t.Errorf("%q: %d limits (%v); want %d, one per budget and unit", tt.config, n, err, tt.want)
		}
	}
	if err := registerBudgetMetrics(prometheus.NewRegistry(), rdb, writeFile(t, "budgets: [{per: team}]\n")); err == nil {
		t.Error("a bad budgets section was registered")
	}
}
