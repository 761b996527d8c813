package webhook_test

import (
	"bytes"
	"context"
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
	const n = 500
	payload := hookshot.IssueComment("/agent fix")
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(payload))
			req.Header.Set("X-GitHub-Event", "issue_comment")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprint("forged-", i))
			req.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte("guess"), payload))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("forged delivery: %d; want 401", w.Code)
			}
		})
	}
	wg.Wait()
	if got := unauthorized(t, reg); got != n {
		t.Errorf("metrics count %v forged deliveries; want %d", got, n)
	}
	lines := strings.Count(logs.String(), `"msg":"webhook refused"`)
	if lines == 0 || lines >= n/2 {
		t.Errorf("%d log lines for %d forged deliveries; want some, and far fewer", lines, n)
	}

	// The next refusal logged says how many were not.
	held := n - lines
	for {
		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(payload))
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", "forged-last")
		req.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte("guess"), payload))
		h.ServeHTTP(httptest.NewRecorder(), req)
		if strings.Count(logs.String(), `"msg":"webhook refused"`) > lines {
			break
		}
		held++
	}
	if !strings.Contains(logs.String(), fmt.Sprintf(`"refusals_unlogged":%d`, held)) {
		t.Errorf("no line says %d refusals were not logged:\n%s", held, logs.String())
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
