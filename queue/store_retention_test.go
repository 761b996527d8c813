package queue

import (
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestTaskRetention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	ttlOf := func(key string) time.Duration {
		t.Helper()
		d, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	within := func(d, ttl time.Duration) bool { return d > ttl-time.Minute && d <= ttl }

	// Kept forever, received two days ago.
	old := sampleTask("old", time.Now().Add(-48*time.Hour))
	if _, err := NewClient(rdb).WithRetention(0).Enqueue(ctx, old); err != nil {
		t.Fatal(err)
	}
	if d := ttlOf(taskKey("old")); d != -1 {
		t.Errorf("record kept forever has a TTL of %s", d)
	}

	const ttl = 24 * time.Hour
	c, store := NewClient(rdb).WithRetention(ttl), NewStore(rdb).WithRetention(ttl)
	if _, err := c.Enqueue(ctx, sampleTask("new", time.Now())); err != nil {
		t.Fatal(err)
	}
	if d := ttlOf(taskKey("new")); !within(d, ttl) {
		t.Errorf("new record's TTL = %s; want %s", d, ttl)
	}
	// The older task's record stays what it was written with, but the
	// index forgets it: it was received before the retention.
	if n, err := rdb.ZCard(ctx, indexKey).Result(); err != nil || n != 1 {
		t.Errorf("index holds %d tasks (%v); want only the new one", n, err)
	}
	if recs, err := store.List(ctx, 10); err != nil || len(recs) != 1 || recs[0].ID != "new" {
		t.Errorf("List = %+v, %v; want the new task only", recs, err)
	}

	// A change restarts the retention of the record; saved state has it.
	if err := rdb.PExpire(ctx, taskKey("new"), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := store.SetState(ctx, "new", app.StateRunning, "step 1"); err != nil {
		t.Fatal(err)
	}
	if d := ttlOf(taskKey("new")); !within(d, ttl) {
		t.Errorf("TTL after a state change = %s; want %s again", d, ttl)
	}
	if err := store.SaveState(ctx, "new", []byte("state")); err != nil {
		t.Fatal(err)
	}
	if d := ttlOf(runKey("new")); !within(d, ttl) {
		t.Errorf("resumable state's TTL = %s; want %s", d, ttl)
	}

	// The default retention applies without WithRetention.
	if _, err := NewClient(rdb).Enqueue(ctx, sampleTask("default", time.Now())); err != nil {
		t.Fatal(err)
	}
	if d := ttlOf(taskKey("default")); !within(d, DefaultTaskRetention) {
		t.Errorf("default TTL = %s; want %s", d, DefaultTaskRetention)
	}
}
