package webhook_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentbot/agentbot/webhook/hookshot"
)

// BenchmarkDeliverCommand measures the ack latency of a signed
// issue_comment command over real HTTP and a real Redis, one delivery after
// another, and reports its median and 99th percentile.
func BenchmarkDeliverCommand(b *testing.B) {
	in := startIntake(b, nil)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		payload := hookshot.IssueComment("/agent fix the flaky test") // each delivery its own comment
		start := time.Now()
		r := in.deliver(b, "issue_comment", fmt.Sprint("bench-", i), payload)
		lat = append(lat, time.Since(start))
		if r.Status != http.StatusAccepted {
			b.Fatalf("delivery %d: %d %v", i, r.Status, r.Body)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
