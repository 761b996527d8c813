package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/queue/redistest"
)

// A worker is ready once its workers take tasks, not as soon as it
// listens: a load balancer or a rollout waiting on /readyz must not count
// a worker still starting (or about to fail its start) as one.
func TestWorkerIsReadyOnceStarted(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	var started atomic.Bool
	h := workerHTTP(rdb, prometheus.NewRegistry(), started.Load)
	ready := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Errorf("/readyz while starting = %d %s; want 503 starting", code, body)
	}
	started.Store(true)
	if code, body := ready(); code != http.StatusOK {
		t.Errorf("/readyz once started = %d %s; want 200", code, body)
	}
}
