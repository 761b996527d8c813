package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue"
)

// defaultMetricsAddr is where a worker serves /healthz, /readyz and
// /metrics: every interface, for the orchestrator's probes and Prometheus.
const defaultMetricsAddr = ":9090"

// check reads and checks everything a worker is configured with that does
// not need the network: the App's identity and key, the server config, the
// model's settings, the sandbox's executor. serve and worker call it
// before they connect to Redis or open a port, so that a mistake stops
// them at once instead of after the intake is already taking webhooks.
func (c *workerConfig) check(env Env) error {
	if c.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: want 1 or more", c.concurrency)
	}
	if c.image == "" {
		return errors.New("--sandbox-image is empty: name the sandbox image")
	}
	if c.orphanSweep <= 0 {
		return fmt.Errorf("--orphan-sweep %s: want a positive duration", c.orphanSweep)
	}
	id, err := c.app.identity()
	if err != nil {
		return err
	}
	if err := checkPrivateKey(id.Config.PrivateKey); err != nil {
		return fmt.Errorf("GitHub App private key: %w", err)
	}
	if _, err := github.NewApp(id.Config); err != nil {
		return err
	}
	server, err := policy.LoadServerConfig(c.serverFile)
	if err != nil {
		return fmt.Errorf("server config: %s", app.ErrorMessage(err))
	}
	server = server.WithTriggerLabel(c.label, "--trigger-label")
	if _, err := newModel(env, server, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	if c.executor != "" {
		st, err := os.Stat(c.executor)
		switch {
		case err != nil:
			return fmt.Errorf("--sandbox-executor: %w", err)
		case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
			return fmt.Errorf("--sandbox-executor %s is not an executable file", c.executor)
		}
	}
	return nil
}

// checkPrivateKey tells whether key is a PEM RSA private key, as GitHub
// issues them, so that a wrong file is named at start rather than on the
// first task's token request.
func checkPrivateKey(key []byte) error {
	block, _ := pem.Decode(key)
	if block == nil {
		return errors.New("not a PEM file")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		return fmt.Errorf("not an RSA private key: %w", err)
	}
	return nil
}

// workerMetrics returns the registry of a worker process's /metrics and
// the outcome counters its workers update.
func workerMetrics(rdb redis.UniversalClient) (*prometheus.Registry, *queue.OutcomeMetrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		queue.NewDepthCollector(rdb))
	outcomes, err := queue.NewOutcomeMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	return reg, outcomes, nil
}

// workerHTTP is what a worker serves on --metrics-addr:
//
//	GET /healthz   the process is alive
//	GET /readyz    the workers have started and Redis answers: tasks are taken
//	GET /metrics   Prometheus
func workerHTTP(rdb redis.UniversalClient, reg *prometheus.Registry, started func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeHealth(w, http.StatusOK, nil)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if !started() {
			writeHealth(w, http.StatusServiceUnavailable, errors.New("starting"))
			return
		}
		if err := rdb.Ping(ctx).Err(); err != nil {
			writeHealth(w, http.StatusServiceUnavailable, errors.New("redis unreachable"))
			return
		}
		writeHealth(w, http.StatusOK, nil)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

// writeHealth answers a probe the way the intake's routes do.
func writeHealth(w http.ResponseWriter, status int, problem error) {
	body := map[string]any{"ok": problem == nil}
	if problem != nil {
		body["error"] = problem.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // a prober that went away is not ours to report
}
