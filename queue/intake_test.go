package queue

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/webhook/hookshot"
)

// The tests of this file run the real webhook intake over a Client, and
// a Handler that stands for the runner: it takes a while, then opens the
// task's pull request unless it exists, as the runner finds the pull
// request of its branch before it opens one.

var intakeSecret = []byte("s3cret")

// quiet is the logger of the intakes and servers under test, whose
// expected errors (Redis gone) would bury the test's own output.
var quiet = slog.New(slog.DiscardHandler)

// startIntake serves the webhook intake over q and returns its URL; close
// it with the returned server.
func startIntake(t *testing.T, q *Client) *httptest.Server {
	t.Helper()
	h := newIntakeHandler(t, q)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func newIntakeHandler(t *testing.T, q *Client) http.Handler {
	t.Helper()
	metrics, err := webhook.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h, err := webhook.NewHandler(webhook.Config{Secrets: [][]byte{intakeSecret}, Queue: q, Deliveries: q, Metrics: metrics, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return webhook.NewServer(h, q, http.NotFoundHandler(), nil)
}

// deliver sends delivery's "/agent fix" comment to the intake at base and
// returns the status of the answer (0 when none came).
func deliver(ctx context.Context, c *http.Client, base, delivery string) int {
	r, err := hookshot.Deliver(ctx, c, base+"/webhook", intakeSecret, "issue_comment", delivery,
		hookshot.IssueComment("/agent fix"))
	if err != nil && r.Status == 0 {
		return 0
	}
	return r.Status
}

// prHandler is the runner's stand-in.
type prHandler struct {
	d    time.Duration
	mu   sync.Mutex
	runs map[string]int // task id → runs that finished
	prs  map[string]int // task id → pull requests opened
	busy int            // runs in progress
}

func newPRHandler(d time.Duration) *prHandler {
	return &prHandler{d: d, runs: map[string]int{}, prs: map[string]int{}}
}

func (h *prHandler) ProcessTask(ctx context.Context, t app.Task) error {
	h.mu.Lock()
	h.busy++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.busy--
		h.mu.Unlock()
	}()
	select {
	case <-time.After(h.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs[t.ID]++
	if h.prs[t.ID] == 0 {
		h.prs[t.ID]++
	}
	return nil
}

func (h *prHandler) snapshot() (runs, prs map[string]int, busy int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	runs, prs = map[string]int{}, map[string]int{}
	for k, v := range h.runs {
		runs[k] = v
	}
	for k, v := range h.prs {
		prs[k] = v
	}
	return runs, prs, h.busy
}

// checkEveryAcceptedTaskEndsOnce waits until every accepted task has its
// pull request, then checks that each has exactly one and that no task
// that was never accepted has one.
func checkEveryAcceptedTaskEndsOnce(t *testing.T, h *prHandler, accepted map[string]bool, timeout time.Duration) {
	t.Helper()
	waitUntil(t, timeout, "every accepted task's pull request", func() bool {
		_, prs, _ := h.snapshot()
		for id := range accepted {
			if prs[id] == 0 {
				return false
			}
		}
		return true
	})
	runs, prs, _ := h.snapshot()
	again := 0
	for id, n := range runs {
		if !accepted[id] {
			t.Errorf("task %s ran but its delivery was never answered 2xx", id)
		}
		if n > 1 {
			again++
		}
	}
	for id, n := range prs {
		if n != 1 {
			t.Errorf("task %s has %d pull requests; want 1", id, n)
		}
	}
	t.Logf("%d accepted tasks, %d pull requests, %d tasks run again after a failure (found their pull request)", len(accepted), len(prs), again)
}

// runServer runs srv until the test ends. Its cleanup stops srv before the
// Redis pools, whose cleanups were registered first, are closed under it.
func runServer(t *testing.T, srv *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run queue server: %v", err)
		}
	})
}
