package runner

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/workspace"
)

// setupProxy is the Go module proxy of a setup with network: the images
// turn it off, since the agent phase has no network.
const setupProxy = "GOPROXY=https://proxy.golang.org,direct"

// prepared is what a task's containers run on: the policy's image and the
// prepared environment, when the worker keeps them.
type prepared struct {
	image string
	env   *envcache.Env
}

// spec completes s, a container of the agent phase or of the final
// verification, with the image and a copy-on-write view of the
// environment.
func (p *prepared) spec(s docker.Spec) (docker.Spec, error) {
	if p == nil {
		return s, nil
	}
	s.Image = p.image
	if p.env == nil {
		return s, nil
	}
	ov, err := p.env.Overlays()
	if err != nil {
		return s, err
	}
	s.Overlays = ov
	return s, nil
}

// kept reports whether there is an environment: the final verification
// then runs over it instead of running setup again.
func (p *prepared) kept() bool { return p != nil && p.env != nil }

// release gives the environment back, once the containers are removed.
func (p *prepared) release(tk *task) {
	if p == nil || p.env == nil {
		return
	}
	if err := p.env.Release(); err != nil {
		tk.log.Warn("release the prepared environment", "key", p.env.Key, "err", err)
	}
	p.env = nil
}

// prepareEnv runs the policy's setup, or reuses the environment an earlier
// task's setup left under the same key, before the agent acts.
//
// A pull request's head is not the default branch the policy comes from:
// its lock files and whatever setup fetches for them were written by
// someone other than the repository's maintainers (the model, for the
// agent's own pull requests). Its setup runs without network, and what it
// builds is the task's alone, never kept for another.
func (r *Runner) prepareEnv(ctx context.Context, tk *task, ws *workspace.Workspace) (*prepared, error) {
	s := tk.policy.Policy.Setup
	spec := r.setupSpec(tk, ws.Dir(), tk.ID+"-setup")
	p := &prepared{image: spec.Image}
	if r.cfg.Envs == nil {
		if len(s.Run) == 0 {
			return p, nil
		}
		defer tk.rep.phase(ctx, "setup")
		return p, r.runSetupSpec(ctx, tk, spec, s.Run, s.Timeout)
	}
	imageID, err := r.cfg.Sandbox.ImageID(ctx, p.image)
	if err != nil {
		return nil, err
	}
	key, files, err := envcache.Key(envcache.KeyInput{ImageID: imageID, Setup: s.Run, Network: s.Network, Patterns: s.CacheKeyFiles}, ws.Root().FS())
	if err != nil {
		return nil, app.Errorf(app.EPolicy, "The prepared environment's key cannot be made: %v", err)
	}
	if p.env, err = r.cfg.Envs.Acquire(key); err != nil {
		return nil, err
	}
	if p.env != nil {
		tk.log.Info("prepared environment reused", "key", key)
		tk.rep.setupPhase(ctx, "setup: cached "+key)
		return p, nil
	}
	trusted := tk.issue.Pull == nil
	spec.Network = s.Network && trusted
	b, err := r.cfg.Envs.Build(envcache.Entry{Key: key, Repo: tk.Repo, Image: p.image, Files: files}, ws.Dir())
	if err != nil {
		return nil, err
	}
	spec.Home = b.Home()
	if spec.Network {
		spec.Env = append(spec.Env, setupProxy)
	}
	if err := r.runSetupSpec(ctx, tk, spec, append([]string{envcache.SeedHome}, s.Run...), s.Timeout); err != nil {
		b.Abort()
		return nil, err
	}
	detail := "setup: built " + key
	if trusted {
		p.env, err = b.Publish()
	} else {
		p.env, err = b.Private()
		detail = "setup: private " + key + " (a pull request's head: no network, not kept)"
	}
	if err != nil {
		return nil, err
	}
	tk.log.Info("prepared environment built", "key", key, "size", p.env.Size, "dirs", p.env.Dirs, "kept", trusted)
	tk.rep.setupPhase(ctx, detail)
	return p, nil
}

// runSetup runs the policy's setup commands over the tree at dir in a
// container of its own, named id, keeping nothing but what they write in
// the tree: the setup of a worker without an environment cache.
func (r *Runner) runSetup(ctx context.Context, tk *task, dir, id string) error {
	s := tk.policy.Policy.Setup
	return r.runSetupSpec(ctx, tk, r.setupSpec(tk, dir, id), s.Run, s.Timeout)
}

// setupSpec is the container, named id, in which the policy's setup runs
// over the tree at dir: the policy's image and limits, with network when
// the policy asks for it.
func (r *Runner) setupSpec(tk *task, dir, id string) docker.Spec {
	p := tk.policy.Policy
	return docker.Spec{TaskID: id, WorkTree: dir, Image: cmp.Or(p.Sandbox.Image, r.cfg.Sandbox.Image()),
		CPUs: p.Sandbox.CPUs, Memory: p.Sandbox.Memory, Pids: p.Sandbox.Pids, MaxTreeGrowth: p.Sandbox.Disk, Network: p.Setup.Network}
}

// runSetupSpec runs lines in order in a container of spec, whose network,
// if it asks for one, reaches only the server's setup.allow_hosts through
// the egress proxy; the first line that fails ends the task with a
// setupFailure.
func (r *Runner) runSetupSpec(ctx context.Context, tk *task, spec docker.Spec, lines []string, timeout time.Duration) error {
	closeEgress, err := r.setupEgress(ctx, tk, &spec)
	if err != nil {
		return err
	}
	defer closeEgress()
	box, err := r.cfg.Sandbox.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("start the setup sandbox: %w", err)
	}
	defer box.Close(ctx)
	for _, line := range lines {
		res, err := box.Run(ctx, sandbox.Cmd{Shell: line, Timeout: timeout})
		if err != nil {
			return fmt.Errorf("setup %q: %w", line, err)
		}
		if res.ExitCode != 0 || res.TimedOut {
			return &setupFailure{run: line, exit: res.ExitCode, timedOut: res.TimedOut, output: string(res.Stderr) + string(res.Stdout)}
		}
	}
	return nil
}
