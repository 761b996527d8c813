package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/webhook/hookshot"
)

// unreachable is a queue and a record of deliveries that a test's
// deliveries must never reach.
type unreachable struct{ t *testing.T }

func (u unreachable) Enqueue(context.Context, app.Task) (bool, error) {
	u.t.Error("a forged delivery was queued")
	return false, nil
}

func (u unreachable) EnqueueEvent(context.Context, app.OutcomeEvent) (bool, error) {
	u.t.Error("a forged delivery's event was queued")
	return false, nil
}

func (u unreachable) MarkSeen(context.Context, string) (bool, error) {
	u.t.Error("a forged delivery was marked seen")
	return false, nil
}

func (u unreachable) ClaimBody(context.Context, string, string) (string, error) {
	u.t.Error("a forged delivery's body was claimed")
	return "", nil
}

// A flood of forged deliveries is counted in full in the metrics, and its
// log lines are bounded: the lines held back are counted in the next one.
func TestForgedFloodDoesNotFloodTheLog(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := webhook.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var logs ostest.SyncBuffer
	h, err := webhook.NewHandler(webhook.Config{Secrets: [][]byte{[]byte("secret")}, Queue: unreachable{t}, Deliveries: unreachable{t},
		Metrics: m, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	payload := hookshot.IssueComment("/agent fix")
	forge := func(delivery string) int {
		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(payload))
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte("guess"), payload))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if code := forge(fmt.Sprint("forged-", i)); code != http.StatusUnauthorized {
				t.Errorf("forged delivery: %d; want 401", code)
			}
		})
	}
	wg.Wait()
	if got := unauthorized(t, reg); got != n {
		t.Errorf("metrics count %v forged deliveries; want %d", got, n)
	}
	refused := func() int { return strings.Count(logs.String(), `"msg":"webhook refused"`) }
	lines := refused()
	if lines == 0 || lines >= n/2 {
		t.Errorf("%d log lines for %d forged deliveries; want some, and far fewer", lines, n)
	}

	// Every refusal is logged, or counted by a later line: send until one
	// more line is logged, which counts what is left, then add up.
	sent := n
	for refused() == lines {
		forge("forged-last")
		sent++
	}
	logged, unlogged := 0, 0
	for line := range strings.Lines(logs.String()) {
		var e struct {
			Msg      string `json:"msg"`
			Unlogged int    `json:"refusals_unlogged"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e.Msg == "webhook refused" {
			logged, unlogged = logged+1, unlogged+e.Unlogged
		}
	}
	if unlogged == 0 || logged+unlogged != sent {
		t.Errorf("%d refusals logged and %d counted as unlogged; want %d in all, some unlogged", logged, unlogged, sent)
	}
}

// unauthorized is the count of issue_comment deliveries refused as
// unsigned in reg.
func unauthorized(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "agentbot_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["event"] == "issue_comment" && labels["outcome"] == "unauthorized" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
