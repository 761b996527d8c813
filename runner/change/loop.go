package change

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// Prompts renders the system prompt of policy p and the task message of
// td over the tree, whose README and agent instructions are its context;
// reproduce says that the change must come with a test that proves it.
// Every loop — the worker's, agentbot run's and agentbot eval's — opens
// with them.
func Prompts(tree fs.FS, p app.Policy, reproduce bool, td prompts.TaskData) (system, text string, err error) {
	repo, err := prompts.LoadRepo(tree)
	if err != nil {
		return "", "", fmt.Errorf("read the repository for the prompt: %w", err)
	}
	sd := prompts.SystemData{Checks: p.Checks, Paths: p.Paths, Limits: p.Limits, ShellOff: p.Tools.Shell.Policy == app.ApprovalOff,
		Reproduce: reproduce}
	if p.Tools.Shell.Policy == app.ApprovalAllowlist {
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
	Policy  app.Policy
	Model   agent.Model
	// Fast digests old context; nil means Model.
	Fast agent.Model
	// Store keeps the loop's state after every step; nil keeps it in
	// memory, where nothing resumes it.
	Store agent.StateStore
	// Env, when set, completes the sandbox's spec with what it runs on.
	Env Env
	// System and Task are the prompts (Prompts).
	System, Task string
	// Observe, when set, sees every step (agent.Config.Observe).
	Observe func(agent.Event)
	Logger  *slog.Logger
}

// Run starts a network-less sandbox over the tree, drives the loop to its
// end and removes the sandbox. The state is the loop's final one, or, with
// an error, as far as it got.
func (l Loop) Run(ctx context.Context, id string, tree Tree) (*agent.State, error) {
	spec := SandboxSpec(l.Policy, id, tree.Dir())
	if l.Env != nil {
		var err error
		if spec, err = l.Env.Spec(spec); err != nil {
			return nil, fmt.Errorf("the sandbox's environment: %w", err)
		}
	}
	box, err := l.Sandbox.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start the sandbox: %w", err)
	}
	log := cmp.Or(l.Logger, slog.Default())
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
		System: l.System, Task: l.Task, Observe: l.Observe, Logger: l.Logger,
	})
	if err != nil {
		return nil, err
	}
	return a.Run(ctx)
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
