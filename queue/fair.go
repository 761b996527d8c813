package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Installation slots keep one installation's backlog from holding up
// another's, without leaving a worker idle: a task whose installation runs
// its limit of tasks already, across all workers sharing the Redis, is held
// back only while a task of another installation below its limit waits;
// with nobody else waiting, every worker slot is used. asynq orders its
// queues, not the tenants within one, so the slots are a semaphore of their
// own, leased as asynq leases its active tasks: a worker renews the lease
// of what it runs, and a worker that dies leaves its slots to expire — or
// to the same task, resumed elsewhere, which takes its own slot back at
// once.
//
// Which tasks wait is known from Enqueue on: a task is listed as waiting
// from then until it takes a slot. One held back is handed back to asynq
// deferred (see Deferred, which uses up none of its retries) and listed as
// parked; when a slot frees, or an installation stops holding others back,
// the oldest parked task of every installation that may now run is moved
// back to the queue at once. Its retry delay (SlotRetry) only bounds how
// long a wake that never came — its worker died in between — leaves it
// parked. The keys are listed in the package doc.
const (
	// slotLease is how long a slot is held without renewal: how long a
	// dead worker's slot keeps the installation below its limit.
	slotLease = 30 * time.Second
	// waitLease is how long a task stays listed as waiting without taking
	// a slot: how long one that vanished from the queue unseen can hold
	// other installations to their limit.
	waitLease = 15 * time.Minute
	// DefaultSlotRetry is how soon a parked task is tried again when no
	// wake came first.
	DefaultSlotRetry = 10 * time.Second
	// wakeTries bound the wait, wakeTry apart, for a task just parked to
	// leave asynq's active tasks, where it cannot be moved.
	wakeTries = 100
	wakeTry   = 10 * time.Millisecond
)

// waitingIndex lists the installations that have waiting tasks, by the
// expiry of their latest.
const waitingIndex = "agentbot:installations:waiting"

func slotsKey(installation int64) string {
	return "agentbot:installation:" + strconv.FormatInt(installation, 10) + ":running"
}

// slotsLua is what the scripts share. Keys of other installations are
// found through the index, so the scripts need one Redis, not a cluster.
// Redis's clock, not the workers', dates the leases, so hosts whose clocks
// disagree agree on them.
const slotsLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local index = KEYS[1]
local function key(inst, what) return 'agentbot:installation:' .. inst .. ':' .. what end
local function live(k)
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  return redis.call('ZCARD', k)
end
local function keep(k, ms)
  if redis.call('PTTL', k) < ms then redis.call('PEXPIRE', k, ms) end
end
-- below lists the installations with waiting tasks, each true when it runs
-- fewer than limit, and counts those that do.
local function below(limit)
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
  local out, n = {}, 0
  for _, inst in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    if live(key(inst, 'waiting')) == 0 then
      redis.call('ZREM', index, inst)
    else
      out[inst] = live(key(inst, 'running')) < limit
      if out[inst] then n = n + 1 end
    end
  end
  return out, n
end
-- wake takes out of the parked lists the oldest task of every installation
-- that may run one more: below its limit, or nobody else waits below theirs.
local function wake(limit)
  local woken = {}
  local insts, n = below(limit)
  for inst, under in pairs(insts) do
    if under or n == 0 then
      live(key(inst, 'parked'))
      local first = redis.call('ZRANGE', key(inst, 'parked'), 0, 0)
      if first[1] then
        redis.call('ZREM', key(inst, 'parked'), first[1])
        table.insert(woken, first[1])
      end
    end
  end
  return woken
end
`

// acquireScript takes a slot for a task, or renews the one it holds, in
// one step; a task refused is listed as waiting, and as parked when asked.
//
//	KEYS: index
//	ARGV: installation, task id, limit, lease and wait lease in milliseconds, "1" to park
//	returns {1, tasks to wake...} when the task holds a slot after the call, {0} otherwise
var acquireScript = redis.NewScript(slotsLua + `
local inst, id, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local lease, wait = tonumber(ARGV[4]), tonumber(ARGV[5])
local running = key(inst, 'running')
local held = live(running) > 0 and redis.call('ZSCORE', running, id)
if not held and redis.call('ZCARD', running) >= limit then
  local insts, n = below(limit)
  if n > 0 then
    local lists = {key(inst, 'waiting')}
    if ARGV[6] == '1' then table.insert(lists, key(inst, 'parked')) end
    table.insert(lists, index)
    for _, k in ipairs(lists) do
      redis.call('ZADD', k, now + wait, k == index and inst or id)
      keep(k, wait)
    end
    return {0}
  end
end
redis.call('ZADD', running, now + lease, id)
keep(running, lease)
redis.call('ZREM', key(inst, 'waiting'), id)
redis.call('ZREM', key(inst, 'parked'), id)
local out = wake(limit)
table.insert(out, 1, 1)
return out`)

// releaseScript frees a task's slot.
//
//	KEYS: index
//	ARGV: installation, task id, limit
//	returns the tasks to wake
var releaseScript = redis.NewScript(slotsLua + `
for _, what in ipairs({'running', 'waiting', 'parked'}) do
  redis.call('ZREM', key(ARGV[1], what), ARGV[2])
end
return wake(tonumber(ARGV[3]))`)

// waitScript lists a queued task as waiting.
//
//	KEYS: index
//	ARGV: installation, task id, wait lease in milliseconds
var waitScript = redis.NewScript(slotsLua + `
local inst, wait = ARGV[1], tonumber(ARGV[3])
for _, k in ipairs({key(inst, 'waiting'), index}) do
  redis.call('ZADD', k, now + wait, k == index and inst or ARGV[2])
  keep(k, wait)
end
return 1`)

// listWaiting lists t, just queued, as waiting for a slot of its
// installation. A control verb takes no slot (see Server), and waits for
// none.
func listWaiting(ctx context.Context, rdb redis.UniversalClient, t app.Task) error {
	if t.Verb.Control() {
		return nil
	}
	if err := waitScript.Run(ctx, rdb, []string{waitingIndex}, t.InstallationID, t.ID, waitLease.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("list task %s as waiting for installation %d: %w", t.ID, t.InstallationID, err)
	}
	return nil
}

// Slots are the installation slots over one Redis.
type Slots struct {
	rdb   redis.UniversalClient
	insp  *asynq.Inspector
	limit int
	lease time.Duration
	log   *slog.Logger
}

// NewSlots returns Slots over rdb, which the caller closes, letting limit
// tasks of one installation run at once while another installation's
// task waits.
func NewSlots(rdb redis.UniversalClient, limit int) *Slots {
	return &Slots{rdb: rdb, insp: asynq.NewInspectorFromRedisClient(rdb), limit: limit, lease: slotLease, log: slog.Default()}
}

// Acquire takes a slot of t's installation for t, and reports false when
// the installation already runs its limit of other tasks while a task of
// another installation below its limit waits. A task that holds a slot (it
// is resumed, or renews its lease) keeps it.
func (s *Slots) Acquire(ctx context.Context, t app.Task) (bool, error) {
	return s.acquire(ctx, t, false)
}

// acquire is Acquire; park lists t, when refused, as handed back to the
// queue, to be woken there.
func (s *Slots) acquire(ctx context.Context, t app.Task, park bool) (bool, error) {
	parkArg := "0"
	if park {
		parkArg = "1"
	}
	res, err := acquireScript.Run(ctx, s.rdb, []string{waitingIndex},
		t.InstallationID, t.ID, s.limit, s.lease.Milliseconds(), waitLease.Milliseconds(), parkArg).Slice()
	if err != nil {
		return false, fmt.Errorf("slot of installation %d for task %s: %w", t.InstallationID, t.ID, err)
	}
	if len(res) == 0 || res[0] != int64(1) {
		return false, nil
	}
	s.wake(ctx, res[1:])
	return true, nil
}

// Release frees t's slot, and wakes the parked tasks that may run now.
func (s *Slots) Release(ctx context.Context, t app.Task) error {
	woken, err := releaseScript.Run(ctx, s.rdb, []string{waitingIndex}, t.InstallationID, t.ID, s.limit).Slice()
	if err != nil {
		return fmt.Errorf("release slot of installation %d for task %s: %w", t.InstallationID, t.ID, err)
	}
	s.wake(ctx, woken)
	return nil
}

// wake moves parked tasks back to the queue. One refused a moment ago may
// still be among asynq's active tasks, on its way to the retry set: it is
// waited for. One not parked in asynq (gone, or already queued) is left
// alone; a wake that fails leaves the task to its retry delay.
func (s *Slots) wake(ctx context.Context, ids []any) {
	for _, v := range ids {
		id, _ := v.(string)
		if err := s.wakeOne(ctx, id); err != nil {
			s.log.Warn("wake a parked task", "task", id, "err", err)
		}
	}
}

func (s *Slots) wakeOne(ctx context.Context, id string) error {
	for range wakeTries {
		info, err := s.insp.GetTaskInfo(DefaultQueue, id)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		switch info.State {
		case asynq.TaskStateRetry:
			if err := s.insp.RunTask(DefaultQueue, id); err != nil {
				return fmt.Errorf("queue task %s again: %w", id, err)
			}
			return nil
		case asynq.TaskStateActive:
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wakeTry):
			}
		default:
			return nil
		}
	}
	return fmt.Errorf("task %s stayed active after it was parked", id)
}

// installationBusy is the deferral of a task held back by the limit of its
// installation.
type installationBusy struct {
	installation int64
	limit        int
	after        time.Duration
}

func (e *installationBusy) Error() string {
	return fmt.Sprintf("installation %d runs %d tasks already while another installation's task waits; trying again when a slot frees, in %s at the latest",
		e.installation, e.limit, e.after)
}

// RetryAfter implements Deferred.
func (e *installationBusy) RetryAfter() time.Duration { return e.after }

// withSlot calls run while t holds a slot of its installation, renewing
// the lease meanwhile, or defers t, after retry at the latest, when it is
// held back. park says t goes back to the queue, where a freed slot wakes
// it; otherwise its caller waits and tries again.
func (s *Slots) withSlot(ctx context.Context, t app.Task, retry time.Duration, park bool, log *slog.Logger, run func(context.Context) error) error {
	ok, err := s.acquire(ctx, t, park)
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
