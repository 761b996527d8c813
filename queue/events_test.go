package queue

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

type eventHandlerFunc func(context.Context, app.OutcomeEvent) error

func (f eventHandlerFunc) ProcessEvent(ctx context.Context, e app.OutcomeEvent) error {
	return f(ctx, e)
}

// TestEventsReachTheirOwnServer checks that an outcome event goes to the
// event server and never to the task server, and that the same event
// queued twice is queued once.
func TestEventsReachTheirOwnServer(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	got := make(chan app.OutcomeEvent, 2)
	events := NewEventServer(rdb, eventHandlerFunc(func(_ context.Context, e app.OutcomeEvent) error {
		got <- e
		return nil
	}), ServerConfig{Concurrency: 1})
	tasks := NewServer(rdb, handlerFunc(func(_ context.Context, task app.Task) error {
		t.Errorf("the task server got %+v", task)
		return nil
	}), ServerConfig{Concurrency: 1})

	e := app.OutcomeEvent{
		ID: "e1", Delivery: "d1", Event: "pull_request", InstallationID: 3, Repo: "o/r", CloneURL: "http://127.0.0.1:1/o/r.git",
		Merge:      &app.Merge{PR: 4, Commit: "c4295bd74fb0f4fda03689c3df3f2803b658fd85", Base: "main"},
		Reverts:    []app.Revert{{Repo: "o/r", PR: 4, RevertsPRs: []int{2}}},
		ReceivedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
	c := NewClient(rdb)
	for i, want := range []bool{false, true} {
		dup, err := c.EnqueueEvent(t.Context(), e)
		if err != nil || dup != want {
			t.Fatalf("enqueue #%d: duplicate %v, %v; want %v", i+1, dup, err, want)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{events.Run, tasks.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	select {
	case g := <-got:
		if !reflect.DeepEqual(g, e) {
			t.Errorf("handler got %+v; want %+v", g, e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the event never reached its handler")
	}
	cancel()
	wg.Wait()
	if len(got) != 0 {
		t.Errorf("the event was handled again: %+v", <-got)
	}
}

// TestSetMergedOnce records the same merge from many workers at once:
// exactly one of them sees it first.
func TestSetMergedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewOutcomes(connect(t, redistest.Start(t)))
	if err := s.Save(ctx, app.TaskOutcome{Task: "t1", Repo: "o/api", PR: 12, Base: "b", Pushed: "p"}); err != nil {
		t.Fatal(err)
	}
	const workers = 8
	var firsts atomic.Int32
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			survival := &app.Survival{Kept: i, Total: 10}
			o, first, err := s.SetMerged(ctx, "t1", "c4295bd", survival)
			if err != nil {
				t.Error(err)
				return
			}
			if !o.Merged {
				t.Errorf("worker %d: outcome not merged: %+v", i, o)
			}
			if first {
				firsts.Add(1)
			}
		})
	}
	wg.Wait()
	if n := firsts.Load(); n != 1 {
		t.Fatalf("%d workers recorded the merge first, want 1", n)
	}
	o, err := s.Outcome(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if !o.Merged || o.MergeCommit != "c4295bd" || o.Survival == nil || o.Survival.Total != 10 || o.Base != "b" || o.Pushed != "p" || o.PR != 12 {
		t.Errorf("stored outcome %+v", o)
	}
	if _, _, err := s.SetMerged(ctx, "nope", "c4295bd", nil); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("merge of a task without outcome: %v, want not found", err)
	}
}
