package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

// countingHandler works on a task for d and counts the tasks done.
type countingHandler struct {
	d    time.Duration
	done atomic.Int64
}

func (h *countingHandler) ProcessTask(ctx context.Context, t app.Task) error {
	select {
	case <-time.After(h.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	h.done.Add(1)
	return nil
}

// BenchmarkWorkers measures the throughput of 1, 2 and 4 workers (each its
// own asynq server and Redis pool, two tasks at a time, as by default) on
// tasks of 20ms over one Redis: queue overhead shows where it stops
// scaling. Run with -benchtime=200x; the figure is tasks/s.
func BenchmarkWorkers(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := redistest.Start(b)
			rdb, err := Connect(s.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer rdb.Close()
			c := NewClient(rdb)
			for i := range b.N {
				if _, err := c.Enqueue(b.Context(), sampleTask(fmt.Sprint("t", i), time.Now())); err != nil {
					b.Fatal(err)
				}
			}
			h := &countingHandler{d: 20 * time.Millisecond}
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, workers)
			b.ResetTimer()
			start := time.Now()
			for range workers {
				wrdb, err := Connect(s.URL)
				if err != nil {
					b.Fatal(err)
				}
				defer wrdb.Close()
				srv := NewServer(wrdb, h, ServerConfig{Concurrency: 2, ShutdownTimeout: time.Second, Logger: quiet})
				go func() { done <- srv.Run(ctx) }()
			}
			for h.done.Load() < int64(b.N) {
				time.Sleep(5 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			for range workers {
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
		})
	}
}
