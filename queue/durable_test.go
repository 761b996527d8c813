package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
)

func TestMarkSeenWaitsForReplicas(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	rdb := connect(t, primary)

	// A wait that ends as soon as the replica acknowledges: long enough
	// for a busy machine, and costing nothing when it is not.
	one, err := NewClient(rdb).WithMinReplicas(1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	task := sampleTask("t1", time.Now())
	if _, err := one.Enqueue(ctx, task); err != nil {
		t.Fatal(err)
	}
	if already, err := one.MarkSeen(ctx, task.Delivery); err != nil || already {
		t.Fatalf("MarkSeen with a replica in sync = %v, %v; want fresh, no error", already, err)
	}
	// What the delivery wrote is on the replica by the time MarkSeen returns.
	rr := connect(t, replica)
	if n, err := rr.Exists(ctx, deliveryKey(task.Delivery), taskKey(task.ID)).Result(); err != nil || n != 2 {
		t.Errorf("the replica holds %d of the delivery mark and the task record (%v); want both", n, err)
	}
	// A redelivery answers "already" and waits again.
	if already, err := one.MarkSeen(ctx, task.Delivery); err != nil || !already {
		t.Errorf("second MarkSeen = %v, %v; want already seen", already, err)
	}

	two, err := NewClient(rdb).WithMinReplicas(2, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.MarkSeen(ctx, "d-2"); !errors.Is(err, ErrNotReplicated) {
		t.Errorf("MarkSeen waiting for 2 replicas of 1 = %v; want ErrNotReplicated", err)
	}
	replica.Stop()
	short, err := NewClient(rdb).WithMinReplicas(1, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.MarkSeen(ctx, "d-3"); !errors.Is(err, ErrNotReplicated) {
		t.Errorf("MarkSeen with the replica gone = %v; want ErrNotReplicated", err)
	}
	// Without a replica requirement nothing is waited for.
	if _, err := NewClient(rdb).MarkSeen(ctx, "d-4"); err != nil {
		t.Errorf("MarkSeen with no replica required = %v", err)
	}
}
