package queue

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func connect(t *testing.T, s *redistest.Server) *redis.Client {
	t.Helper()
	return connectURL(t, s.URL)
}

// connectURL is connect for a URL, such as a Sentinel one or a patient
// one (redistest.Patient).
func connectURL(t *testing.T, url string) *redis.Client {
	t.Helper()
	rdb, err := Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func sampleTask(id string, at time.Time) app.Task {
	return app.Task{
		ID: id, Delivery: "d-" + id, Event: "issue_comment", InstallationID: 7,
		Repo: "octo/hello", Number: 3, IsPR: true, Verb: app.VerbFix,
		Instructions: "make it pass", Requester: "alice", CommentID: 99,
		ReceivedAt: at.UTC().Truncate(time.Millisecond),
	}
}

func TestEnqueueRecordsAndQueues(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	c, store := NewClient(rdb), NewStore(rdb)

	task := sampleTask("t1", time.Now())
	dup, err := c.Enqueue(ctx, task)
	if err != nil || dup {
		t.Fatalf("Enqueue = %v, %v; want a new task", dup, err)
	}
	rec, err := store.Task(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task != task || rec.State != app.StateQueued || rec.UpdatedAt.IsZero() {
		t.Errorf("record = %+v; want %+v in state queued", rec, task)
	}
	if err := testutil.CollectAndCompare(NewDepthCollector(rdb), strings.NewReader(depthText(1))); err != nil {
		t.Error(err)
	}
	info, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(DefaultQueue, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if info.MaxRetry != MaxRetry || info.Timeout != MaxTaskTime {
		t.Errorf("queued with %d retries and a %v timeout; want %d and %v", info.MaxRetry, info.Timeout, MaxRetry, MaxTaskTime)
	}
}

func TestDepthBeforeAnyTask(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	if err := testutil.CollectAndCompare(NewDepthCollector(rdb), strings.NewReader(depthText(0))); err != nil {
		t.Error(err)
	}
}

// depthText is the exposition of the default queue with pending tasks.
func depthText(pending int) string {
	return fmt.Sprintf(`
# HELP agentbot_queue_depth Tasks in the queue by asynq state.
# TYPE agentbot_queue_depth gauge
agentbot_queue_depth{queue="default",state="active"} 0
agentbot_queue_depth{queue="default",state="archived"} 0
agentbot_queue_depth{queue="default",state="completed"} 0
agentbot_queue_depth{queue="default",state="pending"} %d
agentbot_queue_depth{queue="default",state="retry"} 0
agentbot_queue_depth{queue="default",state="scheduled"} 0
`, pending)
}

func TestConcurrentDuplicatesMakeOneTask(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	c, store := NewClient(rdb), NewStore(rdb)

	const n = 20
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fresh int
		errs  []error
	)
	for i := range n {
		wg.Go(func() {
			task := sampleTask("same", time.Now().Add(time.Duration(i)*time.Second))
			dup, err := c.Enqueue(ctx, task)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if !dup {
				fresh++
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 || fresh != 1 {
		t.Fatalf("%d enqueues: %d new, errors %v; want exactly 1 new", n, fresh, errs)
	}
	recs, err := store.List(ctx, 100)
	if err != nil || len(recs) != 1 {
		t.Fatalf("List = %d records, %v; want 1", len(recs), err)
	}
	if pending := pendingTasks(t, rdb); pending != 1 {
		t.Errorf("%d tasks pending in asynq; want 1", pending)
	}
}

func pendingTasks(t *testing.T, rdb redis.UniversalClient) int {
	t.Helper()
	n, err := rdb.LLen(t.Context(), "asynq:{"+DefaultQueue+"}:pending").Result()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestMarkSeen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	c, store := NewClient(rdb), NewStore(rdb)
	if already, err := c.MarkSeen(ctx, "abc"); err != nil || already {
		t.Fatalf("first MarkSeen = %v, %v; want not already seen", already, err)
	}
	if already, err := c.MarkSeen(ctx, "abc"); err != nil || !already {
		t.Fatalf("second MarkSeen = %v, %v; want already seen", already, err)
	}
	ttl, err := rdb.TTL(ctx, deliveryKey("abc")).Result()
	if err != nil || ttl < DeliveryTTL-time.Minute {
		t.Errorf("delivery kept for %v (%v); want at least %v", ttl, err, DeliveryTTL)
	}

	// A task from a delivery already answered is a duplicate: no record,
	// nothing queued.
	task := sampleTask("late", time.Now())
	task.Delivery = "abc"
	if dup, err := c.Enqueue(ctx, task); err != nil || !dup {
		t.Fatalf("Enqueue of an answered delivery = %v, %v; want duplicate", dup, err)
	}
	if _, err := store.Task(ctx, "late"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("record of a duplicate: %v; want none", err)
	}
	if n := pendingTasks(t, rdb); n != 0 {
		t.Errorf("%d tasks pending; want 0", n)
	}
}

func TestStoreStateAndList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	c, store := NewClient(rdb), NewStore(rdb)
	base := time.Now()
	for i := range 3 {
		if _, err := c.Enqueue(ctx, sampleTask(fmt.Sprint("t", i), base.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}

	if err := store.SetState(ctx, "t1", app.StateRunning, "step 2: checks"); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Task(ctx, "t1")
	if err != nil || rec.State != app.StateRunning || rec.Step != "step 2: checks" {
		t.Errorf("after SetState: %+v, %v", rec, err)
	}
	if err := store.SetState(ctx, "nope", app.StateRunning, ""); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("SetState of a missing task = %v; want not found", err)
	}
	if _, err := store.Task(ctx, "nope"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("Task of a missing id = %v; want not found", err)
	}

	recs, err := store.List(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ID != "t2" || recs[1].ID != "t1" {
		t.Errorf("List(2) = %v; want t2, t1", ids(recs))
	}

	if b, err := store.LoadState(ctx, "t1"); b != nil || err != nil {
		t.Errorf("LoadState before SaveState = %q, %v; want nil, nil", b, err)
	}
	if err := store.SaveState(ctx, "t1", []byte(`{"step":3}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := store.LoadState(ctx, "t1"); string(b) != `{"step":3}` || err != nil {
		t.Errorf("LoadState = %q, %v", b, err)
	}
}

func ids(recs []Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

type handlerFunc func(context.Context, app.Task) error

func (f handlerFunc) ProcessTask(ctx context.Context, t app.Task) error { return f(ctx, t) }

func TestServerHandsTaskToHandler(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	got := make(chan app.Task, 1)
	srv := NewServer(rdb, handlerFunc(func(_ context.Context, t app.Task) error {
		got <- t
		return nil
	}), ServerConfig{Concurrency: 1})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	task := sampleTask("w1", time.Now())
	if _, err := NewClient(rdb).Enqueue(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g != task {
			t.Errorf("handler got %+v; want %+v", g, task)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the task never reached the handler")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRedisDownIsAnErrorNotAHang(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := connect(t, srv)
	c := NewClient(rdb)
	srv.Stop()
	// A hang, not a duration: the client's timeouts end the calls in about
	// a second on an idle machine; under the race detector beside the
	// rest of the suite on two cores, their dial retries have taken over
	// ten. The deadline only needs to be far past that.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// A hang is the test's own deadline passing; the client's dial timeout
	// (an "i/o timeout" on a loaded machine, which errors.Is also takes
	// for context.DeadlineExceeded) is the error wanted, as a refusal is.
	if _, err := c.Enqueue(ctx, sampleTask("x", time.Now())); err == nil || ctx.Err() != nil {
		t.Errorf("Enqueue with Redis down = %v (the test's deadline: %v); want a connection error before it", err, ctx.Err())
	}
	if _, err := c.MarkSeen(ctx, "x"); err == nil {
		t.Error("MarkSeen with Redis down succeeded")
	}
	if err := c.Ping(ctx); err == nil {
		t.Error("Ping with Redis down succeeded")
	}
	srv.Restart()
	// The restart's wait for Redis is no part of the bound above: on a
	// loaded machine (or under -race) it may take most of it.
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Enqueue(ctx, sampleTask("x", time.Now())); err != nil {
		t.Errorf("Enqueue after Redis is back: %v", err)
	}
}

// TestProductionRedisConfig starts Redis from deploy/redis/redis.conf and
// checks the settings the queue's durability rests on.
func TestProductionRedisConfig(t *testing.T) {
	t.Parallel()
	conf, err := filepath.Abs(filepath.Join("..", "deploy", "redis", "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	rdb := connect(t, redistest.StartWithConfig(t, conf))
	want := map[string]string{"maxmemory-policy": "noeviction", "appendonly": "yes", "appendfsync": "everysec"}
	for key, v := range want {
		got, err := rdb.ConfigGet(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got[key] != v {
			t.Errorf("%s = %q; want %q", key, got[key], v)
		}
	}
	if _, err := NewClient(rdb).Enqueue(t.Context(), sampleTask("p1", time.Now())); err != nil {
		t.Errorf("enqueue on the production config: %v", err)
	}
}
