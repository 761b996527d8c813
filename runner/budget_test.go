package runner_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// testClock is the runner's clock in a test, moved by the test.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// adaID is ada's GitHub user id in the budget tests.
const adaID = 5001

// budgetWorld is a world whose runner counts spending in a real Redis
// against budgets, on clock; every answer of the scripted model reports
// 1100 tokens.
func budgetWorld(t *testing.T, budgets []policy.Budget, clock *testClock) (*world, *queue.Budgets, *queue.Outcomes) {
	t.Helper()
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	spending, outcomes := queue.NewBudgets(rdb), queue.NewOutcomes(rdb)
	script := demoScript(t)
	script.Usage = llmtest.Usage{PromptTokens: 1000, CompletionTokens: 100}
	w := newWorldWith(t, quickPolicy, script, func(c *runner.Config) {
		c.Server.Budgets = budgets
		c.Budgets, c.Outcomes, c.Now = spending, outcomes, clock.Now
	})
	return w, spending, outcomes
}

// adaFix is a "/agent fix" by ada, with her user id, as intake records it.
func (w *world) adaFix(t *testing.T, id string) app.Task {
	t.Helper()
	return w.commandOn(t, id, w.issue, "ada", app.VerbFix, func(tk *app.Task) { tk.RequesterID = adaID })
}

// A task that would start with its installation's monthly budget spent
// is refused with a comment saying which budget, what is left and when
// it renews; at the month's end the budget renews and the next task runs.
func TestBudgetRefusesUntilItRenews(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := &testClock{now: time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC)}
	w, spending, _ := budgetWorld(t, []policy.Budget{{Name: "acme monthly", Per: policy.PerInstallation, USD: 5, Tokens: 10_000}}, clock)
	acme := policy.BudgetSubject{Scope: policy.PerInstallation, ID: w.inst, Name: "acme"}
	// Another task of the installation spent the tokens this month.
	if err := spending.Record(ctx, "EARLIER", []policy.BudgetSubject{acme}, policy.Spend{Tokens: 10_000, USD: 1.5}, clock.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := w.runner.ProcessTask(ctx, w.adaFix(t, "REFUSED")); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("REFUSED"); rec.State != app.StateRefused {
		t.Errorf("the task ended %s; want refused", rec.State)
	}
	want := `Not started: the budget "acme monthly" (per installation, acme) is spent this month: $3.50 of $5.00 and 0 of 10000 tokens left; it renews on 2027-01-01 00:00 UTC.`
	if got := w.status("REFUSED"); !strings.Contains(got, want) {
		t.Errorf("the status comment does not say which budget, what is left and when it renews:\n%s\nwant it to hold:\n%s", got, want)
	}
	if n := len(w.model.Requests()); n != 0 {
		t.Errorf("the refused task asked the model %d times", n)
	}

	clock.set(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if err := w.runner.ProcessTask(ctx, w.adaFix(t, "RENEWED")); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("RENEWED"); rec.State != app.StateSucceeded {
		t.Fatalf("in January the task ended %s (%s); want succeeded:\n%s", rec.State, rec.Step, w.status("RENEWED"))
	}
	st, err := spending.Statuses(ctx, []policy.BudgetOf{{Budget: w.cfg.Server.Budgets[0], Subject: acme}}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := st[0].Spent.Tokens; got != 4*1100 {
		t.Errorf("January's spending is %d tokens; want the task's four steps, 4400", got)
	}
}

// A running task that spends its requester's budget stops at its next
// step, saying so; what it spent, its last step's included, is what its
// outcome records.
func TestBudgetStopsARunningTask(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := &testClock{now: time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)}
	people := policy.Budget{Name: "people", Per: policy.PerRequester, Window: 30 * 24 * time.Hour, Tokens: 2500}
	w, spending, outcomes := budgetWorld(t, []policy.Budget{people}, clock)
	if err := w.runner.ProcessTask(ctx, w.adaFix(t, "SPENDER")); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("SPENDER"); rec.State != app.StateFailed {
		t.Errorf("the task ended %s; want failed", rec.State)
	}
	// Before the third step 2200 tokens were spent; the third made 3300.
	if n := len(w.model.Requests()); n != 3 {
		t.Errorf("the model was asked %d times; want 3, the step that spent the budget the last", n)
	}
	// The report keeps mentions inert: @ and a zero-width joiner.
	want := "budget: the budget \"people\" (per requester, @\u200dada) is spent in the last 30d: 0 of 2500 tokens left; it renews on 2027-01-14 13:00 UTC"
	if got := w.status("SPENDER"); !strings.Contains(got, want) {
		t.Errorf("the status comment does not say the budget stopped the task:\n%s\nwant it to hold:\n%s", got, want)
	}
	counted, recorded := adaSpent(t, spending, outcomes, people, "SPENDER", clock.Now())
	if counted != recorded || recorded != 3300 {
		t.Errorf("the budget counts %d tokens, the outcome %d; want both 3300", counted, recorded)
	}
}

// Under limits.attempts every attempt spends against the budgets, each
// loop recorded once, and every attempt stops once their sum spends one.
func TestBudgetCountsEveryAttempt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	models, servers := scriptedModels(t, llm.Price{Input: 10}, searchScripts(100_000, "a", "b", "c"))
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	spending, outcomes := queue.NewBudgets(rdb), queue.NewOutcomes(rdb)
	clock := &testClock{now: time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)}
	people := policy.Budget{Name: "people", Per: policy.PerRequester, Tokens: 450_000}
	w := newWorldWith(t, quickPolicy+"limits: {attempts: 3}\nmodel: {attempts: [a, b, c]}\n", llmtest.Script{}, func(c *runner.Config) {
		c.Model, c.Server.Budgets = models, []policy.Budget{people}
		c.Budgets, c.Outcomes, c.Now = spending, outcomes, clock.Now
	})
	if err := w.runner.ProcessTask(ctx, w.adaFix(t, "ATTEMPTS")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("ATTEMPTS"); r.State != app.StateFailed || !strings.HasPrefix(r.Step, "budget: ") {
		t.Fatalf("task ended %s (%s); want failed on the budget:\n%s", r.State, r.Step, w.status("ATTEMPTS"))
	}
	asked := 0
	for _, srv := range servers {
		asked += len(srv.Requests())
	}
	// Every answer the attempts got, and nothing twice.
	counted, recorded := adaSpent(t, spending, outcomes, people, "ATTEMPTS", clock.Now())
	if want := int64(asked) * 100_000; counted != want || recorded != want {
		t.Errorf("the budget counts %d tokens and the outcome %d; want the %d answers' %d", counted, recorded, asked, want)
	}
	// Each attempt asks while the sum is below 450,000 tokens: five
	// answers at most, and one each in flight.
	if asked < 5 || asked > 7 {
		t.Errorf("the attempts asked %d times in all; want 5 to 7", asked)
	}
}

// adaSpent is what ada's budget counts in tokens at now, and what task's
// outcome records it spent.
func adaSpent(t *testing.T, spending *queue.Budgets, outcomes *queue.Outcomes, b policy.Budget, task string, now time.Time) (counted, recorded int64) {
	t.Helper()
	o, err := outcomes.Outcome(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	ada := policy.BudgetSubject{Scope: policy.PerRequester, ID: adaID, Name: "ada"}
	st, err := spending.Statuses(t.Context(), []policy.BudgetOf{{Budget: b, Subject: ada}}, now)
	if err != nil {
		t.Fatal(err)
	}
	return st[0].Spent.Tokens, o.Tokens
}

// searchScripts are scripts of ten searches each, one per model name,
// whose every answer reports tokens prompt tokens.
func searchScripts(tokens int64, names ...string) map[string]llmtest.Script {
	scripts := map[string]llmtest.Script{}
	for _, name := range names {
		var calls []llmtest.Call
		for i := range 10 {
			calls = append(calls, llmtest.Call{Name: "search", Arguments: llmtest.Arguments(fmt.Sprintf(`{"pattern":"%s%d"}`, name, i))})
		}
		s := steps(calls...)
		s.Usage = llmtest.Usage{PromptTokens: tokens}
		scripts[name] = s
	}
	return scripts
}

// A review runs the model as a fix does: its spending counts in the
// budgets, and a review asked for once they are spent is refused.
func TestBudgetCountsAReview(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := &testClock{now: time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)}
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	spending := queue.NewBudgets(rdb)
	monthly := policy.Budget{Name: "acme monthly", Per: policy.PerInstallation, Tokens: 1500}
	script := llmtest.Script{Steps: []llmtest.Step{{ToolCalls: []llmtest.Call{finishReview("Looks right.")}}},
		Usage: llmtest.Usage{PromptTokens: 1000, CompletionTokens: 100}}
	w := newWorldWith(t, reviewPolicy, script, func(c *runner.Config) {
		c.Server.Budgets = []policy.Budget{monthly}
		c.Budgets, c.Now = spending, clock.Now
	})
	pr := reviewPull(t, w, strings.Replace(fixedStats, "// Sum returns the sum of xs.", "// Sum returns the sum of xs, 0 for none.", 1))
	runReview(t, w, w.reviewTask(t, "REVIEW1", pr))
	acme := policy.BudgetSubject{Scope: policy.PerInstallation, ID: w.inst, Name: "acme"}
	st, err := spending.Statuses(ctx, []policy.BudgetOf{{Budget: monthly, Subject: acme}}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := st[0].Spent.Tokens; got != 1100 {
		t.Errorf("the review's spending is %d tokens; want its one answer's 1100", got)
	}

	clock.set(clock.Now().Add(time.Hour))
	if err := spending.Record(ctx, "EARLIER", []policy.BudgetSubject{acme}, policy.Spend{Tokens: 400}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	asked := len(w.model.Requests())
	if err := w.runner.ProcessTask(ctx, w.reviewTask(t, "REVIEW2", pr)); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("REVIEW2"); rec.State != app.StateRefused {
		t.Errorf("a review past the budget ended %s; want refused", rec.State)
	}
	if n := len(w.model.Requests()) - asked; n != 0 {
		t.Errorf("the refused review asked the model %d times", n)
	}
}
