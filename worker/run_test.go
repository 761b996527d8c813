package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/outcome"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
	"github.com/agentbot/agentbot/worker"
)

// engine is a sandbox engine that starts nothing: it records the worker's
// sweeps and its closing.
type engine struct {
	sandbox.Sandboxes

	mu     sync.Mutex
	sweeps int
	closed bool
}

func (e *engine) Image() string { return "agentbot-sandbox:test" }

func (e *engine) RemoveOrphans(context.Context, func(context.Context, string) (bool, error)) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sweeps++
	return 0, nil
}

func (e *engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}

// A worker holds its lease before it opens its sandboxes, under the
// lease's id, so that the other workers' sweeps know whose sandboxes they
// are; it sweeps as it starts, and closes its sandboxes when it stops.
func TestWorkerOpensItsSandboxesUnderItsLease(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	leases, deployment := deploymentLeases(t, rdb)
	store := queue.NewStore(rdb)
	var eng *engine
	var id string
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Config{
			Redis: rdb,
			Runner: runner.Config{
				GitHub: struct{ runner.GitHub }{}, Model: struct{ agent.Model }{},
				Store: store, Tasks: worker.Tasks{Store: store}, Pulls: store, Locks: queue.NewLocks(rdb),
				Bot: workspace.Signature{Name: "agentbot[bot]", Email: "agentbot[bot]@users.noreply.github.com"},
			},
			Sandboxes: func(ctx context.Context, workerID string) (worker.Driver, error) {
				id = workerID
				eng = &engine{}
				return eng, nil
			},
			DataDir: t.TempDir(), Tokens: struct{ outcome.Tokens }{},
			Concurrency: 1, OrphanSweep: 1<<63 - 1,
			Log: slog.New(slog.DiscardHandler), Started: func() { close(started) },
		})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the worker did not start: %v", err)
	}
	if !strings.HasPrefix(id, worker.IDPrefix+deployment+"/") {
		t.Errorf("sandboxes opened as %q; want the id of a worker of deployment %s", id, deployment)
	}
	if held, err := leases.Held(t.Context(), id); err != nil || !held {
		t.Errorf("the lease of a running worker: held %t, %v", held, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the worker stopped with %v", err)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if eng.sweeps != 1 {
		t.Errorf("%d sweeps at start; want 1", eng.sweeps)
	}
	if !eng.closed {
		t.Error("the stopped worker left its sandboxes open")
	}
}

// The parts of one process stop together: when one ends, the others are
// cancelled, and every part's error is returned.
func TestTogetherStopsThePartsTogether(t *testing.T) {
	t.Parallel()
	failed := errors.New("the intake's port is taken")
	var stopped error
	err := worker.Together(t.Context(),
		func(context.Context) error { return failed },
		func(ctx context.Context) error {
			<-ctx.Done()
			stopped = errors.New("the queue stopped")
			return stopped
		})
	if !errors.Is(err, failed) || !errors.Is(err, stopped) {
		t.Errorf("Together returned %v; want both parts' errors", err)
	}
}
