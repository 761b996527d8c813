package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/githubapp"
	"github.com/agentbot/agentbot/runner/workspace"
	"github.com/agentbot/agentbot/worker"
)

// workerConfig is what a worker reads from its flags and environment, on
// top of the App identity flags.
type workerConfig struct {
	dataDir     string
	spareTrees  int
	spareTTL    time.Duration
	orphanSweep time.Duration
	sandboxFlags
	serverFile  string
	concurrency int
	botName     string
	label       string
	retention   retention
	telemetry   telemetryFlags
	envs        envCacheFlags
	reach       reachFlags
	pages       pageFlags
	models      policy.Models
	app         *appFlags

	// perInstallation is --max-per-installation: 0 for half of concurrency.
	perInstallation int
}

func (c *workerConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", "", "where repository mirrors and work trees are kept (default: agentbot under the user's cache directory)")
	fs.IntVar(&c.spareTrees, "spare-trees", 1, "work trees kept checked out ahead of tasks, per repository; each costs the disk of one checkout (0: none)")
	fs.DurationVar(&c.spareTTL, "spare-ttl", time.Hour, "remove a repository's spare work trees after this long without a task")
	fs.DurationVar(&c.orphanSweep, "orphan-sweep", queue.DefaultLeaseTTL,
		"how often to remove the sandboxes and work trees of workers known dead; a worker killed up to a lease TTL ("+queue.DefaultLeaseTTL.String()+") before this one started is known dead only later")
	c.sandboxFlags.register(fs)
	fs.StringVar(&c.serverFile, "config", "", "the server config (server.yaml): repositories served and the caps on their policies")
	fs.IntVar(&c.concurrency, "concurrency", 2, "tasks run at once by this worker")
	fs.IntVar(&c.perInstallation, "max-per-installation", 0,
		"tasks of one installation run at once by all workers sharing the Redis while another installation's task waits, so that one installation's backlog never holds up another's; with nobody else waiting, every slot is used (0: half of --concurrency, at least 1)")
	fs.StringVar(&c.botName, "bot-name", "agentbot[bot]", "the App's bot login, the author of the agent's commits")
	fs.StringVar(&c.label, "trigger-label", "", "the issue label that asks for a fix where neither the server config's policy nor the repository's names one (default agent:fix)")
	fs.StringVar(&c.models.Edit, "model", "gpt-4.1", "the model that drives the loop when a policy names none")
	fs.StringVar(&c.models.Fast, "fast-model", "gpt-4.1-mini", "the model that digests old context when a policy names none")
	c.retention.register(fs)
	c.telemetry.register(fs)
	c.envs.register(fs)
	c.reach.register(fs)
	c.pages.register(fs)
	c.app = addAppFlags(fs)
}

// setupCABundle writes the trust store of --setup-ca-file, or of the
// server config's setup.ca_file, into the data directory, or returns ""
// with neither. Both set is an error: one CA silently not trusted would
// show only as a certificate error in some setup.
func (c *workerConfig) setupCABundle(server policy.ServerConfig) (string, error) {
	source, file, err := setupCAFile(c.setupCA, server)
	if err != nil || file == "" {
		return "", err
	}
	dir := c.dataDir
	if dir == "" {
		d, err := workspace.DefaultDataDir()
		if err != nil {
			return "", fmt.Errorf("%s: %w", source, err)
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", source, err)
	}
	return setupCABundle(source, file, dir)
}

// cmdWorker runs workers only, for hosts that share one Redis with an
// intake started by "agentbot serve --no-workers".
func cmdWorker(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("worker", env)
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis holding the queue")
	metricsAddr := fs.String("metrics-addr", defaultMetricsAddr, `address of /healthz, /readyz and /metrics; "off" for none`)
	var cfg workerConfig
	cfg.register(fs)
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.check(env); err != nil {
		return err
	}
	log := newLogger(env.Stderr)
	rdb, err := connectRedis(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	redis.SetLogger(redisLogger{log})
	reg, outcomes, err := workerMetrics(rdb)
	if err != nil {
		return err
	}
	if err := registerBudgetMetrics(reg, rdb, cfg.serverFile); err != nil {
		return err
	}
	var started atomic.Bool
	parts := []func(context.Context) error{func(ctx context.Context) error {
		return runWorkers(ctx, rdb, cfg, env, log, outcomes, func() { started.Store(true) })
	}}
	if *metricsAddr != "off" {
		parts = append(parts, func(ctx context.Context) error {
			return listenAndServe(ctx, *metricsAddr, workerHTTP(rdb, reg, started.Load), log.With("server", "metrics"))
		})
	}
	return worker.Together(ctx, parts...)
}

// runWorkers builds a worker from cfg and runs it until ctx is
// cancelled. Outcomes are counted in metrics when the process exports them
// (serve, and worker on --metrics-addr); nil otherwise. started, when set,
// is called once the worker takes tasks.
func runWorkers(ctx context.Context, rdb redis.UniversalClient, cfg workerConfig, env Env, log *slog.Logger, metrics *queue.OutcomeMetrics, started func()) error {
	perInstallation, err := cfg.maxPerInstallation()
	if err != nil {
		return err
	}
	id, err := cfg.app.identity()
	if err != nil {
		return err
	}
	id.Config.Logger = log
	gh, err := github.NewApp(id.Config)
	if err != nil {
		return err
	}
	server, err := policy.LoadServerConfig(cfg.serverFile)
	if err != nil {
		return err
	}
	server = server.WithTriggerLabel(cfg.label, "--trigger-label").WithDefaultImage(cfg.image)
	model, err := newModel(env, server, log)
	if err != nil {
		return err
	}
	envs, err := cfg.envs.open(cfg.dataDir)
	if err != nil {
		return err
	}
	store := cfg.retention.store(rdb)
	traces, flushSpans, err := cfg.telemetry.traceLog(ctx, cfg.retention.traceStore(rdb), env, log)
	if err != nil {
		return err
	}
	defer flushSpans()
	audit, err := cfg.retention.auditLog(rdb)
	if err != nil {
		return err
	}
	caBundle, err := cfg.setupCABundle(server)
	if err != nil {
		return err
	}
	pages, err := cfg.pages.links(env, cfg.retention.traces)
	if err != nil {
		return err
	}
	return worker.Run(ctx, worker.Config{
		Redis: rdb,
		Runner: runner.Config{
			GitHub: githubapp.New(gh), Server: server, SetupCABundle: caBundle, SetupSecrets: env.Getenv,
			Model: model, Models: cfg.models, Store: store, Outcomes: queue.NewOutcomes(rdb).Counting(metrics),
			Budgets: queue.NewBudgets(rdb),
			Audit:   audit, Traces: traces, History: queue.NewOutcomes(rdb), Pages: pages,
			Tasks: worker.Tasks{Store: store}, Pulls: store, Locks: queue.NewLocks(rdb), Notes: store,
			Bot:  workspace.Signature{Name: cfg.botName, Email: cfg.botName + "@users.noreply.github.com"},
			Envs: envs,
		},
		Sandboxes: func(ctx context.Context, workerID string) (worker.Driver, error) {
			drv, err := cfg.driver(ctx, workerID, log)
			if err != nil {
				return nil, err
			}
			if err := cfg.reach.proveUnreachable(ctx, env, drv, redisAddr(rdb), cfg.dataDir, log); err != nil {
				drv.Close()
				return nil, err
			}
			return drv, nil
		},
		DataDir:   cfg.dataDir,
		Workspace: workspace.Options{SpareTrees: cfg.spareTrees, SpareTTL: cfg.spareTTL},
		Tokens:    gh, Metrics: metrics,
		Concurrency: cfg.concurrency, MaxPerInstallation: perInstallation, OrphanSweep: cfg.orphanSweep,
		Log: log, Started: started,
	})
}

// maxPerInstallation is the limit of one installation's running tasks:
// --max-per-installation, or half of --concurrency.
func (c *workerConfig) maxPerInstallation() (int, error) {
	switch {
	case c.perInstallation < 0:
		return 0, fmt.Errorf("--max-per-installation %d: must not be negative", c.perInstallation)
	case c.perInstallation == 0:
		return max(c.concurrency/2, 1), nil
	}
	return c.perInstallation, nil
}
