package queue

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLeaseTTL is how long a worker's lease outlives its last refresh: a
// worker killed with SIGKILL is known dead this long after its last sign of
// life. A worker refreshes its lease every third of it.
const DefaultLeaseTTL = 30 * time.Second

// WorkerLeases are the leases workers hold in Redis while they run. What a
// worker leaves behind on a shared machine (its sandbox containers) is
// removed by another worker only once that worker's lease is gone: the
// worker is known dead, or has been cut off from Redis for longer than the
// TTL, by which time its tasks have been handed to other workers. Worker ids
// must be unique per process; a lease is never taken over.
//
// Its key is listed in the package doc.
type WorkerLeases struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

// NewWorkerLeases returns leases over rdb, which the caller closes, with
// the given TTL (DefaultLeaseTTL when zero).
func NewWorkerLeases(rdb redis.UniversalClient, ttl time.Duration) *WorkerLeases {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	return &WorkerLeases{rdb: rdb, ttl: ttl}
}

func leaseKey(worker string) string { return "agentbot:worker:" + worker + ":lease" }

// ErrLeaseHeld is returned by Hold when another process holds the lease of
// the same worker id.
var ErrLeaseHeld = errors.New("worker lease is held by another process")

// Hold takes worker's lease, describing its holder by holder (for
// operators reading Redis), and refuses an id whose lease is held.
func (l *WorkerLeases) Hold(ctx context.Context, worker, holder string) error {
	if worker == "" {
		return errors.New("hold worker lease: empty worker id")
	}
	ok, err := l.rdb.SetNX(ctx, leaseKey(worker), holder, l.ttl).Result()
	if err != nil {
		return fmt.Errorf("hold lease of worker %s: %w", worker, err)
	}
	if !ok {
		return fmt.Errorf("hold lease of worker %s: %w", worker, ErrLeaseHeld)
	}
	return nil
}

// Keep refreshes worker's lease every third of the TTL until ctx ends, then
// releases it, so that a worker that stops cleanly is known dead at once.
// A refresh that fails is reported to onErr (when not nil) and tried again
// at the next tick; a lease that expired meanwhile is taken again.
func (l *WorkerLeases) Keep(ctx context.Context, worker, holder string, onErr func(error)) {
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err := l.rdb.Del(rctx, leaseKey(worker)).Err()
			cancel()
			if err != nil && onErr != nil {
				onErr(fmt.Errorf("release lease of worker %s: %w", worker, err))
			}
			return
		case <-tick.C:
			if err := l.rdb.Set(ctx, leaseKey(worker), holder, l.ttl).Err(); err != nil && ctx.Err() == nil && onErr != nil {
				onErr(fmt.Errorf("refresh lease of worker %s: %w", worker, err))
			}
		}
	}
}

// Held tells whether worker's lease is present, that is whether the worker
// may still be alive.
func (l *WorkerLeases) Held(ctx context.Context, worker string) (bool, error) {
	n, err := l.rdb.Exists(ctx, leaseKey(worker)).Result()
	if err != nil {
		return false, fmt.Errorf("read lease of worker %s: %w", worker, err)
	}
	return n == 1, nil
}

// deploymentKey names the deployment that uses this Redis.
const deploymentKey = "agentbot:deployment"

// Deployment returns the id of the deployment that uses this Redis, made
// at random by the first worker to ask. Workers put it in their ids, so
// that a worker judges by its leases only the sandboxes of its own
// deployment: the workers of another one, on another Redis but the same
// Docker engine, hold leases it cannot see.
func (l *WorkerLeases) Deployment(ctx context.Context) (string, error) {
	// Naming and reading are one SET NX GET: it answers the name already
	// there, or nil when this id became the name.
	id := rand.Text()[:12]
	prev, err := l.rdb.SetArgs(ctx, deploymentKey, id, redis.SetArgs{Mode: "NX", Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return id, nil
	case err != nil:
		return "", fmt.Errorf("name the deployment: %w", err)
	}
	return prev, nil
}
