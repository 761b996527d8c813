package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/bmatcuk/doublestar/v4"
)

// Budgets per period are the operator's caps on what tasks spend, in
// tokens and US dollars, over a calendar month (UTC) or a rolling window:
// per installation, per repository or per requester, each of which has its
// own budget. They are counted from what tasks actually spent, as their
// model calls reported it, and a task's spending counts from its first
// step, not only once it ends. A task that would start with a budget spent
// is refused; a running one that spends it stops at its next step.

// BudgetScope is who a budget is per.
type BudgetScope string

// Budget scopes.
const (
	PerInstallation BudgetScope = "installation"
	PerRepository   BudgetScope = "repository"
	PerRequester    BudgetScope = "requester"
)

// budgetScopes are the scopes in the order a task's subjects are listed.
var budgetScopes = []BudgetScope{PerInstallation, PerRepository, PerRequester}

// MaxBudgetWindow is the longest rolling window a budget may have: spending
// is kept by the hour for this long (and a day more), which also covers the
// current and the previous calendar month.
const MaxBudgetWindow = 90 * 24 * time.Hour

// Budget is one entry of the server config's budgets:.
type Budget struct {
	Name string
	Per  BudgetScope
	// Only narrows the budget to some installations (ids), repositories
	// (owner/name globs) or requesters (logins); empty: every one, each
	// with a budget of its own.
	Only []string
	// Window is the rolling window; zero means the calendar month, UTC.
	Window time.Duration
	USD    float64 // zero: no limit in dollars
	Tokens int64   // zero: no limit in tokens
}

// BudgetSubject is one installation, repository or requester that spends,
// keyed by its numeric id: a name can be transferred or reused, an id
// never. Name is for people: the installation's account, owner/name, or
// the login.
type BudgetSubject struct {
	Scope BudgetScope `json:"scope"`
	ID    int64       `json:"id"`
	Name  string      `json:"name"`
}

// Key is the subject's key in the spending store: scope and id.
func (s BudgetSubject) Key() string { return string(s.Scope) + ":" + strconv.FormatInt(s.ID, 10) }

// String names the subject for people.
func (s BudgetSubject) String() string {
	switch {
	case s.Scope == PerRequester && s.Name != "":
		return "@" + s.Name
	case s.Name != "":
		return s.Name
	}
	return fmt.Sprintf("%s %d", s.Scope, s.ID)
}

// TaskSubjects are whom task t spends for: its installation, its
// repository (repoID, known once the repository is read) and its
// requester. A subject whose id is unknown (0) is left out: a task queued
// before requesters' ids were kept counts against no requester's budget.
func TaskSubjects(t app.Task, repoID int64) []BudgetSubject {
	owner, _, _ := strings.Cut(t.Repo, "/")
	all := []BudgetSubject{
		{Scope: PerInstallation, ID: t.InstallationID, Name: owner},
		{Scope: PerRepository, ID: repoID, Name: t.Repo},
		{Scope: PerRequester, ID: t.RequesterID, Name: t.Requester},
	}
	return slices.DeleteFunc(all, func(s BudgetSubject) bool { return s.ID <= 0 })
}

// Applies reports whether b is a budget of subject s.
func (b Budget) Applies(s BudgetSubject) bool {
	if s.Scope != b.Per {
		return false
	}
	if len(b.Only) == 0 {
		return true
	}
	return slices.ContainsFunc(b.Only, func(o string) bool {
		switch b.Per {
		case PerInstallation:
			return o == strconv.FormatInt(s.ID, 10)
		case PerRepository:
			return doublestar.MatchUnvalidated(strings.ToLower(o), strings.ToLower(s.Name))
		}
		return strings.EqualFold(o, s.Name)
	})
}

// Span is the period in a word: "month", or the window as configured
// ("30d").
func (b Budget) Span() string {
	if b.Window == 0 {
		return "month"
	}
	return formatWindow(b.Window)
}

// PeriodName says what the period is: "this month" or "in the last 30 days".
func (b Budget) PeriodName() string {
	if b.Window == 0 {
		return "this month"
	}
	return "in the last " + formatWindow(b.Window)
}

// Period is the span b counts at now: [start, end). For a calendar month,
// end is when it renews; for a window, end is now.
func (b Budget) Period(now time.Time) (start, end time.Time) {
	now = now.UTC()
	if b.Window == 0 {
		start = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	// Whole hours, as spending is kept: the current hour counts.
	end = now.Truncate(time.Hour).Add(time.Hour)
	return end.Add(-b.Window), end
}

// Spend is what was spent: tokens sent and received, and their cost.
type Spend struct {
	Tokens int64   `json:"tokens"`
	USD    float64 `json:"usd"`
}

// Add returns s and t together.
func (s Spend) Add(t Spend) Spend { return Spend{Tokens: s.Tokens + t.Tokens, USD: s.USD + t.USD} }

// HourSpend is what was spent within the hour that starts at Hour (UTC).
type HourSpend struct {
	Hour time.Time `json:"hour"`
	Spend
}

// BudgetStatus is a budget of one subject at one moment.
type BudgetStatus struct {
	Budget  Budget
	Subject BudgetSubject
	Spent   Spend     // within the period
	Start   time.Time // when the period counts from
	// Renews is when the budget renews: the next month's start, or for a
	// spent rolling window the hour at which enough of its spending has
	// left it; zero for a window that is not spent.
	Renews time.Time
	// Forecast is what the period will have spent at the current rate: a
	// month's spending so far projected over the whole month; for a
	// window, the last day's (or the whole window's, when shorter)
	// projected over the window.
	Forecast Spend
}

// Status works out b for subject s at now from s's spending by hour,
// oldest first.
func (b Budget) Status(s BudgetSubject, hours []HourSpend, now time.Time) BudgetStatus {
	start, end := b.Period(now)
	st := BudgetStatus{Budget: b, Subject: s, Start: start}
	var in []HourSpend
	for _, h := range hours {
		if !h.Hour.Before(start) && h.Hour.Before(end) {
			in = append(in, h)
			st.Spent = st.Spent.Add(h.Spend)
		}
	}
	if b.Window == 0 {
		st.Renews = end
		elapsed := max(now.Sub(start), time.Hour)
		st.Forecast = scale(st.Spent, float64(end.Sub(start))/float64(elapsed))
		return st
	}
	recent := min(b.Window, 24*time.Hour)
	var last Spend
	for _, h := range in {
		if !h.Hour.Before(end.Add(-recent)) {
			last = last.Add(h.Spend)
		}
	}
	st.Forecast = scale(last, float64(b.Window)/float64(recent))
	if st.Over() {
		// The oldest hours leave the window first; it renews once what is
		// left is under every limit.
		left := st.Spent
		for _, h := range in {
			left = Spend{Tokens: left.Tokens - h.Tokens, USD: left.USD - h.USD}
			if !b.over(left) {
				st.Renews = h.Hour.Add(time.Hour + b.Window)
				break
			}
		}
	}
	return st
}

func scale(s Spend, f float64) Spend {
	return Spend{Tokens: int64(float64(s.Tokens) * f), USD: s.USD * f}
}

// over reports whether spent reaches one of b's limits.
func (b Budget) over(spent Spend) bool {
	return (b.USD > 0 && spent.USD >= b.USD) || (b.Tokens > 0 && spent.Tokens >= b.Tokens)
}

// Over reports whether the budget is spent: one of its limits is reached.
func (st BudgetStatus) Over() bool { return st.Budget.over(st.Spent) }

// Left says what is left of each limit, such as "$0.00 of $20.00 and
// 1200 of 50000 tokens left".
func (st BudgetStatus) Left() string {
	b := st.Budget
	var parts []string
	if b.USD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f of $%.2f", max(0, b.USD-st.Spent.USD), b.USD))
	}
	if b.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", max(0, b.Tokens-st.Spent.Tokens), b.Tokens))
	}
	return strings.Join(parts, " and ") + " left"
}

// RenewsText says when the budget renews, "" when it is not known.
func (st BudgetStatus) RenewsText() string {
	if st.Renews.IsZero() {
		return ""
	}
	return "it renews on " + st.Renews.UTC().Format("2006-01-02 15:04 UTC")
}

// Summary says which budget is spent, how much is left and when it
// renews: the sentence a refused or stopped task reports.
func (st BudgetStatus) Summary() string {
	s := fmt.Sprintf("the budget %q (per %s, %s) is spent %s: %s", st.Budget.Name, st.Budget.Per, st.Subject, st.Budget.PeriodName(), st.Left())
	if r := st.RenewsText(); r != "" {
		s += "; " + r
	}
	return s
}

// OverBudget returns the first status of statuses that is spent.
func OverBudget(statuses []BudgetStatus) (BudgetStatus, bool) {
	i := slices.IndexFunc(statuses, BudgetStatus.Over)
	if i < 0 {
		return BudgetStatus{}, false
	}
	return statuses[i], true
}

// BudgetsOf returns the budgets that apply to each of subjects, paired
// with the subject, in the order budgets are configured.
func BudgetsOf(budgets []Budget, subjects []BudgetSubject) []BudgetOf {
	var out []BudgetOf
	for _, b := range budgets {
		for _, s := range subjects {
			if b.Applies(s) {
				out = append(out, BudgetOf{Budget: b, Subject: s})
			}
		}
	}
	return out
}

// BudgetOf is a budget with one subject it applies to.
type BudgetOf struct {
	Budget  Budget
	Subject BudgetSubject
}

// rawBudget is one entry of budgets: as written.
type rawBudget struct {
	Name   *string  `yaml:"name"`
	Per    *string  `yaml:"per"`
	Only   []string `yaml:"only"`
	Period *string  `yaml:"period"`
	Window *string  `yaml:"window"`
	USD    *float64 `yaml:"usd"`
	Tokens *int64   `yaml:"tokens"`
}

// parseBudgets reads budgets:, each problem at its line.
func parseBudgets(name string, raw []rawBudget, lines map[string]int) ([]Budget, []fieldError) {
	var errs []fieldError
	var out []Budget
	names := map[string]int{}
	for i, r := range raw {
		it := listItem{file: name, item: fmt.Sprintf("budgets[%d]", i), lines: lines, errs: &errs}
		fail := it.fail
		var b Budget
		switch {
		case r.Per == nil:
			fail("per", "is missing: installation, repository or requester")
		case slices.Contains(budgetScopes, BudgetScope(*r.Per)):
			b.Per = BudgetScope(*r.Per)
		default:
			fail("per", "%q is not installation, repository or requester", *r.Per)
		}
		for j, o := range r.Only {
			key := fmt.Sprintf("only[%d]", j)
			switch b.Per {
			case PerInstallation:
				if id, err := strconv.ParseInt(o, 10, 64); err != nil || id <= 0 {
					fail(key, "%q is not an installation id (a number, as in the App's installation settings URL)", o)
				}
			case PerRepository:
				if problem := checkGlob(o); problem != "" {
					fail(key, "%s", problem)
				} else if !strings.Contains(o, "/") {
					fail(key, "%q is not owner/name (a glob such as acme/* may stand for either)", o)
				}
			case PerRequester:
				if o == "" || strings.ContainsAny(o, "/@ ") {
					fail(key, "%q is not a GitHub login", o)
				}
			}
		}
		b.Only = r.Only
		switch {
		case r.Period != nil && r.Window != nil:
			fail("window", "is set with period; a budget counts over a calendar month (period: month) or a rolling window, not both")
		case r.Period != nil && *r.Period != "month":
			fail("period", "%q is not month; for a rolling window, set window (such as 30d) instead", *r.Period)
		case r.Window != nil:
			w, problem := parseWindow(*r.Window)
			if problem != "" {
				fail("window", "%s", problem)
			}
			b.Window = w
		}
		if r.USD == nil && r.Tokens == nil {
			fail("usd", "is missing: a budget limits usd, tokens or both")
		}
		if r.USD != nil {
			if *r.USD <= 0 {
				fail("usd", "%v must be more than zero", *r.USD)
			}
			b.USD = *r.USD
		}
		if r.Tokens != nil {
			if *r.Tokens <= 0 {
				fail("tokens", "%d must be more than zero", *r.Tokens)
			}
			b.Tokens = *r.Tokens
		}
		b.Name = fmt.Sprintf("per %s, %s", b.Per, periodWord(b.Window))
		if r.Name != nil {
			b.Name = strings.TrimSpace(*r.Name)
		}
		switch line, dup := names[b.Name]; {
		case b.Name == "":
			fail("name", "is empty")
		case dup:
			fail("name", "%q names two budgets (the other on line %d); give each its own name", b.Name, line)
		default:
			names[b.Name] = it.line("name")
		}
		if it.ok() {
			out = append(out, b)
		}
	}
	return out, errs
}

// periodWord is a budget's period in a default name: "monthly" or "30d".
func periodWord(window time.Duration) string {
	if window == 0 {
		return "monthly"
	}
	return formatWindow(window)
}

// parseWindow reads a rolling window: days (30d) or a Go duration (12h),
// whole hours from 1h to MaxBudgetWindow.
func parseWindow(s string) (time.Duration, string) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Sprintf("%q is not a window such as 30d or 12h", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Sprintf("%q is not a window such as 30d or 12h", s)
		}
	}
	switch {
	case d < time.Hour || d%time.Hour != 0:
		return 0, fmt.Sprintf("%q is not a whole number of hours (1h at least): spending is counted by the hour", s)
	case d > MaxBudgetWindow:
		return 0, fmt.Sprintf("%q is longer than %s, the longest window spending is kept for", s, formatWindow(MaxBudgetWindow))
	}
	return d, ""
}

// formatWindow writes a window as it is configured: 30d, or 12h.
func formatWindow(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return fmt.Sprintf("%dh", d/time.Hour)
}
