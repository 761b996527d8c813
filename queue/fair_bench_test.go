package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
)

// BenchmarkOneInstallationBacklog queues 12 tasks over three repositories
// of one installation at once and times them through one worker of
// concurrency 2, with the installation's limit at its default (half the
// concurrency) and at 2. The tasks are simulated: each sleeps 500ms, a
// tenth of a scripted fix through the product. Run with -benchtime=1x;
// the figure is the seconds for the 12 tasks, 3 with both slots in use.
func BenchmarkOneInstallationBacklog(b *testing.B) {
	const tasks, taskTime = 12, 500 * time.Millisecond
	for _, limit := range []int{1, 2} {
		b.Run(fmt.Sprintf("max-per-installation=%d", limit), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				rdb, err := Connect(redistest.Start(b).URL)
				if err != nil {
					b.Fatal(err)
				}
				c := NewClient(rdb)
				for i := range tasks {
					task := sampleTask(fmt.Sprint("t", i), time.Now())
					task.Repo, task.Number = fmt.Sprintf("octo/repo%d", i%3), i
					if _, err := c.Enqueue(b.Context(), task); err != nil {
						b.Fatal(err)
					}
				}
				h := &countingHandler{d: taskTime}
				ctx, cancel := context.WithCancel(b.Context())
				done := make(chan error, 1)
				start := time.Now()
				srv := NewServer(rdb, h, ServerConfig{Concurrency: 2, MaxPerInstallation: limit, ShutdownTimeout: time.Second, Logger: quiet})
				go func() { done <- srv.Run(ctx) }()
				for h.done.Load() < tasks {
					time.Sleep(5 * time.Millisecond)
				}
				total += time.Since(start)
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				rdb.Close()
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/12-tasks")
		})
	}
}
