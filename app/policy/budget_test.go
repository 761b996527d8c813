package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

func TestParseBudgetsErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "budgets:\n  - {per: requester, usd: 5, dollars: 5}\n",
			"server.yaml:2: budgets[0].dollars: unknown key (expected one of: name, per, only, period, window, usd, tokens)"},
		{"per missing", "budgets:\n  - {usd: 5}\n", "server.yaml:2: budgets[0].per: is missing: installation, repository or requester"},
		{"bad per", "budgets:\n  - per: organisation\n    usd: 5\n", `server.yaml:2: budgets[0].per: "organisation" is not installation, repository or requester`},
		{"no limit", "budgets:\n  - {per: repository}\n", "server.yaml:2: budgets[0].usd: is missing: a budget limits usd, tokens or both"},
		{"zero limit", "budgets:\n  - per: repository\n    tokens: 0\n", "server.yaml:3: budgets[0].tokens: 0 must be more than zero"},
		{"negative usd", "budgets:\n  - per: repository\n    usd: -1\n", "server.yaml:3: budgets[0].usd: -1 must be more than zero"},
		{"usd not a number", "budgets:\n  - per: repository\n    usd: lots\n", `server.yaml:3: budgets[0].usd: "lots" is not a number`},
		{"period and window", "budgets:\n  - {per: requester, usd: 5, period: month, window: 30d}\n",
			"server.yaml:2: budgets[0].window: is set with period; a budget counts over a calendar month (period: month) or a rolling window, not both"},
		{"bad period", "budgets:\n  - per: requester\n    usd: 5\n    period: week\n",
			`server.yaml:4: budgets[0].period: "week" is not month; for a rolling window, set window (such as 30d) instead`},
		{"bad window", "budgets:\n  - per: requester\n    usd: 5\n    window: a while\n", `server.yaml:4: budgets[0].window: "a while" is not a window such as 30d or 12h`},
		{"window under an hour", "budgets:\n  - per: requester\n    usd: 5\n    window: 90m\n",
			`server.yaml:4: budgets[0].window: "90m" is not a whole number of hours (1h at least): spending is counted by the hour`},
		{"window too long", "budgets:\n  - per: requester\n    usd: 5\n    window: 120d\n",
			`server.yaml:4: budgets[0].window: "120d" is longer than 90d, the longest window spending is kept for`},
		{"installation by name", "budgets:\n  - per: installation\n    only: [acme]\n    usd: 5\n",
			`server.yaml:3: budgets[0].only[0]: "acme" is not an installation id (a number, as in the App's installation settings URL)`},
		{"repository without owner", "budgets:\n  - per: repository\n    only: [infra]\n    usd: 5\n",
			`server.yaml:3: budgets[0].only[0]: "infra" is not owner/name (a glob such as acme/* may stand for either)`},
		{"requester as a mention", "budgets:\n  - per: requester\n    only: ['@ada']\n    usd: 5\n",
			`server.yaml:3: budgets[0].only[0]: "@ada" is not a GitHub login`},
		{"same name twice", "budgets:\n  - {per: requester, usd: 5}\n  - {per: requester, tokens: 9}\n",
			`server.yaml:3: budgets[1].name: "per requester, monthly" names two budgets (the other on line 2); give each its own name`},
		{"not a list", "budgets: {per: requester}\n", "server.yaml:1: budgets: expected a list, not a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseServerConfig("server.yaml", []byte(tt.yaml))
			if got := errorText(err); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestBudgetApplies(t *testing.T) {
	inst := BudgetSubject{Scope: PerInstallation, ID: 7, Name: "acme"}
	repo := BudgetSubject{Scope: PerRepository, ID: 70, Name: "acme/Infra-Live"}
	ada := BudgetSubject{Scope: PerRequester, ID: 700, Name: "Ada"}
	tests := []struct {
		budget  Budget
		subject BudgetSubject
		want    bool
	}{
		{Budget{Per: PerInstallation}, inst, true},
		{Budget{Per: PerInstallation}, repo, false},
		{Budget{Per: PerInstallation, Only: []string{"8"}}, inst, false},
		{Budget{Per: PerInstallation, Only: []string{"8", "7"}}, inst, true},
		{Budget{Per: PerRepository, Only: []string{"acme/infra-*"}}, repo, true},
		{Budget{Per: PerRepository, Only: []string{"acme/web"}}, repo, false},
		{Budget{Per: PerRequester, Only: []string{"ada"}}, ada, true},
		{Budget{Per: PerRequester, Only: []string{"grace"}}, ada, false},
	}
	for _, tt := range tests {
		if got := tt.budget.Applies(tt.subject); got != tt.want {
			t.Errorf("%+v applies to %+v: %v, want %v", tt.budget, tt.subject, got, tt.want)
		}
	}
	task := app.Task{InstallationID: 7, Repo: "acme/infra-live", Requester: "ada"}
	if got := TaskSubjects(task, 70); len(got) != 2 || got[0].Key() != "installation:7" || got[1].Key() != "repository:70" {
		t.Errorf("subjects of a task without a requester id: %+v; want its installation and repository only", got)
	}
}

func hourAt(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestBudgetStatusMonth(t *testing.T) {
	b := Budget{Name: "team", Per: PerRequester, USD: 10, Tokens: 1000}
	ada := BudgetSubject{Scope: PerRequester, ID: 1, Name: "ada"}
	hours := []HourSpend{
		{Hour: hourAt("2026-11-30T23:00:00Z"), Spend: Spend{Tokens: 900, USD: 9}}, // last month
		{Hour: hourAt("2026-12-01T00:00:00Z"), Spend: Spend{Tokens: 100, USD: 2}},
		{Hour: hourAt("2026-12-02T10:00:00Z"), Spend: Spend{Tokens: 200, USD: 1}},
	}
	now := hourAt("2026-12-04T00:00:00Z") // 3 of December's 31 days
	st := b.Status(ada, hours, now)
	if st.Spent != (Spend{Tokens: 300, USD: 3}) || st.Over() {
		t.Errorf("spent %+v (over %v); want December's 300 tokens and $3, not over", st.Spent, st.Over())
	}
	if want := hourAt("2027-01-01T00:00:00Z"); !st.Renews.Equal(want) {
		t.Errorf("renews %s, want %s", st.Renews, want)
	}
	if st.Forecast.Tokens != 3100 || st.Forecast.USD < 30.99 || st.Forecast.USD > 31.01 {
		t.Errorf("forecast %+v; want 3100 tokens and $31 (3 days' spending over 31)", st.Forecast)
	}
	if got, want := st.Left(), "$7.00 of $10.00 and 700 of 1000 tokens left"; got != want {
		t.Errorf("left %q, want %q", got, want)
	}
	// December's spending reaches the tokens: spent, and renewed in January.
	hours = append(hours, HourSpend{Hour: hourAt("2026-12-31T23:00:00Z"), Spend: Spend{Tokens: 700}})
	if st := b.Status(ada, hours, hourAt("2026-12-31T23:30:00Z")); !st.Over() ||
		st.Summary() != `the budget "team" (per requester, @ada) is spent this month: $7.00 of $10.00 and 0 of 1000 tokens left; it renews on 2027-01-01 00:00 UTC` {
		t.Errorf("at the month's end: over %v, %q", st.Over(), st.Summary())
	}
	if st := b.Status(ada, hours, hourAt("2027-01-01T00:00:00Z")); st.Over() || st.Spent != (Spend{}) {
		t.Errorf("in January: spent %+v, over %v; want renewed", st.Spent, st.Over())
	}
}

func TestBudgetStatusWindow(t *testing.T) {
	b := Budget{Name: "weekly", Per: PerRepository, Window: 7 * 24 * time.Hour, USD: 10}
	repo := BudgetSubject{Scope: PerRepository, ID: 2, Name: "acme/app"}
	hours := []HourSpend{
		{Hour: hourAt("2026-11-20T10:00:00Z"), Spend: Spend{USD: 50}}, // out of the window
		{Hour: hourAt("2026-11-28T10:00:00Z"), Spend: Spend{USD: 4}},
		{Hour: hourAt("2026-11-30T10:00:00Z"), Spend: Spend{USD: 5}},
		{Hour: hourAt("2026-12-03T12:00:00Z"), Spend: Spend{USD: 2}},
	}
	now := hourAt("2026-12-04T09:15:00Z")
	st := b.Status(repo, hours, now)
	if st.Spent.USD != 11 || !st.Over() {
		t.Fatalf("spent %+v; want $11 of the last 7 days, over", st.Spent)
	}
	// Once the 28th's $4 leaves the window, $7 is left in it.
	if want := hourAt("2026-12-05T11:00:00Z"); !st.Renews.Equal(want) {
		t.Errorf("renews %s, want %s", st.Renews, want)
	}
	if !strings.Contains(st.Summary(), "is spent in the last 7d: $0.00 of $10.00 left; it renews on 2026-12-05 11:00 UTC") {
		t.Errorf("summary %q", st.Summary())
	}
	// The last day's $2, over seven days.
	if st.Forecast.USD != 14 {
		t.Errorf("forecast %+v, want $14", st.Forecast)
	}
	if st := b.Status(repo, hours, hourAt("2026-12-05T11:00:00Z")); st.Over() || st.Spent.USD != 7 {
		t.Errorf("when it renews: spent %+v, over %v; want $7, not over", st.Spent, st.Over())
	}
}
