package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/admin"
	"github.com/agentbot/agentbot/queue"
)

// cmdAdmin serves the read-only admin pages (task list, task traces) from
// the queue's Redis, beside "agentbot serve".
func cmdAdmin(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("admin", env)
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis holding the tasks and traces")
	addr := fs.String("admin-addr", defaultAdminAddr, "address of the admin pages; off loopback, a token is required")
	token := fs.String("admin-token", "", "bearer token the pages require; prefer AGENTBOT_ADMIN_TOKEN, which ps does not show")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := admin.CheckAddr(*addr, *token); err != nil {
		return err
	}
	log := newLogger(env.Stderr)
	rdb, err := connectRedis(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	redis.SetLogger(redisLogger{log})
	return listenAndServe(ctx, *addr, adminHandler(rdb, *addr, *token, log), log)
}

// adminHandler returns the admin pages served on addr over the queue's
// stores in rdb.
func adminHandler(rdb redis.UniversalClient, addr, token string, log *slog.Logger) http.Handler {
	src := adminSource{store: queue.NewStore(rdb), traces: queue.NewTraces(rdb, 0)}
	return admin.NewHandler(admin.Config{Source: src, Token: token, Addr: addr, Logger: log})
}

// adminSource is admin.Source over the task store and the traces.
type adminSource struct {
	store  *queue.Store
	traces *queue.Traces
}

func (s adminSource) Tasks(ctx context.Context, limit int) ([]admin.Task, error) {
	recs, err := s.store.List(ctx, limit)
	if err != nil {
		return nil, err
	}
	tasks := make([]admin.Task, len(recs))
	for i, r := range recs {
		tasks[i] = adminTask(r)
	}
	return tasks, nil
}

func (s adminSource) Task(ctx context.Context, id string) (admin.Task, error) {
	r, err := s.store.Task(ctx, id)
	return adminTask(r), err
}

func (s adminSource) Trace(ctx context.Context, id string) ([]app.TraceEvent, error) {
	return s.traces.Trace(ctx, id)
}

func adminTask(r queue.Record) admin.Task {
	return admin.Task{Task: r.Task, State: r.State, Step: r.Step, UpdatedAt: r.UpdatedAt}
}
