package runner

import (
	"cmp"
	"context"

	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/workspace"
)

// prepareEnv runs the policy's setup, or reuses the environment an earlier
// task's setup left under the same key, before the agent acts
// (change.Prepare).
//
// A pull request's head is not the default branch the policy comes from:
// its lock files and whatever setup fetches for them were written by
// someone other than the repository's maintainers (the model, for the
// agent's own pull requests). Its setup runs without network, and what it
// builds is the task's alone, never kept for another.
func (r *Runner) prepareEnv(ctx context.Context, tk *task, ws *workspace.Workspace) (*Prepared, error) {
	s := r.setupOf(ctx, tk, ws.Dir(), tk.ID+"-setup")
	// The repository's id, from the API, not its name: another repository
	// can take a name, never an id.
	owner := envcache.GitHubOwner(tk.InstallationID, tk.policy.Repo.ID)
	p, detail, err := change.Prepare(ctx, s, r.cfg.Envs, owner, tk.Repo, ws.Root().FS())
	if r.cfg.Envs == nil {
		if len(s.Policy.Run) > 0 {
			tk.rep.phase(ctx, "setup")
		}
		return p, err
	}
	if err != nil {
		return nil, err
	}
	if p.Env.Cached {
		tk.log.Info("prepared environment reused", "key", p.Env.Key)
	} else {
		tk.log.Info("prepared environment built", "key", p.Env.Key, "size", p.Env.Size, "dirs", p.Env.Dirs, "kept", !s.Private)
	}
	tk.rep.setupPhase(ctx, detail)
	return p, nil
}

// runSetup runs the policy's setup commands over the tree at dir in a
// container of its own, named id, keeping nothing but what they write in
// the tree: the setup of a worker without an environment cache.
func (r *Runner) runSetup(ctx context.Context, tk *task, dir, id string) error {
	return r.setupOf(ctx, tk, dir, id).Run(ctx)
}

// setupOf is the policy's setup over the tree at dir in a container named
// id: the policy's image and limits, with network when the policy asks for
// it, through the egress proxy to the server's setup.allow_hosts, and what
// the proxy refused reported as the task's. Every tree of a task on a pull
// request comes from its head, so its setup is private.
func (r *Runner) setupOf(ctx context.Context, tk *task, dir, id string) Setup {
	p := tk.policy.Policy
	s := change.NewSetup(r.cfg.Sandbox, p, id, dir, cmp.Or(p.Sandbox.Image, r.cfg.Sandbox.Image()))
	s.Private = tk.issue.Pull != nil
	s.AllowHosts = r.cfg.Server.SetupAllowHosts
	s.Registries = r.cfg.Server.SetupRegistries
	s.InternalRanges = r.cfg.Server.SetupInternalRanges
	s.CABundle = r.cfg.SetupCABundle
	s.Secrets = r.cfg.SetupSecrets
	s.MaxEnvBytes = r.cfg.Server.SetupMaxEnvBytes
	s.Refused = func(x egress.Refusal) { refused(ctx, tk, x) }
	s.Reached = func(x egress.Reach) { reached(tk, x) }
	s.Log = tk.log
	return s
}
