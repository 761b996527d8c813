package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestSlotsLimitAnInstallation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	s := NewSlots(rdb, 2)
	task := func(id string, inst int64) app.Task { return app.Task{ID: id, InstallationID: inst} }
	for _, tt := range []struct {
		task app.Task
		want bool
	}{
		{task("a1", 1), true},
		{task("a2", 1), true},
		{task("a3", 1), false}, // installation 1 is at its limit
		{task("a1", 1), true},  // a1 holds a slot already (resumed)
		{task("b1", 2), true},  // another installation is not held back
	} {
		if got, err := s.Acquire(ctx, tt.task); err != nil || got != tt.want {
			t.Errorf("Acquire(%s of %d) = %v, %v; want %v", tt.task.ID, tt.task.InstallationID, got, err, tt.want)
		}
	}
	if err := s.Release(ctx, task("a1", 1)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Acquire(ctx, task("a3", 1)); err != nil || !got {
		t.Errorf("Acquire after a release = %v, %v; want the freed slot", got, err)
	}
	running, err := rdb.ZRange(ctx, slotsKey(1), 0, -1).Result()
	if err != nil || !slices.Equal(running, []string{"a2", "a3"}) {
		t.Errorf("Running = %v, %v; want a2, a3", running, err)
	}

	// A slot whose holder stopped renewing it (its worker died) is free
	// once the lease runs out.
	short := &Slots{rdb: rdb, limit: 1, lease: 100 * time.Millisecond}
	if got, _ := short.Acquire(ctx, task("c1", 3)); !got {
		t.Fatal("first slot of installation 3 refused")
	}
	if got, _ := short.Acquire(ctx, task("c2", 3)); got {
		t.Fatal("second slot of installation 3 granted over the limit")
	}
	// Redis's clock dates the lease: poll until it has run out there.
	waitUntil(t, 5*time.Second, "the holder's lease to run out and free its slot", func() bool {
		got, err := short.Acquire(ctx, task("c2", 3))
		if err != nil {
			t.Fatalf("Acquire after the holder's lease: %v", err)
		}
		return got
	})
}

// timedHandler runs every task for d and records when each started and
// how many tasks of one installation ran at once at most.
type timedHandler struct {
	d       time.Duration
	mu      sync.Mutex
	started map[string]time.Time
	running map[int64]int
	most    map[int64]int
}

func newTimedHandler(d time.Duration) *timedHandler {
	return &timedHandler{d: d, started: map[string]time.Time{}, running: map[int64]int{}, most: map[int64]int{}}
}

func (h *timedHandler) ProcessTask(ctx context.Context, t app.Task) error {
	h.mu.Lock()
	if _, ok := h.started[t.ID]; !ok {
		h.started[t.ID] = time.Now()
	}
	h.running[t.InstallationID]++
	h.most[t.InstallationID] = max(h.most[t.InstallationID], h.running[t.InstallationID])
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.running[t.InstallationID]--
		h.mu.Unlock()
	}()
	select {
	case <-time.After(h.d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *timedHandler) startedAt(id string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.started[id]
	return at, ok
}

func TestOneInstallationsBacklogDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	c := NewClient(rdb)
	const taskTime = time.Second
	for i := range 50 {
		task := sampleTask(fmt.Sprintf("a%02d", i), time.Now())
		task.InstallationID = 1
		if _, err := c.Enqueue(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	h := newTimedHandler(taskTime)
	srv := NewServer(rdb, h, ServerConfig{Concurrency: 2, MaxPerInstallation: 1, SlotRetry: 200 * time.Millisecond,
		ShutdownTimeout: time.Second})
	runServer(t, srv)
	waitUntil(t, 10*time.Second, "the backlog to start", func() bool {
		_, ok := h.startedAt("a00")
		return ok
	})

	b := sampleTask("b", time.Now())
	b.InstallationID = 2
	queued := time.Now()
	if _, err := c.Enqueue(ctx, b); err != nil {
		t.Fatal(err)
	}
	var waited time.Duration
	waitUntil(t, 30*time.Second, "installation 2's task to start", func() bool {
		at, ok := h.startedAt("b")
		waited = at.Sub(queued)
		return ok
	})
	t.Logf("installation 2's task waited %s behind 50 tasks of installation 1 (one task: %s)", waited, taskTime)
	if waited > taskTime {
		t.Errorf("installation 2's task waited %s behind installation 1's backlog; want at most one task's time (%s)", waited, taskTime)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.most[1] != 1 {
		t.Errorf("installation 1 ran %d tasks at once; want its limit, 1", h.most[1])
	}
}

// A stop, status or help of an installation at its limit runs at once: it
// is about the tasks holding the slots.
func TestControlVerbsTakeNoSlot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	if ok, err := NewSlots(rdb, 1).Acquire(ctx, app.Task{ID: "running-fix", InstallationID: 7}); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	c := NewClient(rdb)
	var control []string
	for _, v := range []app.Verb{app.VerbStop, app.VerbStatus, app.VerbHelp, app.VerbFix} {
		task := sampleTask(string(v), time.Now())
		task.InstallationID, task.Verb = 7, v
		if _, err := c.Enqueue(ctx, task); err != nil {
			t.Fatal(err)
		}
		if v.Control() {
			control = append(control, task.ID)
		}
	}
	h := newTimedHandler(10 * time.Millisecond)
	refused := countSlotRefusals(rdb, 7)
	runServer(t, NewServer(rdb, h, ServerConfig{Concurrency: 4, MaxPerInstallation: 1, SlotRetry: 100 * time.Millisecond,
		ShutdownTimeout: time.Second, Logger: quiet}))
	for _, id := range control {
		waitUntil(t, 10*time.Second, id+" to run while its installation is at its limit", func() bool {
			_, ok := h.startedAt(id)
			return ok
		})
	}
	waitUntil(t, 10*time.Second, "the fix to be refused a slot", func() bool { return refused() > 0 })
	if _, ok := h.startedAt(string(app.VerbFix)); ok {
		t.Error("a fix ran while its installation was at its limit")
	}
}

// countSlotRefusals counts, from now on, the slots of installation that
// commands of rdb ask for and are refused.
func countSlotRefusals(rdb *redis.Client, installation int64) func() int64 {
	var n atomic.Int64
	rdb.AddHook(slotRefusals{key: slotsKey(installation), n: &n})
	return n.Load
}

// slotRefusals is a redis.Hook that counts acquireScript's refusals on key.
type slotRefusals struct {
	key string
	n   *atomic.Int64
}

func (slotRefusals) DialHook(next redis.DialHook) redis.DialHook { return next }

func (slotRefusals) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h slotRefusals) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// EVALSHA (or EVAL) script 1 key ...: acquireScript when the key is
		// the slots, which answers 0 when it refuses.
		args := cmd.Args()
		if c, ok := cmd.(*redis.Cmd); ok && err == nil && len(args) > 3 && args[3] == h.key &&
			(cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			if got, _ := c.Int(); got == 0 {
				h.n.Add(1)
			}
		}
		return err
	}
}

// waitUntil polls ok every 20ms, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A task on its last attempt is never handed back deferred, which asynq
// would take for a final failure: it waits for its slot instead.
func TestTaskOnItsLastAttemptWaitsForItsSlot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	slots := NewSlots(rdb, 1)
	holder := app.Task{ID: "holder", InstallationID: 5}
	if ok, err := slots.Acquire(ctx, holder); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	last := sampleTask("last", time.Now())
	last.InstallationID = 5
	payload, err := json.Marshal(last)
	if err != nil {
		t.Fatal(err)
	}
	aq := asynq.NewClientFromRedisClient(rdb)
	if _, err := aq.EnqueueContext(ctx, asynq.NewTask(TaskType, payload), asynq.TaskID(last.ID), asynq.MaxRetry(0)); err != nil {
		t.Fatal(err)
	}
	h := newTimedHandler(10 * time.Millisecond)
	refused := countSlotRefusals(rdb, 5)
	srv := NewServer(rdb, h, ServerConfig{Concurrency: 2, MaxPerInstallation: 1, SlotRetry: 100 * time.Millisecond,
		ShutdownTimeout: time.Second, Logger: quiet})
	runServer(t, srv)
	// Refused, then refused again: it waits, and is not handed back.
	waitUntil(t, 10*time.Second, "the task to be refused its slot twice", func() bool { return refused() >= 2 })
	if _, ok := h.startedAt(last.ID); ok {
		t.Fatal("the task ran while its installation was at its limit")
	}
	if err := slots.Release(ctx, holder); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the task to run once its slot is free", func() bool {
		_, ok := h.startedAt(last.ID)
		return ok
	})
	info, err := asynq.NewInspectorFromRedisClient(rdb).GetQueueInfo(DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	if info.Archived != 0 {
		t.Errorf("%d tasks archived; want none", info.Archived)
	}
}

// A task that used up its retries and is then deferred (another task holds
// its issue's lock) runs once the lock is free, where asynq would archive
// it.
func TestDeferredTaskOnItsLastAttemptRuns(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	var calls atomic.Int32
	ran := make(chan struct{})
	srv := NewServer(rdb, handlerFunc(func(context.Context, app.Task) error {
		if calls.Add(1) <= 3 {
			return deferredErr{}
		}
		close(ran)
		return nil
	}), ServerConfig{Concurrency: 1, Logger: quiet})
	runServer(t, srv)
	payload, err := json.Marshal(sampleTask("w1", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asynq.NewClientFromRedisClient(rdb).EnqueueContext(t.Context(), asynq.NewTask(TaskType, payload),
		asynq.TaskID("w1"), asynq.MaxRetry(0)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatalf("the task was deferred %d times and never ran; want it run after 3", calls.Load())
	}
}
