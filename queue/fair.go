package queue

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Installation slots keep one installation's backlog from taking every
// worker: a task runs only while its installation has fewer than the
// limit running, across all workers sharing the Redis; otherwise it goes
// back to wait as a deferred task (see Deferred), which uses up none of
// its retries. asynq orders its queues, not the tenants within one, so the
// slots are a semaphore of their own, leased as asynq leases its active
// tasks: a worker renews the lease of what it runs, and a worker that dies
// leaves its slots to expire — or to the same task, resumed elsewhere,
// which takes its own slot back at once. Its key is listed in the package
// doc.
const (
	// slotLease is how long a slot is held without renewal: how long a
	// dead worker's slot keeps the installation below its limit.
	slotLease = 30 * time.Second
	// DefaultSlotRetry is how soon a task whose installation is at its
	// limit is tried again.
	DefaultSlotRetry = 2 * time.Second
)

func slotsKey(installation int64) string {
	return "agentbot:installation:" + strconv.FormatInt(installation, 10) + ":running"
}

// acquireScript takes a slot for a task, or renews the one it holds, in
// one step, dropping expired leases first. Redis's clock, not the
// workers', dates the leases, so hosts whose clocks disagree agree on them.
//
//	KEYS: slots
//	ARGV: task id, limit, lease in milliseconds
//	returns 1 when the task holds a slot after the call
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not held and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
local lease = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
if redis.call('PTTL', KEYS[1]) < lease then
  redis.call('PEXPIRE', KEYS[1], lease)
end
return 1`)

// Slots are the installation slots over one Redis.
type Slots struct {
	rdb   redis.UniversalClient
	limit int
	lease time.Duration
}

// NewSlots returns Slots over rdb, which the caller closes, letting limit
// tasks of one installation run at once.
func NewSlots(rdb redis.UniversalClient, limit int) *Slots {
	return &Slots{rdb: rdb, limit: limit, lease: slotLease}
}

// Acquire takes a slot of t's installation for t, and reports false when
// the installation already runs its limit of other tasks. A task that
// holds a slot (it is resumed, or renews its lease) keeps it.
func (s *Slots) Acquire(ctx context.Context, t app.Task) (bool, error) {
	n, err := acquireScript.Run(ctx, s.rdb, []string{slotsKey(t.InstallationID)},
		t.ID, s.limit, s.lease.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("slot of installation %d for task %s: %w", t.InstallationID, t.ID, err)
	}
	return n == 1, nil
}

// Release frees t's slot.
func (s *Slots) Release(ctx context.Context, t app.Task) error {
	if err := s.rdb.ZRem(ctx, slotsKey(t.InstallationID), t.ID).Err(); err != nil {
		return fmt.Errorf("release slot of installation %d for task %s: %w", t.InstallationID, t.ID, err)
	}
	return nil
}

// installationBusy is the deferral of a task whose installation is at its
// limit.
type installationBusy struct {
	installation int64
	limit        int
	after        time.Duration
}

func (e *installationBusy) Error() string {
	return fmt.Sprintf("installation %d runs %d tasks already; trying again in %s", e.installation, e.limit, e.after)
}

// RetryAfter implements Deferred.
func (e *installationBusy) RetryAfter() time.Duration { return e.after }

// withSlot calls run while t holds a slot of its installation, renewing
// the lease meanwhile, or defers t, after retry, when the installation is
// at its limit.
func (s *Slots) withSlot(ctx context.Context, t app.Task, retry time.Duration, log *slog.Logger, run func(context.Context) error) error {
	ok, err := s.Acquire(ctx, t)
	if err != nil {
		return err
	}
	if !ok {
		return &installationBusy{installation: t.InstallationID, limit: s.limit, after: retry}
	}
	defer func() {
		// The task's context may be cancelled already (a shutdown); the
		// slot is freed all the same, or it would wait out its lease.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := s.Release(rctx, t); err != nil {
			log.Warn("release installation slot", "task", t.ID, "err", err)
		}
	}()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(s.lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if held, err := s.Acquire(ctx, t); err != nil || !held {
					// The task goes on: a lost slot costs fairness for a
					// moment, never the task.
					log.Warn("renew installation slot", "task", t.ID, "held", held, "err", err)
				}
			}
		}
	}()
	return run(ctx)
}
