package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/outcome"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// ShutdownTimeout is how long a stopping worker waits for its tasks: they
// save their state after every step, so this only needs to cover one save
// and the sandbox's removal; what is still running goes back to the queue
// and resumes elsewhere.
const ShutdownTimeout = 15 * time.Second

// Driver is the sandbox engine a worker opens under its own id: it starts
// the tasks' sandboxes, removes the dead workers' and is closed last.
type Driver interface {
	sandbox.Sandboxes
	Sandboxes
	Close() error
}

// Config is what a worker is made of. Whoever runs one builds the parts
// from its flags; Run assembles them around the worker's id, which exists
// only once its lease is held.
type Config struct {
	Redis redis.UniversalClient
	// Runner is the task runner's configuration but for Sandbox,
	// Workspaces and Logger, which Run opens for the worker.
	Runner runner.Config
	// Sandboxes opens the engine whose sandboxes carry workerID, so that
	// the sweep of another worker knows whose lease decides their fate.
	Sandboxes func(ctx context.Context, workerID string) (Driver, error)
	// DataDir holds the repositories' mirrors and work trees; Workspace
	// says how many spares to keep checked out there.
	DataDir   string
	Workspace workspace.Options
	// Tokens are the installation tokens with which the outcome recorder
	// fetches the merged pull requests' history.
	Tokens outcome.Tokens
	// Metrics, when set, count the tasks' outcomes on the process's
	// /metrics.
	Metrics *queue.OutcomeMetrics
	// Concurrency is how many tasks the worker runs at once, and
	// MaxPerInstallation how many of one installation's.
	Concurrency, MaxPerInstallation int
	// OrphanSweep is how often the dead workers' leftovers are removed.
	OrphanSweep time.Duration
	Log         *slog.Logger
	// Started, when set, is called once the worker takes tasks.
	Started func()
}

// Run holds the worker's lease, opens its sandboxes and work trees, sweeps
// what dead workers left, and processes queued tasks and outcome events
// until ctx is cancelled; then it hands back what is running, closes the
// sandboxes and releases the lease, in that order: a lease released
// before the sandboxes close would let another worker's sweep remove
// them under a task that is still saving.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Redis == nil || cfg.Sandboxes == nil || cfg.Tokens == nil || cfg.Log == nil {
		return errors.New("worker: Redis, Sandboxes, Tokens and Log are required")
	}
	log := cfg.Log
	lease, err := Hold(ctx, queue.NewWorkerLeases(cfg.Redis, 0), log)
	if err != nil {
		return err
	}
	defer lease.Release()
	drv, err := cfg.Sandboxes(ctx, lease.ID)
	if err != nil {
		return err
	}
	defer drv.Close()
	opts := cfg.Workspace
	opts.Logger = log
	ws := workspace.NewManager(cfg.DataDir, opts)
	defer ws.Close()
	orphans := Sweeper{Sandboxes: drv, Trees: ws, Alive: lease.Alive, Log: log}
	orphans.Sweep(ctx)

	rc := cfg.Runner
	rc.Sandbox, rc.Workspaces, rc.Logger = drv, ws, log.With("worker", lease.ID)
	r, err := runner.New(rc)
	if err != nil {
		return err
	}
	log.Info("worker started", "worker", lease.ID, "concurrency", cfg.Concurrency, "image", drv.Image())
	if cfg.Started != nil {
		cfg.Started()
	}
	return Together(ctx,
		queue.NewServer(cfg.Redis, r, queue.ServerConfig{
			Concurrency: cfg.Concurrency, ShutdownTimeout: ShutdownTimeout, Logger: log, MaxPerInstallation: cfg.MaxPerInstallation,
		}).Run,
		cfg.outcomeRecorder,
		orphans.Every(cfg.OrphanSweep))
}

// outcomeRecorder records what became of the agent's pull requests
// (merges and reverts, queued by intake as outcome events) until ctx is
// cancelled. It reads history from the mirrors under DataDir, which it
// shares with the worker's checkouts under their per-repository lock. One
// event at a time: each is a fetch and two diffs, and they are rare.
func (cfg Config) outcomeRecorder(ctx context.Context) error {
	oc := outcome.Config{
		Outcomes: queue.NewOutcomes(cfg.Redis), Tokens: cfg.Tokens, Logger: cfg.Log,
		Workspaces: workspace.NewManager(cfg.DataDir, workspace.Options{Logger: cfg.Log}),
	}
	if cfg.Metrics != nil {
		oc.Metrics = cfg.Metrics
	}
	rec, err := outcome.New(oc)
	if err != nil {
		return fmt.Errorf("outcome recorder: %w", err)
	}
	return queue.NewEventServer(cfg.Redis, rec, queue.ServerConfig{Concurrency: 1, ShutdownTimeout: ShutdownTimeout, Logger: cfg.Log}).Run(ctx)
}

// Together runs each part until ctx is cancelled or one of them returns,
// which stops the others, and returns all their errors: the parts of one
// process (a worker's queue, recorder and sweep; a serve's intake, admin
// pages and workers) stop together.
func Together(ctx context.Context, parts ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, len(parts))
	for _, run := range parts {
		go func() {
			defer cancel()
			done <- run(ctx)
		}()
	}
	errs := make([]error, len(parts))
	for i := range parts {
		errs[i] = <-done
	}
	return errors.Join(errs...)
}
