package change

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// Prompts renders the system prompt of policy p and the task message of
// td over the tree, whose README and agent instructions are its context;
// reproduce says that the change must come with a test that proves it.
// Every loop — the worker's, agentbot run's and agentbot eval's — opens
// with them.
func Prompts(tree fs.FS, p policy.Policy, reproduce bool, td prompts.TaskData) (system, text string, err error) {
	repo, err := prompts.LoadRepo(tree)
	if err != nil {
		return "", "", fmt.Errorf("read the repository for the prompt: %w", err)
	}
	sd := prompts.SystemData{Checks: p.Checks, Paths: p.Paths, Limits: p.Limits, ShellOff: p.Tools.Shell.Policy == policy.ApprovalOff,
		Reproduce: reproduce}
	if p.Tools.Shell.Policy == policy.ApprovalAllowlist {
		sd.ShellAllow = p.Tools.Shell.Allow
	}
	if system, err = prompts.System(sd); err != nil {
		return "", "", err
	}
	td.Context = repo
	text, err = prompts.Task(td)
	return system, text, err
}

// Env completes a sandbox's spec with the environment it runs on: a
// *Prepared (the policy's image and a view of the prepared environment of
// the sandbox's own), or an evaluation's seeded $HOME.
type Env interface {
	Spec(sandbox.Spec) (sandbox.Spec, error)
}

// Tree is the tree a loop works on: a workspace, or an evaluation's copy
// of a snapshot.
type Tree interface {
	agent.Workspace
	// Dir is the tree's path on the host, which the sandbox mounts.
	Dir() string
}

// Loop is the loop step: the agent in a network-less sandbox over a tree,
// driven to its end.
type Loop struct {
	Sandbox sandbox.Sandboxes
	Policy  policy.Policy
	Model   agent.Model
	// Fast digests old context; nil means Model.
	Fast agent.Model
	// Env, when set, completes the sandbox's spec with what it runs on.
	Env Env
	// System and Task are the prompts (Prompts).
	System, Task string
	Hooks
	Logger *slog.Logger
}

// Hooks are what the caller of a loop adds to it: where its state is
// kept, what it sees, what bounds it from outside and what may stop it.
// A worker sets them all; agentbot run and agentbot eval watch it only.
type Hooks struct {
	// Store keeps the loop's state after every step; nil keeps it in
	// memory, where nothing resumes it. A loop whose state is kept resumes
	// from it.
	Store agent.StateStore
	// Images go with the task message (agent.Config.Images).
	Images []llm.Image
	// Observe and ObserveModel, when set, see every step and every model
	// call (agent.Config).
	Observe      func(agent.Event)
	ObserveModel func(agent.ModelCall)
	// Spent, Budget and Steer are agent.Config's: what the loops sharing
	// cost_usd spent, the budgets the loop does not own, and the notes
	// people send it.
	Spent  func() float64
	Budget func(ctx context.Context, used llm.Usage) (reason string, err error)
	Steer  agent.Steer
	// Decision, when set, is the approver's decision on the call that a
	// loop resumed while it awaits approval waits on; nil while there is
	// none, and the loop then runs on, which pauses it again.
	Decision func(ctx context.Context, st *agent.State) (*Decision, error)
	// Stopped, when set, is polled while the loop runs: the login that
	// asked it to stop, "" while nobody did. A stop ends the loop with a
	// *Stopped.
	Stopped func(ctx context.Context) (by string, err error)
	// Ended, when set, is told the loop's state and error once it returns
	// and returns the error to go on with (a worker records the loop's
	// spending there).
	Ended func(ctx context.Context, st *agent.State, err error) error
}

// Decision is an approver's answer to the call a paused loop waits on.
type Decision struct {
	Approve bool
	By      string
}

// Stopped is a loop that someone asked to stop: State is the loop's state
// when it noticed, saved before the sandbox was removed.
type Stopped struct {
	By    string
	State *agent.State
}

func (s *Stopped) Error() string { return "stopped by " + s.By }

// stopPoll is how often a running loop looks for a stop: well within the
// 10 s in which a stopped task's sandbox must be gone.
const stopPoll = 500 * time.Millisecond

// Run starts a network-less sandbox over the tree, drives the loop to its
// end and removes the sandbox. The state is the loop's final one, or, with
// an error, as far as it got; a stop is a *Stopped.
//
// The sandbox starts in the background (boot): the model's first request
// goes out meanwhile. A sandbox that does not start is an outage, which
// Run returns as its error, the loop's state saved for a retry.
func (l Loop) Run(ctx context.Context, id string, tree Tree) (*agent.State, error) {
	spec := SandboxSpec(l.Policy, id, tree.Dir())
	if l.Env != nil {
		var err error
		if spec, err = l.Env.Spec(spec); err != nil {
			return nil, fmt.Errorf("the sandbox's environment: %w", err)
		}
	}
	log := cmp.Or(l.Logger, slog.Default())
	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	box := boot(ctx, l.Sandbox, spec, cancel)
	defer func() {
		if err := box.Close(context.WithoutCancel(ctx)); err != nil {
			log.Warn("remove sandbox", "task", id, "err", err)
		}
	}()
	store := l.Store
	if store == nil {
		store = &memStore{}
	}
	a, err := agent.New(ctx, agent.Config{
		TaskID: id, Policy: l.Policy, Model: l.Model, Fast: l.Fast, Runner: box, Workspace: tree, Store: store,
		System: l.System, Task: l.Task, Images: l.Images, Observe: l.Observe, ObserveModel: l.ObserveModel,
		Spent: l.Spent, Budget: l.Budget, Steer: l.Steer, Logger: l.Logger,
	})
	if err != nil {
		return nil, err
	}
	// A resumed loop may have applied its saved diff as the host's user.
	if err := sandbox.ShareTree(tree.Dir()); err != nil {
		return nil, fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	var d *Decision
	if l.Decision != nil {
		if d, err = l.Decision(ctx, a.State()); err != nil {
			return nil, err
		}
	}
	by := watchStop(loopCtx, l.Stopped, cancel)
	var st *agent.State
	if d != nil {
		log.Info("resuming on a decision", "task", id, "approve", d.Approve, "by", d.By)
		st, err = a.Decide(loopCtx, d.Approve, d.By)
	} else {
		st, err = a.Run(loopCtx)
	}
	if l.Ended != nil {
		err = l.Ended(ctx, a.State(), err)
	}
	if err != nil && ctx.Err() == nil && loopCtx.Err() != nil && box.Err() != nil {
		// Cut short because the sandbox did not start: an outage, tried
		// again from the saved state.
		return nil, box.Err()
	}
	if err != nil && ctx.Err() == nil && by() != "" {
		// The loop saved its state before it noticed; the deferred Close
		// removes the sandbox before the stop is reported.
		return a.State(), &Stopped{By: by(), State: a.State()}
	}
	return st, err
}

// watchStop cancels a running loop once stopped says someone asked for
// it, and returns who did ("" while nobody did, or without stopped).
func watchStop(ctx context.Context, stopped func(context.Context) (string, error), cancel context.CancelFunc) (by func() string) {
	var who atomic.Pointer[string]
	if stopped != nil {
		go func() {
			t := time.NewTicker(stopPoll)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				login, err := stopped(ctx)
				if err == nil && login != "" {
					who.Store(&login)
					cancel()
					return
				}
			}
		}()
	}
	return func() string {
		if p := who.Load(); p != nil {
			return *p
		}
		return ""
	}
}

// memStore keeps the state of one loop in memory: nothing resumes it on
// another worker.
type memStore struct {
	mu    sync.Mutex
	state []byte
}

func (m *memStore) SaveState(_ context.Context, _ string, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = state
	return nil
}

func (m *memStore) LoadState(context.Context, string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, nil
}

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
