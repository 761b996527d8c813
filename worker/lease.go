package worker

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/agentbot/agentbot/queue"
)

// IDPrefix starts the id of every worker that holds a lease.
const IDPrefix = "worker/"

// Lease is a worker's lease, held and kept until Release.
type Lease struct {
	// ID names the worker: "worker/DEPLOYMENT/HOST/PID/RANDOM".
	ID         string
	deployment string
	leases     *queue.WorkerLeases
	release    context.CancelFunc
	kept       chan struct{}
}

// Hold names a new worker of the deployment leases belong to, holds its
// lease and keeps it (logging a failed renewal) until Release.
func Hold(ctx context.Context, leases *queue.WorkerLeases, log *slog.Logger) (*Lease, error) {
	deployment, err := leases.Deployment(ctx)
	if err != nil {
		return nil, err
	}
	l := &Lease{ID: NewID(deployment), deployment: deployment, leases: leases, kept: make(chan struct{})}
	host, _ := os.Hostname()
	holder := host + " pid " + strconv.Itoa(os.Getpid())
	if err := leases.Hold(ctx, l.ID, holder); err != nil {
		return nil, err
	}
	// Kept past ctx: the lease is released last, once the worker's
	// sandboxes are closed.
	keepCtx, release := context.WithCancel(context.WithoutCancel(ctx))
	l.release = release
	go func() {
		defer close(l.kept)
		leases.Keep(keepCtx, l.ID, holder, func(err error) { log.Warn("worker lease", "err", err) })
	}()
	return l, nil
}

// Release stops keeping the lease, which then expires.
func (l *Lease) Release() {
	l.release()
	<-l.kept
}

// Alive tells whether the worker that labelled a sandbox may still run.
func (l *Lease) Alive(ctx context.Context, workerID string) (bool, error) {
	return Alive(l.ID, l.deployment, l.leases)(ctx, workerID)
}

// NewID names a worker of deployment uniquely:
// "worker/DEPLOYMENT/HOST/PID/RANDOM". The host and pid are for people;
// the random part keeps two workers of one pid (in two containers of one
// machine, or two in one process) apart.
func NewID(deployment string) string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s%s/%s/%d/%x", IDPrefix, deployment, host, os.Getpid(), b)
}

// Alive returns whether the worker that labelled a sandbox may still run,
// as self of deployment sees it: itself, any user of the engine that is
// not a leased worker, a worker of another deployment (its leases are in
// another Redis), and a worker whose lease is still in Redis. Only a
// worker of this deployment whose lease is gone is known dead; the
// liveness of a pid on this host proves nothing (another pid namespace, a
// reused pid).
func Alive(self, deployment string, leases *queue.WorkerLeases) func(context.Context, string) (bool, error) {
	ours := IDPrefix + deployment + "/"
	return func(ctx context.Context, id string) (bool, error) {
		if id == self || !strings.HasPrefix(id, ours) {
			return true, nil
		}
		return leases.Held(ctx, id)
	}
}
