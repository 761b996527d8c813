package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
)

func TestWorkerLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Renewed every third of it: a renewal must be late by two thirds of
	// it to lapse, and one second was not enough on a machine running two
	// test suites at once.
	const ttl = 4 * time.Second
	l := NewWorkerLeases(connect(t, redistest.Start(t)), ttl)

	if err := l.Hold(ctx, "", "me"); err == nil {
		t.Error("an empty worker id was given a lease")
	}
	if held, err := l.Held(ctx, "w1"); err != nil || held {
		t.Fatalf("Held before Hold = %v, %v", held, err)
	}
	if err := l.Hold(ctx, "w1", "host/1"); err != nil {
		t.Fatal(err)
	}
	held1 := time.Now()
	if err := l.Hold(ctx, "w1", "host/2"); !errors.Is(err, ErrLeaseHeld) {
		t.Errorf("a second holder of w1: %v, want ErrLeaseHeld", err)
	}

	// Kept, the lease outlives its TTL several times over.
	keepCtx, stop := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		l.Keep(keepCtx, "w1", "host/1", func(err error) { t.Errorf("keep: %v", err) })
	}()
	// Not kept, a lease expires after its TTL: its worker is known dead.
	if err := l.Hold(ctx, "w2", "host/2"); err != nil {
		t.Fatal(err)
	}
	// Meanwhile the kept lease is held whenever it is looked at.
	held := func(id string) bool {
		held, err := l.Held(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	w2Expired := false
	deadline := time.Now().Add(10 * ttl)
	for !w2Expired || time.Since(held1) < 3*ttl {
		if !held("w1") {
			t.Errorf("a kept lease lapsed %s after Hold (TTL %s)", time.Since(held1), ttl)
			break
		}
		w2Expired = w2Expired || !held("w2")
		if time.Now().After(deadline) {
			t.Fatal("an unrefreshed lease never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A worker that stops cleanly releases it at once.
	stop()
	<-kept
	if held, err := l.Held(ctx, "w1"); err != nil || held {
		t.Errorf("lease after Keep returned: held %v, %v", held, err)
	}
}

// Every worker on one Redis is told the same deployment, and a worker on
// another Redis another.
func TestDeployment(t *testing.T) {
	t.Parallel()
	a1 := NewWorkerLeases(connect(t, redistest.Start(t)), 0)
	rs := redistest.Start(t)
	b1, b2 := NewWorkerLeases(connect(t, rs), 0), NewWorkerLeases(connect(t, rs), 0)
	var ids []string
	for _, l := range []*WorkerLeases{a1, b1, b2, b1} {
		id, err := l.Deployment(t.Context())
		if err != nil || id == "" || strings.ContainsAny(id, ":/") {
			t.Fatalf("Deployment = %q, %v; want an id without : or /", id, err)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] || ids[1] != ids[2] || ids[2] != ids[3] {
		t.Errorf("deployments %v; want the first apart, the others one", ids)
	}
}
