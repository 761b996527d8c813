package main

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/queue"
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
