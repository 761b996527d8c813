package runner

import (
	"context"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
)

// The operator's budgets per period (server config budgets:): a task is
// refused at admission while one of its budgets is spent, and every loop
// records what it has spent before each step, then checks its budgets
// again, so that a running task stops at the step after it spends one and
// other tasks count its spending from then on. Each loop records under its
// own id (an attempt's, or the task's), as a running total: a loop resumed
// after a crash or an approval counts only what it spends beyond its last
// record.

// Budgets counts what loops spend against the operator's budgets;
// queue.Budgets satisfies it.
type Budgets interface {
	// Record sets what loop has spent so far for subjects at at; only
	// the increase over its last record counts, in at's hour.
	Record(ctx context.Context, loop string, subjects []policy.BudgetSubject, total policy.Spend, at time.Time) error
	// Statuses works out each budget of its subject at now.
	Statuses(ctx context.Context, of []policy.BudgetOf, now time.Time) ([]policy.BudgetStatus, error)
}

// now is the runner's clock, which decides the budgets' periods.
func (r *Runner) now() time.Time {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Now()
}

// budgetSubjects are whom tk spends for, once its repository is read.
func budgetSubjects(tk *task) []policy.BudgetSubject {
	return policy.TaskSubjects(*tk.Task, tk.policy.Repo.ID)
}

// overBudget returns the first of tk's budgets that is spent.
func (r *Runner) overBudget(ctx context.Context, tk *task) (policy.BudgetStatus, bool, error) {
	of := policy.BudgetsOf(r.cfg.Server.Budgets, budgetSubjects(tk))
	if r.cfg.Budgets == nil || len(of) == 0 {
		return policy.BudgetStatus{}, false, nil
	}
	statuses, err := r.cfg.Budgets.Statuses(ctx, of, r.now())
	if err != nil {
		return policy.BudgetStatus{}, false, err
	}
	st, over := policy.OverBudget(statuses)
	return st, over, nil
}

// admitBudgets refuses a task that would run the model while one of its
// budgets is spent, saying which, what is left and when it renews: a
// refusal is an *ended.
func (r *Runner) admitBudgets(ctx context.Context, tk *task) error {
	if !spends(tk.Verb) {
		return nil
	}
	st, over, err := r.overBudget(ctx, tk)
	if !over || err != nil {
		return err
	}
	tk.log.Info("refused: a budget is spent", "budget", st.Budget.Name, "subject", st.Subject.Key(), "usd", st.Spent.USD, "tokens", st.Spent.Tokens)
	return refused(app.Errorf(app.EBudget, "Not started: %s.", st.Summary()))
}

// spends reports whether a task of verb runs the model, and so spends.
func spends(v app.Verb) bool {
	switch v {
	case app.VerbFix, app.VerbFixCI, app.VerbRetry, app.VerbAsk, app.VerbExplain, app.VerbReview:
		return true
	}
	return false
}

// budgetCheck is the loop's per-step check of tk's budgets for the loop
// named loop: it records what the loop has spent so far, then stops it
// once a budget is spent, this spending included. Nil without budgets.
func (r *Runner) budgetCheck(tk *task, loop string) func(context.Context, llm.Usage) (string, error) {
	if r.cfg.Budgets == nil {
		return nil
	}
	return func(ctx context.Context, used llm.Usage) (string, error) {
		if err := r.recordSpend(ctx, tk, loop, used); err != nil {
			return "", err
		}
		st, over, err := r.overBudget(ctx, tk)
		if !over || err != nil {
			return "", err
		}
		return st.Summary(), nil
	}
}

// recordSpend records what loop has spent so far.
func (r *Runner) recordSpend(ctx context.Context, tk *task, loop string, used llm.Usage) error {
	if r.cfg.Budgets == nil {
		return nil
	}
	return r.cfg.Budgets.Record(ctx, loop, budgetSubjects(tk), policy.Spend{Tokens: used.Total(), USD: used.CostUSD}, r.now())
}

// loopSpent records what a loop that returned st and err spent in all,
// its last step's included, and returns err, or the record's error when
// the loop ended well: the task is then tried again, its loop returns its
// final state at once, and the record is made then.
func (r *Runner) loopSpent(ctx context.Context, tk *task, loop string, st *agent.State, err error) error {
	rerr := r.recordSpend(context.WithoutCancel(ctx), tk, loop, st.Usage)
	switch {
	case err != nil && rerr != nil:
		tk.log.Warn("record the loop's spending", "loop", loop, "err", rerr)
	case rerr != nil:
		return rerr
	}
	return err
}
