package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
)

// TestIssueTasksOutlastAFlood: 2,000 commands on other issues, received
// after an issue's tasks, leave those tasks where stop (a running fix),
// approve (a paused one) and retry (a failed one) look for them.
func TestIssueTasksOutlastAFlood(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, rdb := testRedis(t)
	c, store := queue.NewClient(rdb), queue.NewStore(rdb)
	t0 := time.Now().Add(-time.Hour).UTC()
	task := func(id string, number int, at time.Time) app.Task {
		return app.Task{ID: id, Delivery: "d-" + id, Event: "issue_comment", InstallationID: 1, Repo: "acme/stats",
			Number: number, Verb: app.VerbFix, Requester: "ada", ReceivedAt: at}
	}
	states := map[string]app.State{"failed": app.StateFailed, "paused": app.StateAwaitingApproval, "running": app.StateRunning}
	for i, id := range []string{"failed", "paused", "running"} {
		if _, err := c.Enqueue(ctx, task(id, 1, t0.Add(time.Duration(i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
		if err := store.SetState(ctx, id, states[id], ""); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2000 {
		f := task(fmt.Sprintf("flood-%d", i), 100+i%50, t0.Add(time.Duration(10+i)*time.Millisecond))
		f.Requester = "mallory"
		if _, err := c.Enqueue(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := storeTasks{store}.OnIssue(ctx, "acme/stats", 1)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ts := range got {
		ids = append(ids, ts.ID)
		if ts.State != states[ts.ID] {
			t.Errorf("task %s is %s; want %s", ts.ID, ts.State, states[ts.ID])
		}
	}
	if want := []string{"running", "paused", "failed"}; !slices.Equal(ids, want) {
		t.Errorf("tasks on the issue = %v; want %v, newest first", ids, want)
	}
}

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
