// Package outcome records what became of the agent's pull requests. It
// consumes the outcome events intake queues (app.OutcomeEvent): when a
// pull request the agent opened is merged, it measures how much of the
// agent's final diff survived review, and when a merged one is reverted,
// by a pushed revert commit or a merged revert pull request, it marks it
// reverted. Both are recorded once however often an event is delivered,
// and counted in the metrics once.
//
// Survival is measured with real git on the workspace manager's mirror,
// fetched first: the agent's final diff is Base..Pushed as its task
// recorded them, the merged diff runs from the merge base of the agent's
// base and the merge commit to the merge commit. That one rule covers the
// three ways GitHub merges: a merge commit, a squashed commit and rebased
// commits all end in the commit GitHub reports as merge_commit_sha, and
// the agent's base is on the base branch's history, so the merged diff is
// everything the base branch gained up to the merge. Lines others added on
// the base branch meanwhile only widen it, and survival counts the agent's
// lines alone. The mirror, not GitHub's compare API, because the API
// truncates large diffs and the mirror is there already.
package outcome

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Outcomes keeps the tasks' outcomes; queue.Outcomes satisfies it.
type Outcomes interface {
	// ByPR finds the outcome of the task that opened repo#pr, or an
	// *app.Error with code app.ENotFound.
	ByPR(ctx context.Context, repo string, pr int) (app.TaskOutcome, error)
	// SetMerged records the merge unless one was recorded; first
	// reports whether this call recorded it.
	SetMerged(ctx context.Context, task, mergeCommit string, survival *app.Survival) (o app.TaskOutcome, first bool, err error)
	// MarkReverted marks the merged outcomes r undoes and returns those
	// it marked now.
	MarkReverted(ctx context.Context, r app.Revert) ([]app.TaskOutcome, error)
}

// Metrics counts merges and reverts; queue.OutcomeMetrics satisfies it.
type Metrics interface {
	Merged(o app.TaskOutcome)
	Reverted(o app.TaskOutcome)
}

// Tokens mints installation tokens; github.App satisfies it.
type Tokens interface {
	Token(ctx context.Context, installationID int64, repo string, perms app.TokenPermissions) (app.RepoToken, error)
}

// Config is what a Recorder needs. Metrics is nil in a process that
// exports none.
type Config struct {
	Outcomes   Outcomes
	Tokens     Tokens
	Workspaces *workspace.Manager
	Metrics    Metrics
	Logger     *slog.Logger // slog.Default() when nil
}

// Recorder records outcome events; it satisfies queue.EventHandler.
type Recorder struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns a Recorder.
func New(cfg Config) (*Recorder, error) {
	if cfg.Outcomes == nil || cfg.Tokens == nil || cfg.Workspaces == nil {
		return nil, errors.New("outcome: Outcomes, Tokens and Workspaces are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Recorder{cfg: cfg, log: log}, nil
}

// ProcessEvent records e: the merge first, then the reverts, so that a
// merged revert pull request that was itself the agent's is both. An error
// means the event should be tried again (Redis, GitHub or the fetch
// failed); what can never be measured is logged and recorded without it.
func (r *Recorder) ProcessEvent(ctx context.Context, e app.OutcomeEvent) error {
	log := r.log.With("outcome_event", e.ID, "delivery", e.Delivery, "repo", e.Repo)
	if e.Merge != nil {
		if err := r.merged(ctx, log, e); err != nil {
			log.Error("record merge; it will be tried again", "pr", e.Merge.PR, "err", err)
			return err
		}
	}
	for _, rv := range e.Reverts {
		marked, err := r.cfg.Outcomes.MarkReverted(ctx, rv)
		// What was marked before a failure is counted now: the retry
		// finds it marked and does not count it again.
		for _, o := range marked {
			log.Info("agent pull request reverted", "task", o.Task, "pr", o.PR, "by_commit", rv.Commit, "by_pr", rv.PR)
			r.count(func(m Metrics) { m.Reverted(o) })
		}
		if err != nil {
			log.Error("record revert; it will be tried again", "err", err)
			return err
		}
	}
	return nil
}

// merged records the merge of e on the outcome of the task that opened the
// pull request, if a task did.
func (r *Recorder) merged(ctx context.Context, log *slog.Logger, e app.OutcomeEvent) error {
	m := e.Merge
	o, err := r.cfg.Outcomes.ByPR(ctx, e.Repo, m.PR)
	if app.ErrorCode(err) == app.ENotFound {
		log.Info("merged pull request not opened by the agent", "pr", m.PR)
		return nil
	}
	if err != nil {
		return err
	}
	if o.Merged {
		log.Info("merge already recorded", "task", o.Task, "pr", m.PR)
		return nil
	}
	survival, err := r.survival(ctx, log, e, o)
	if err != nil {
		return err
	}
	o, first, err := r.cfg.Outcomes.SetMerged(ctx, o.Task, m.Commit, survival)
	if err != nil {
		return err
	}
	if !first {
		return nil // another worker recorded it meanwhile
	}
	attrs := []any{"task", o.Task, "pr", m.PR, "merge_commit", m.Commit}
	if survival != nil {
		attrs = append(attrs, "kept", survival.Kept, "total", survival.Total, "edit_distance", survival.EditDistance())
	}
	log.Info("agent pull request merged", attrs...)
	r.count(func(m Metrics) { m.Merged(o) })
	return nil
}

// survival measures how much of the agent's final diff the merge kept. It
// is nil, with the reason logged, when it cannot ever be measured: an
// outcome recorded without its commits, or commits the repository no
// longer has.
func (r *Recorder) survival(ctx context.Context, log *slog.Logger, e app.OutcomeEvent, o app.TaskOutcome) (*app.Survival, error) {
	if o.Base == "" || o.Pushed == "" {
		log.Warn("merged without survival: the task recorded no pushed commit", "task", o.Task)
		return nil, nil
	}
	tok, err := r.cfg.Tokens.Token(ctx, e.InstallationID, e.Repo, app.TokenPermissions{Contents: "read"})
	if err != nil {
		return nil, err
	}
	h, err := r.cfg.Workspaces.History(ctx, e.Repo, workspace.Remote{URL: e.CloneURL, Token: tok.Value})
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", e.Repo, err)
	}
	s, err := measure(ctx, h, o.Base, o.Pushed, e.Merge.Commit)
	if err == nil {
		return &s, nil
	}
	if code := app.ErrorCode(err); code == app.ENotFound || code == app.EInvalid {
		log.Warn("merged without survival", "task", o.Task, "err", err)
		return nil, nil
	}
	return nil, err
}

// measure compares the agent's diff, base..pushed, with what the base
// branch gained up to the merge commit.
func measure(ctx context.Context, h *workspace.History, base, pushed, merge string) (app.Survival, error) {
	agent, err := h.Diff(ctx, base, pushed)
	if err != nil {
		return app.Survival{}, err
	}
	from, err := h.MergeBase(ctx, base, merge)
	if err != nil {
		return app.Survival{}, err
	}
	merged, err := h.Diff(ctx, from, merge)
	if err != nil {
		return app.Survival{}, err
	}
	return app.DiffSurvival(agent, merged)
}

func (r *Recorder) count(f func(Metrics)) {
	if r.cfg.Metrics != nil {
		f(r.cfg.Metrics)
	}
}
