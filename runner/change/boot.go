package change

import (
	"context"
	"fmt"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// booting is the agent's sandbox while the engine creates and starts it,
// which takes most of a second: the loop does not wait for it, because the
// model needs a sandbox only once it runs a command or the checks, and its
// first request (often its slowest) goes out meanwhile.
type booting struct {
	done chan struct{}
	box  sandbox.Box
	err  error
}

// boot starts the sandbox of spec in the background. When the start fails it
// calls fail, which ends the loop, so that a command waiting for the sandbox
// is cut short (and runs again when the task is retried) instead of being
// reported to the model as the command's failure.
func boot(ctx context.Context, d sandbox.Sandboxes, spec sandbox.Spec, fail context.CancelFunc) *booting {
	b := &booting{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		if b.box, b.err = d.Start(ctx, spec); b.err != nil {
			b.err = fmt.Errorf("start the sandbox: %w", b.err)
			fail()
		}
	}()
	return b
}

// Run runs cmd once the sandbox is up.
func (b *booting) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
	select {
	case <-b.done:
	case <-ctx.Done():
		return sandbox.Result{}, ctx.Err()
	}
	if b.err != nil {
		return sandbox.Result{}, b.err
	}
	return b.box.Run(ctx, cmd)
}

// Err waits for the start to end and returns its error.
func (b *booting) Err() error {
	<-b.done
	return b.err
}

// Close waits for the start to end and removes the container, if there is
// one.
func (b *booting) Close(ctx context.Context) error {
	if b.Err() != nil {
		return nil
	}
	return b.box.Close(ctx)
}
