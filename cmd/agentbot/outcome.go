package main

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/outcome"
	"github.com/agentbot/agentbot/runner/workspace"
)

// outcomeRecorder returns the part of a worker that records what became of
// the agent's pull requests (merges and reverts, queued by intake as
// outcome events), until its context is cancelled. It reads history from
// the mirrors under dataDir, which it shares with the worker's checkouts
// under their per-repository lock. One event at a time: each is a fetch
// and two diffs, and they are rare. metrics is nil in a process that
// exports none.
func outcomeRecorder(rdb redis.UniversalClient, gh *github.App, dataDir string, metrics *queue.OutcomeMetrics, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		cfg := outcome.Config{
			Outcomes: queue.NewOutcomes(rdb), Tokens: gh, Logger: log,
			Workspaces: workspace.NewManager(dataDir, workspace.Options{Logger: log}),
		}
		if metrics != nil {
			cfg.Metrics = metrics
		}
		rec, err := outcome.New(cfg)
		if err != nil {
			return err
		}
		return queue.NewEventServer(rdb, rec, queue.ServerConfig{Concurrency: 1, ShutdownTimeout: workerShutdown, Logger: log}).Run(ctx)
	}
}

// workerOutcomes is where the runner saves each finished task's outcome:
// counted in metrics too when the process exports them (nil otherwise).
func workerOutcomes(rdb redis.UniversalClient, metrics *queue.OutcomeMetrics) runner.Outcomes {
	if metrics == nil {
		return queue.NewOutcomes(rdb)
	}
	return countedOutcomes{queue.NewOutcomes(rdb), metrics}
}

// countedOutcomes counts each outcome it saves as a finished task.
type countedOutcomes struct {
	*queue.Outcomes
	metrics *queue.OutcomeMetrics
}

func (c countedOutcomes) Save(ctx context.Context, o app.TaskOutcome) error {
	if err := c.Outcomes.Save(ctx, o); err != nil {
		return err
	}
	c.metrics.Finished(o)
	return nil
}
