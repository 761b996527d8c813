package worker

import (
	"context"
	"log/slog"
	"time"
)

// Sandboxes removes the sandbox containers, with their volumes and
// networks, of the workers alive says are dead.
type Sandboxes interface {
	RemoveOrphans(ctx context.Context, alive func(ctx context.Context, workerID string) (bool, error)) (int, error)
}

// Trees removes the work trees no living task holds.
type Trees interface {
	RemoveOrphans() (int, error)
}

// Sweeper removes what the dead workers of the deployment left. A worker
// sweeps as it starts and then every --orphan-sweep: one killed just
// before it started still holds its lease for up to queue.DefaultLeaseTTL,
// and what it left would otherwise stay until the next worker starts.
type Sweeper struct {
	Sandboxes Sandboxes
	Trees     Trees
	Alive     func(ctx context.Context, workerID string) (bool, error)
	Log       *slog.Logger
}

// Sweep removes the orphans once; a failure is logged, and the next sweep
// tries again.
func (s Sweeper) Sweep(ctx context.Context) {
	if n, err := s.Sandboxes.RemoveOrphans(ctx, s.Alive); err != nil {
		s.Log.Warn("remove orphaned sandboxes", "err", err)
	} else if n > 0 {
		s.Log.Info("removed orphaned sandboxes", "count", n)
	}
	if n, err := s.Trees.RemoveOrphans(); err != nil {
		s.Log.Warn("remove orphaned work trees", "err", err)
	} else if n > 0 {
		s.Log.Info("removed orphaned work trees", "count", n)
	}
}

// Every sweeps every interval until ctx ends.
func (s Sweeper) Every(interval time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				s.Sweep(ctx)
			}
		}
	}
}
