package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app/admin"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/worker"
)

const (
	defaultAddr     = ":8080"
	defaultRedisURL = "redis://127.0.0.1:6379/0"
	// defaultAdminAddr keeps the admin pages on loopback, where they need
	// no token: reach them through an SSH tunnel or kubectl port-forward.
	defaultAdminAddr = "127.0.0.1:8081"
	// drainTimeout bounds how long SIGTERM waits for in-flight requests.
	drainTimeout = 10 * time.Second
	// replicaWait bounds the wait for --redis-min-replicas replicas: the
	// webhook's whole Redis work has webhook.DefaultTimeout.
	replicaWait = time.Second
)

// serveConfig is what "agentbot serve" reads from its flags and environment.
type serveConfig struct {
	addr       string
	redisURL   string
	secretFile string
	noWorkers  bool
	adminAddr  string
	adminToken string
	// minReplicas is how many Redis replicas must hold a delivery's task
	// before it is answered 202.
	minReplicas int
	worker      workerConfig
}

func (c *serveConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", defaultAddr, "address to listen on")
	fs.StringVar(&c.redisURL, "redis-url", defaultRedisURL, "Redis holding the queue")
	fs.StringVar(&c.secretFile, "webhook-secret-file", "",
		"file with the webhook secret; several, separated by commas or newlines, during a rotation (or set AGENTBOT_WEBHOOK_SECRET)")
	fs.IntVar(&c.minReplicas, "redis-min-replicas", 0,
		"answer a webhook 202 only once this many Redis replicas hold its task, else 503 so GitHub redelivers (0: do not wait; 1 with Sentinel)")
	fs.BoolVar(&c.noWorkers, "no-workers", false, "serve the webhook intake only, no workers")
	fs.StringVar(&c.adminAddr, "admin-addr", defaultAdminAddr, `address of the read-only admin pages (task list, traces); "off" for none; off loopback, a token is required`)
	fs.StringVar(&c.adminToken, "admin-token", "", "bearer token the admin pages require; prefer AGENTBOT_ADMIN_TOKEN, which ps does not show")
	c.worker.register(fs)
}

func cmdServe(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("serve", env)
	var cfg serveConfig
	cfg.register(fs)
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	if _, err := cfg.worker.maxPerInstallation(); err != nil {
		return err // before the intake opens its port
	}
	if cfg.minReplicas < 0 {
		return fmt.Errorf("--redis-min-replicas %d: must not be negative", cfg.minReplicas)
	}
	secretFile := cfg.secretFile
	if secretFile == "" && env.Getenv("AGENTBOT_WEBHOOK_SECRET") == "" && cfg.worker.app.appDir != "" {
		// The App directory that "agentbot setup" wrote holds the secret too.
		secretFile = filepath.Join(cfg.worker.app.appDir, appDirWebhookSecret)
	}
	secrets, err := webhookSecrets(secretFile, env.Getenv("AGENTBOT_WEBHOOK_SECRET"))
	if err != nil {
		return err
	}
	// The pages' secret and address are checked before a port opens, as
	// the workers' are.
	if _, err := cfg.worker.pages.links(env, cfg.worker.retention.traces); err != nil {
		return err
	}
	adminOn := cfg.adminAddr != "" && cfg.adminAddr != "off"
	if adminOn {
		if err := admin.CheckAddr(cfg.adminAddr, cfg.adminToken); err != nil {
			return err
		}
	}
	// Everything is checked before Redis is dialled or a port opened: an
	// intake must not take webhooks that its workers cannot run.
	if !cfg.noWorkers {
		if err := cfg.worker.check(env); err != nil {
			return err
		}
	}
	log := newLogger(env.Stderr)
	rdb, err := connectRedis(ctx, cfg.redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	// go-redis reports pool trouble through a process-wide logger; once
	// Redis has answered, what it says belongs in the JSON log.
	redis.SetLogger(redisLogger{log})
	reg := prometheus.NewRegistry()
	pages, err := cfg.worker.pages.handler(rdb, env, log)
	if err != nil {
		return err
	}
	routes, err := newIntake(rdb, reg, secrets, cfg, pages, log)
	if err != nil {
		return err
	}
	parts := []func(context.Context) error{func(ctx context.Context) error {
		return listenAndServe(ctx, cfg.addr, routes, log)
	}}
	if adminOn {
		parts = append(parts, func(ctx context.Context) error {
			return listenAndServe(ctx, cfg.adminAddr, adminHandler(rdb, cfg.adminAddr, cfg.adminToken, log), log.With("server", "admin"))
		})
	}
	if !cfg.noWorkers {
		// The workers of this process count the tasks' outcomes on its
		// /metrics.
		outcomes, err := queue.NewOutcomeMetrics(reg)
		if err != nil {
			return err
		}
		if err := registerBudgetMetrics(reg, rdb, cfg.worker.serverFile); err != nil {
			return err
		}
		parts = append(parts, func(ctx context.Context) error {
			return runWorkers(ctx, rdb, cfg.worker, env, log, outcomes, nil)
		})
	}
	return worker.Together(ctx, parts...)
}

// newLogger returns the JSON logger every long-running command uses.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, nil))
}

// redisLogger is go-redis's logger on slog.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, args ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, args...), "component", "redis")
}

// webhookSecrets reads the secrets from file or, without one, from env (the
// value of AGENTBOT_WEBHOOK_SECRET). Both hold one or more secrets separated
// by commas or newlines, so that an old and a new secret are accepted
// together while GitHub's is being rotated.
func webhookSecrets(file, env string) ([][]byte, error) {
	text := env
	switch {
	case file != "" && env != "":
		return nil, errors.New("set either --webhook-secret-file or AGENTBOT_WEBHOOK_SECRET, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read webhook secret: %w", err)
		}
		text = string(b)
	}
	var secrets [][]byte
	for _, s := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if s = strings.TrimSpace(s); s != "" {
			secrets = append(secrets, []byte(s))
		}
	}
	if len(secrets) == 0 {
		return nil, errors.New("no webhook secret: set --webhook-secret-file or AGENTBOT_WEBHOOK_SECRET (agentbot refuses unsigned webhooks)")
	}
	return secrets, nil
}

// newIntake wires the webhook routes to the queue and registers their
// metrics on reg, which /metrics serves; pages, when not nil, are the
// tasks' live pages.
func newIntake(rdb redis.UniversalClient, reg *prometheus.Registry, secrets [][]byte, cfg serveConfig, pages http.Handler, log *slog.Logger) (http.Handler, error) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		queue.NewDepthCollector(rdb))
	metrics, err := webhook.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	q, err := cfg.worker.retention.client(rdb).WithMinReplicas(cfg.minReplicas, replicaWait)
	if err != nil {
		return nil, fmt.Errorf("--redis-min-replicas: %w", err)
	}
	h, err := webhook.NewHandler(webhook.Config{
		Secrets: secrets, Queue: q, Deliveries: q, Metrics: metrics, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	return webhook.NewServer(h, q, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), pages), nil
}

// listenAndServe serves h on addr until ctx is cancelled, then stops
// accepting and waits up to drainTimeout for the requests in flight.
func listenAndServe(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // a 25 MiB body on a slow link
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	log.Info("listening", "addr", l.Addr().String())

	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	log.Info("draining")
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	log.Info("stopped")
	return nil
}
