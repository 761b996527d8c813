package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/text"
)

// Locks keep one task at a time on an issue or pull request: the owning
// task's id holds key for a TTL that its worker renews. The owner gets its
// own lock back, so a task resumed after its worker died does not wait for
// itself. queue.Locks satisfies it.
type Locks interface {
	Lock(ctx context.Context, key, owner string, ttl time.Duration) (holder string, err error)
	Renew(ctx context.Context, key, owner string, ttl time.Duration) (held bool, err error)
	Unlock(ctx context.Context, key, owner string) error
}

const (
	// lockTTL is how long an issue stays locked after its task's worker
	// stops renewing: the wait of the next task after a crash.
	lockTTL = 30 * time.Second
	// waitRetry is how soon a task that waits behind another looks again.
	waitRetry = 2 * time.Second
)

// waiting is the error of a task that waits behind another on its issue.
// It has RetryAfter, so the queue runs the task again after that delay
// without counting a failure or using up a retry.
type waiting struct{ behind string }

func (w *waiting) Error() string             { return "waiting behind task " + w.behind }
func (w *waiting) RetryAfter() time.Duration { return waitRetry }

func lockKey(tk *task) string { return fmt.Sprintf("%s#%d", tk.Repo, tk.Number) }

// hold takes tk's issue lock and renews it until release; the returned
// context ends if the lock is lost, so that two tasks never go on at once.
// release(true) frees the lock, for a task that ended or paused; a task
// that will be tried again keeps it, so that it keeps its place. When
// another task holds the lock, the status comment says so once and a
// *waiting error is returned.
func (r *Runner) hold(ctx context.Context, tk *task) (_ context.Context, release func(free bool), err error) {
	key := lockKey(tk)
	holder, err := r.cfg.Locks.Lock(ctx, key, tk.ID, lockTTL)
	if err != nil {
		return nil, nil, err
	}
	if holder != tk.ID {
		if tk.prog.Waiting != holder {
			if err := tk.rep.state(ctx, app.StateQueued, "waiting behind task "+holder); err != nil {
				return nil, nil, err
			}
			// A CI follow-up may prove a repeat of the one it waits behind:
			// it speaks once it runs.
			if tk.CI == nil {
				if err := tk.rep.say(ctx, text.Waiting(tk.request(), holder)); err != nil {
					return nil, nil, err
				}
			}
			tk.prog.Waiting = holder
			if err := tk.rep.save(ctx); err != nil {
				return nil, nil, err
			}
		}
		return nil, nil, &waiting{behind: holder}
	}
	ctx, cancel := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(lockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			held, err := r.cfg.Locks.Renew(ctx, key, tk.ID, lockTTL)
			switch {
			case err != nil:
				tk.log.Warn("renew the issue's lock", "err", err)
			case !held:
				tk.log.Error("the issue's lock was lost; the task stops and will be tried again")
				cancel()
				return
			}
		}
	}()
	return ctx, func(free bool) {
		cancel()
		<-renewed
		if !free {
			return
		}
		unlockCtx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer done()
		if err := r.cfg.Locks.Unlock(unlockCtx, key, tk.ID); err != nil {
			tk.log.Warn("unlock the issue", "err", err)
		}
	}, nil
}

// held runs work holding tk's issue, reports how tk ended when work ended
// it (*ended) while the issue is still held, and frees the issue unless
// the task will be tried again.
func (r *Runner) held(ctx context.Context, tk *task, work func(context.Context) error) error {
	ctx, release, err := r.hold(ctx, tk)
	if err != nil {
		return err
	}
	err = tk.rep.ended(ctx, work(ctx))
	release(err == nil)
	return err
}
