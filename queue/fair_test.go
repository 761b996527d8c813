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
	// A task of installation 9 waits: the limit holds the others back.
	if err := listWaiting(ctx, rdb, task("w1", 9)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		task app.Task
		want bool
	}{
		{task("a1", 1), true},
		{task("a2", 1), true},
		{task("a3", 1), false}, // installation 1 is at its limit while w1 waits
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
	// Once w1 runs, nobody waits: installation 1 uses what is free.
	if got, err := s.Acquire(ctx, task("w1", 9)); err != nil || !got {
		t.Fatalf("Acquire(w1) = %v, %v", got, err)
	}
	if got, err := s.Acquire(ctx, task("a4", 1)); err != nil || !got {
		t.Errorf("Acquire over the limit with nobody waiting = %v, %v; want a slot", got, err)
	}
	if n, err := rdb.ZCard(ctx, waitingIndex).Result(); err != nil || n != 0 {
		t.Errorf("%d installations listed as waiting, %v; want none: every task refused runs", n, err)
	}

	// A slot whose holder stopped renewing it (its worker died) is free
	// once the lease runs out.
	if err := listWaiting(ctx, rdb, task("w2", 10)); err != nil {
		t.Fatal(err)
	}
	// While the lease runs, the slot is held: a lease of a minute, which
	// no load outlasts between two calls.
	one := &Slots{rdb: rdb, insp: s.insp, limit: 1, lease: time.Minute, log: quiet}
	if got, _ := one.Acquire(ctx, task("c1", 3)); !got {
		t.Fatal("first slot of installation 3 refused")
	}
	if got, _ := one.Acquire(ctx, task("c2", 3)); got {
		t.Fatal("second slot of installation 3 granted over the limit")
	}
	// Once it has run out, the slot is free: a lease of 100 ms.
	short := &Slots{rdb: rdb, insp: s.insp, limit: 1, lease: 100 * time.Millisecond, log: quiet}
	if got, _ := short.Acquire(ctx, task("d1", 4)); !got {
		t.Fatal("first slot of installation 4 refused")
	}
	// Redis's clock dates the lease: poll until it has run out there.
	waitUntil(t, 5*time.Second, "the holder's lease to run out and free its slot", func() bool {
		got, err := short.Acquire(ctx, task("d2", 4))
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
	// atStart is how many tasks of its installation ran, itself included,
	// when each task started.
	atStart map[string]int
}

func newTimedHandler(d time.Duration) *timedHandler {
	return &timedHandler{d: d, started: map[string]time.Time{}, running: map[int64]int{}, most: map[int64]int{}, atStart: map[string]int{}}
}

func (h *timedHandler) ProcessTask(ctx context.Context, t app.Task) error {
	h.mu.Lock()
	if _, ok := h.started[t.ID]; !ok {
		h.started[t.ID] = time.Now()
	}
	h.running[t.InstallationID]++
	h.atStart[t.ID] = h.running[t.InstallationID]
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
	const taskTime, backlog = time.Second, 50
	for i := range backlog {
		task := sampleTask(fmt.Sprintf("a%02d", i), time.Now())
		task.InstallationID = 1
		if _, err := c.Enqueue(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	h := newTimedHandler(taskTime)
	srv := NewServer(rdb, h, ServerConfig{Concurrency: 2, MaxPerInstallation: 1, SlotRetry: 200 * time.Millisecond,
		ShutdownTimeout: time.Second, Logger: quiet})
	runServer(t, srv)
	waitUntil(t, 10*time.Second, "the backlog to start in both slots", func() bool {
		_, ok := h.startedAt("a01")
		return ok
	})

	b := sampleTask("b", time.Now())
	b.InstallationID = 2
	queued := time.Now()
	if _, err := c.Enqueue(ctx, b); err != nil {
		t.Fatal(err)
	}
	var bStart time.Time
	waitUntil(t, 30*time.Second, "installation 2's task to start", func() bool {
		at, ok := h.startedAt("b")
		bStart = at
		return ok
	})
	// Installation 1 used both slots while nobody else waited; once b was
	// queued, it started a task only below its limit until b started.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.most[1] != 2 {
		t.Errorf("installation 1 ran at most %d tasks at once before b came; want both slots", h.most[1])
	}
	// How many of its tasks installation 1 started, one at a time, while b
	// waited depends on how fast the machine parks the backlog in b's way;
	// that it kept to its limit and b overtook the backlog does not.
	before := 0
	for id, at := range h.started {
		if id == "b" || !at.Before(bStart) {
			continue
		}
		before++
		if at.After(queued) && h.atStart[id] > 1 {
			t.Errorf("%s started as installation 1's task number %d while b waited; want its limit, 1", id, h.atStart[id])
		}
	}
	if before == backlog {
		t.Errorf("installation 1 started all its %d tasks before b; want b ahead of its backlog", backlog)
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
	waitElsewhere(t, rdb)
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

// waitElsewhere lists a task of another installation as waiting, which
// holds every installation of the test to its limit.
func waitElsewhere(t *testing.T, rdb *redis.Client) {
	t.Helper()
	if err := listWaiting(t.Context(), rdb, app.Task{ID: "elsewhere", InstallationID: 999}); err != nil {
		t.Fatal(err)
	}
}

// countSlotRefusals counts, from now on, the slots of installation that
// commands of rdb ask for and are refused.
func countSlotRefusals(rdb *redis.Client, installation int64) func() int64 {
	var n atomic.Int64
	rdb.AddHook(slotRefusals{installation: fmt.Sprint(installation), n: &n})
	return n.Load
}

// slotRefusals is a redis.Hook that counts acquireScript's refusals of
// slots of installation.
type slotRefusals struct {
	installation string
	n            *atomic.Int64
}

func (slotRefusals) DialHook(next redis.DialHook) redis.DialHook { return next }

func (slotRefusals) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h slotRefusals) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// EVALSHA (or EVAL) script 1 index installation id limit lease
		// wait park: acquireScript, which answers {0} when it refuses.
		args := cmd.Args()
		if c, ok := cmd.(*redis.Cmd); ok && err == nil && len(args) == 10 && args[3] == waitingIndex &&
			fmt.Sprint(args[4]) == h.installation && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			if got, _ := c.Slice(); len(got) == 1 && got[0] == int64(0) {
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
	waitElsewhere(t, rdb)
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

// gatedHandler runs each task until the test lets it end, and records the
// order in which tasks start.
type gatedHandler struct {
	mu      sync.Mutex
	started []string
	gates   map[string]chan struct{}
}

func newGatedHandler() *gatedHandler { return &gatedHandler{gates: map[string]chan struct{}{}} }

func (h *gatedHandler) gate(id string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gates[id] == nil {
		h.gates[id] = make(chan struct{})
	}
	return h.gates[id]
}

func (h *gatedHandler) ProcessTask(ctx context.Context, t app.Task) error {
	gate := h.gate(t.ID)
	h.mu.Lock()
	h.started = append(h.started, t.ID)
	h.mu.Unlock()
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// end lets task id end.
func (h *gatedHandler) end(id string) { close(h.gate(id)) }

func (h *gatedHandler) order() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.started)
}

// waitStarted waits until ids have all started.
func (h *gatedHandler) waitStarted(t *testing.T, what string, ids ...string) {
	t.Helper()
	waitUntil(t, 20*time.Second, what, func() bool {
		got := h.order()
		for _, id := range ids {
			if !slices.Contains(got, id) {
				return false
			}
		}
		return true
	})
}

// enqueueOf queues a task of installation for each id, in order.
func enqueueOf(t *testing.T, c *Client, installation int64, ids ...string) {
	t.Helper()
	for _, id := range ids {
		task := sampleTask(id, time.Now())
		task.InstallationID = installation
		if _, err := c.Enqueue(t.Context(), task); err != nil {
			t.Fatal(err)
		}
	}
}

// With no other installation's task waiting, the limit holds nothing
// back: one installation's tasks take every slot of the worker.
func TestOneInstallationUsesEverySlot(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	enqueueOf(t, NewClient(rdb), 1, "a0", "a1", "a2", "a3")
	h := newGatedHandler()
	// An hour between tries: a task that started did so at once.
	runServer(t, NewServer(rdb, h, ServerConfig{Concurrency: 3, MaxPerInstallation: 1, SlotRetry: time.Hour,
		ShutdownTimeout: time.Second, Logger: quiet}))
	h.waitStarted(t, "three tasks of one installation in the three slots", "a0", "a1", "a2")
	// The slot a0 frees goes to the next task as it ends.
	h.end("a0")
	h.waitStarted(t, "a3 in the slot a0 freed", "a3")
	for _, id := range []string{"a1", "a2", "a3"} {
		h.end(id)
	}
}

// Two installations share the slots by the limit while both have tasks
// waiting; a task held back starts as soon as the installation that held
// it back has nothing left waiting and a slot frees: woken, never left to
// its retry delay (an hour here).
func TestInstallationsShareSlotsAndNoneStaysIdle(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	c := NewClient(rdb)
	enqueueOf(t, c, 1, "a0")
	enqueueOf(t, c, 2, "b0")
	enqueueOf(t, c, 1, "a1", "a2")
	enqueueOf(t, c, 2, "b1")
	h := newGatedHandler()
	runServer(t, NewServer(rdb, h, ServerConfig{Concurrency: 2, MaxPerInstallation: 1, SlotRetry: time.Hour,
		ShutdownTimeout: time.Second, Logger: quiet}))
	h.waitStarted(t, "one task of each installation", "a0", "b0")
	// b0's slot: a1 and a2 come first in the queue, but b1 waits while
	// installation 1 runs its limit.
	h.end("b0")
	h.waitStarted(t, "b1 in b0's slot", "b1")
	if got := h.order(); len(got) != 3 || got[2] != "b1" {
		t.Fatalf("started %v; want a0, b0, b1: installation 1 held to one slot while b1 waited", got)
	}
	// Nothing of installation 2 waits now: b1's slot goes to a1, and a0's
	// to a2, at once.
	h.end("b1")
	h.waitStarted(t, "a parked task of installation 1 in b1's slot", "a1")
	h.end("a0")
	h.waitStarted(t, "the other parked task in a0's slot", "a2")
	h.end("a1")
	h.end("a2")
}
