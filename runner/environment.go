package runner

import (
	"cmp"
	"context"

	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
)

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
	s.MaxEnvBytes = r.cfg.Server.SetupMaxEnvBytes
	s.Refused = func(x egress.Refusal) { refused(ctx, tk, x) }
	s.Log = tk.log
	return s
}
