package queue

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/webhook"
)

// TestSentinelFailoverLosesNoAcceptedWebhook kills the primary while 20
// tasks are queued and running, and keeps delivering webhooks through the
// failover, redelivering (as GitHub's redelivery would) what was answered
// 503.
func TestSentinelFailoverLosesNoAcceptedWebhook(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a Sentinel failover takes seconds")
	}
	ctx := t.Context()
	// Two replicas: once one is promoted, the other follows it, and the
	// intake can again answer 202 with one replica holding each task.
	d := redistest.StartSentinel(t, 2)
	q, err := NewClient(connectURL(t, d.URL)).WithMinReplicas(1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	intake := startIntake(t, q)
	h := newPRHandler(time.Second)
	// The workers have their own pool, as on another host.
	srv := NewServer(connectURL(t, d.URL), h, ServerConfig{Concurrency: 4, ShutdownTimeout: time.Second, Logger: quiet})
	runServer(t, srv)

	client := &http.Client{Timeout: 5 * time.Second}
	accepted := map[string]bool{}
	var unanswered []string // deliveries answered 503, to redeliver
	send := func(delivery string) int {
		status := deliver(ctx, client, intake.URL, delivery)
		switch status {
		case http.StatusAccepted, http.StatusOK:
			accepted[webhook.TaskID(delivery)] = true
		case http.StatusServiceUnavailable:
			unanswered = append(unanswered, delivery)
		case 0:
			t.Errorf("delivery %s had no answer within %s; want 503 when Redis cannot take it", delivery, client.Timeout)
			unanswered = append(unanswered, delivery)
		default:
			t.Fatalf("delivery %s answered %d", delivery, status)
		}
		return status
	}
	// Before the failover a 503 can only be the intake's deadline on a
	// loaded machine; redelivered, a delivery is accepted (and the
	// redelivery after the failover answers 200 for it).
	for i := range 20 {
		delivery := fmt.Sprintf("before-%02d", i)
		status := 0
		for try := 0; try < 5 && status != http.StatusAccepted; try++ {
			status = send(delivery)
		}
		if status != http.StatusAccepted {
			t.Fatalf("delivery %s before the failover answered %d five times; want 202", delivery, status)
		}
	}
	waitUntil(t, 10*time.Second, "tasks to run", func() bool {
		_, _, busy := h.snapshot()
		return busy >= 4
	})

	old := d.Primary.Addr
	killed := time.Now()
	d.Primary.Stop()
	promotedCh := make(chan struct{})
	go func() {
		defer close(promotedCh)
		d.WaitPromoted(old, time.Minute)
	}()
	// Deliver through the gap, every 50ms, until the intake accepts again
	// after the promotion.
	unavailable := 0
	for i := 0; ; i++ {
		status := send(fmt.Sprintf("during-%03d", i))
		if status != http.StatusAccepted {
			unavailable++
		}
		select {
		case <-promotedCh:
			if status == http.StatusAccepted {
				goto recovered
			}
		default:
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("the intake did not accept a delivery again within 60s of the primary's death")
		}
		time.Sleep(50 * time.Millisecond)
	}
recovered:
	t.Logf("intake answered 503 to %d deliveries in the %s from the primary's death to its first 202 after the failover",
		unavailable, time.Since(killed).Round(time.Millisecond))
	if unavailable == 0 {
		t.Errorf("no delivery was refused while the primary was gone; want 503s in the gap")
	}
	// GitHub's redelivery of what was refused.
	for len(unanswered) > 0 {
		retry := unanswered
		unanswered = nil
		for _, delivery := range retry {
			send(delivery)
		}
		if time.Since(killed) > 90*time.Second {
			t.Fatalf("%d deliveries still refused 90s after the failover", len(unanswered))
		}
	}
	checkEveryAcceptedTaskEndsOnce(t, h, accepted, 60*time.Second)
}
