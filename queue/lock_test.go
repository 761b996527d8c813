package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestLockHasOneOwner(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := NewLocks(connect(t, redistest.Start(t)))
	const key, ttl = "octo/hello#3", time.Minute

	if h, err := l.Lock(ctx, key, "a", ttl); err != nil || h != "a" {
		t.Fatalf("first Lock = %q, %v; want a", h, err)
	}
	if h, err := l.Lock(ctx, key, "b", ttl); err != nil || h != "a" {
		t.Fatalf("Lock by b = %q, %v; want a, the holder", h, err)
	}
	// The owner, resumed after its worker died, takes its own lock back.
	if h, err := l.Lock(ctx, key, "a", ttl); err != nil || h != "a" {
		t.Fatalf("Lock again by a = %q, %v; want a", h, err)
	}
	if held, err := l.Renew(ctx, key, "b", ttl); err != nil || held {
		t.Errorf("Renew by b = %v, %v; want not held", held, err)
	}
	if held, err := l.Renew(ctx, key, "a", ttl); err != nil || !held {
		t.Errorf("Renew by a = %v, %v; want held", held, err)
	}
	// Only the owner frees it.
	if err := l.Unlock(ctx, key, "b"); err != nil {
		t.Fatal(err)
	}
	if h, _ := l.Lock(ctx, key, "b", ttl); h != "a" {
		t.Fatalf("after b's Unlock the holder is %q; want still a", h)
	}
	if err := l.Unlock(ctx, key, "a"); err != nil {
		t.Fatal(err)
	}
	if h, err := l.Lock(ctx, key, "b", ttl); err != nil || h != "b" {
		t.Fatalf("Lock by b after a's Unlock = %q, %v; want b", h, err)
	}
	if h, _ := l.Lock(ctx, "octo/hello#4", "a", ttl); h != "a" {
		t.Errorf("another issue's lock went to %q; want a", h)
	}
}

func TestLockOfADeadOwnerExpires(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := NewLocks(connect(t, redistest.Start(t)))
	const key = "octo/hello#3"
	if _, err := l.Lock(ctx, key, "dead", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		h, err := l.Lock(ctx, key, "next", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if h == "next" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock of a task that stopped renewing it is still %q's", h)
		}
	}
	if held, _ := l.Renew(ctx, key, "dead", time.Minute); held {
		t.Error("the expired owner renewed the next holder's lock")
	}
}

// deferredErr is a handler's "not yet".
type deferredErr struct{}

func (deferredErr) Error() string             { return "waiting behind another task" }
func (deferredErr) RetryAfter() time.Duration { return 10 * time.Millisecond }

func TestDeferredTaskRunsAgainWithoutUsingItsRetries(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	var calls atomic.Int32
	done := make(chan struct{})
	const deferrals = MaxRetry + 2 // more than a failing task may retry
	srv := NewServer(rdb, handlerFunc(func(context.Context, app.Task) error {
		if calls.Add(1) <= deferrals {
			return deferredErr{}
		}
		close(done)
		return nil
	}), ServerConfig{Concurrency: 1})
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Run(ctx) }()
	if _, err := NewClient(rdb).Enqueue(t.Context(), sampleTask("w1", time.Now())); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the task ran %d times and stopped; want %d deferrals then a run", calls.Load(), deferrals)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

func TestDeferralIsFoundInAWrappedError(t *testing.T) {
	t.Parallel()
	if d, ok := deferral(errors.Join(errors.New("fix"), deferredErr{})); !ok || d != 10*time.Millisecond {
		t.Errorf("deferral = %v, %v; want 10ms, true", d, ok)
	}
	if _, ok := deferral(errors.New("GitHub is down")); ok {
		t.Error("an ordinary error was taken for a deferral")
	}
}
