package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// DefaultCheckTimeout bounds each check given as a bare command.
const DefaultCheckTimeout = 15 * time.Minute

// LoadPolicy is the policy of the local checkout at dir: its
// .github/agent.yml over the defaults when it has one, with checks, when
// given, replacing the file's checks (named check1, check2, …). A policy
// without checks is refused: nothing would say when the task is done.
func LoadPolicy(dir string, checks []string) (app.Policy, error) {
	return LoadPolicyFor(dir, app.DefaultServerConfig(), checks)
}

// LoadPolicyFor is LoadPolicy under server's bounds and policy layer, as
// "agentbot run --config" reads them.
func LoadPolicyFor(dir string, server app.ServerConfig, checks []string) (app.Policy, error) {
	var layers []*app.RawPolicy
	file := filepath.Join(dir, filepath.FromSlash(app.PolicyPath))
	data, err := os.ReadFile(file)
	switch {
	case err == nil:
		raw, err := app.ParsePolicy(file, data)
		if err != nil {
			return app.Policy{}, errors.New(app.ErrorMessage(err))
		}
		layers = append(layers, raw)
	case !errors.Is(err, fs.ErrNotExist):
		return app.Policy{}, err
	}
	p, err := app.BuildPolicy(server, layers...)
	if err != nil {
		return app.Policy{}, errors.New(app.ErrorMessage(err))
	}
	if len(checks) > 0 {
		p.Checks = nil
		for i, c := range checks {
			p.Checks = append(p.Checks, app.Check{Name: fmt.Sprintf("check%d", i+1), Run: c, Timeout: DefaultCheckTimeout})
		}
	}
	// The refusal suggests the checks of the checkout's kind (go.mod…).
	has := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	if err := p.RequireChecksIn(has); err != nil {
		return app.Policy{}, &NoChecksError{Message: app.ErrorMessage(err)}
	}
	return p, nil
}

// NoChecksError is LoadPolicy's error for a policy without checks, so that
// a caller can add how it takes checks of its own.
type NoChecksError struct{ Message string }

func (e *NoChecksError) Error() string { return e.Message }

// Local runs the agent loop on a tree, without GitHub: agentbot run does it
// once on a checkout, an evaluation once per task and run.
type Local struct {
	Driver sandbox.Sandboxes
	Policy app.Policy
	Model  agent.Model
	// Repo names the repository in the task prompt.
	Repo string
	// Title and Body are the issue's; Instructions the command's own words.
	Title, Body, Instructions string
	// Observe, when set, sees every step (agent.Config.Observe).
	Observe func(agent.Event)
	Logger  *slog.Logger
	// Env, when set, completes the sandbox's spec with what it runs on.
	Env Env
}

// Env completes a sandbox's spec with the environment it runs on: a
// *runner.Prepared (the policy's image and a view of the prepared
// environment of the sandbox's own), or an evaluation's seeded $HOME.
type Env interface {
	Spec(sandbox.Spec) (sandbox.Spec, error)
}

// LocalTree is the tree a Local loop works on: a Tree, or agentbot run's
// workspace.
type LocalTree interface {
	agent.Workspace
	// Dir is the tree's path on the host, which the sandbox mounts.
	Dir() string
}

// Run starts a network-less sandbox over the tree, drives the loop to its
// end and removes the sandbox. The state is the loop's final one, or, with
// an error, as far as it got.
func (l Local) Run(ctx context.Context, taskID string, tree LocalTree) (*agent.State, error) {
	p := l.Policy
	spec := sandbox.Spec{TaskID: taskID, WorkTree: tree.Dir(), CPUs: p.Sandbox.CPUs, Memory: p.Sandbox.Memory, Pids: p.Sandbox.Pids, MaxTreeGrowth: p.Sandbox.Disk}
	if l.Env != nil {
		var err error
		if spec, err = l.Env.Spec(spec); err != nil {
			return nil, fmt.Errorf("the sandbox's environment: %w", err)
		}
	}
	box, err := l.Driver.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start the sandbox: %w", err)
	}
	defer func() {
		if err := box.Close(context.WithoutCancel(ctx)); err != nil {
			l.logger().Warn("remove sandbox", "task", taskID, "err", err)
		}
	}()
	system, task, err := l.prompts(tree)
	if err != nil {
		return nil, err
	}
	a, err := agent.New(ctx, agent.Config{
		TaskID: taskID, Policy: p, Model: l.Model, Runner: box, Workspace: tree, Store: &memStore{},
		System: system, Task: task, Observe: l.Observe, Logger: l.Logger,
	})
	if err != nil {
		return nil, err
	}
	return a.Run(ctx)
}

func (l Local) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.Default()
	}
	return l.Logger
}

// prompts are the worker's, for a task on no pull request.
func (l Local) prompts(tree LocalTree) (system, task string, err error) {
	p := l.Policy
	return runner.Prompts(tree.Root().FS(), p, p.ReproduceFor(false) != app.ReproduceOff,
		prompts.TaskData{Repo: l.Repo, Title: l.Title, Body: l.Body, Instructions: l.Instructions})
}

// memStore keeps the state of one local task in memory: nothing resumes it
// on another worker.
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
