package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/agentbot/agentbot/worker"
)

// fakeSandboxes holds two labelled sandboxes and removes those whose
// worker alive says is dead.
type fakeSandboxes struct{ err error }

func (f *fakeSandboxes) RemoveOrphans(ctx context.Context, alive func(context.Context, string) (bool, error)) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n := 0
	for _, id := range []string{"worker/d/a", "worker/d/b"} {
		if ok, err := alive(ctx, id); err == nil && !ok {
			n++
		}
	}
	return n, nil
}

type fakeTrees struct{ swept int }

func (f *fakeTrees) RemoveOrphans() (int, error) { f.swept++; return 0, nil }

// A sweep judges every sandbox label by the worker's liveness, and removes
// orphaned work trees even when the engine fails.
func TestSweepJudgesByLivenessAndSweepsTreesWhateverTheEngine(t *testing.T) {
	t.Parallel()
	var judged []string
	alive := func(_ context.Context, id string) (bool, error) {
		judged = append(judged, id)
		return id == "worker/d/a", nil
	}
	boxes, trees := &fakeSandboxes{}, &fakeTrees{}
	s := worker.Sweeper{Sandboxes: boxes, Trees: trees, Alive: alive, Log: slog.New(slog.DiscardHandler)}
	s.Sweep(t.Context())
	if len(judged) != 2 || judged[0] != "worker/d/a" || judged[1] != "worker/d/b" || trees.swept != 1 {
		t.Errorf("judged %v, trees swept %d times; want both labels judged and one tree sweep", judged, trees.swept)
	}
	boxes.err = errors.New("engine down")
	s.Sweep(t.Context())
	if trees.swept != 2 {
		t.Errorf("trees swept %d times after a failing engine; want 2", trees.swept)
	}
}
