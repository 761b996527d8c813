package change

import (
	"cmp"
	"context"
	"io/fs"
	"log/slog"

	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// Prepared is what a change's containers run on: the policy's image and
// the prepared environment, when there is one. The loop's sandbox, the
// base checks, the final verification and the reproduction all take their
// spec from it.
type Prepared struct {
	Image string
	Env   *envcache.Env
}

// Spec completes s, a container of the agent phase or of the final
// verification, with the image and a copy-on-write view of the
// environment of its own: new upper directories, so that nothing another
// container wrote over the environment ($HOME's tool configuration, such
// as `go env -w`) is seen by this one.
func (p *Prepared) Spec(s sandbox.Spec) (sandbox.Spec, error) {
	if p == nil {
		return s, nil
	}
	s.Image = p.Image
	if p.Env == nil {
		return s, nil
	}
	ov, err := p.Env.Overlays()
	if err != nil {
		return s, err
	}
	s.Overlays = ov
	return s, nil
}

// Kept reports whether there is an environment: the final verification
// then runs over it instead of running setup again.
func (p *Prepared) Kept() bool { return p != nil && p.Env != nil }

// Release gives the environment back, once the containers are removed; a
// failure is logged to log (slog.Default when nil), since nothing the
// change made depends on it.
func (p *Prepared) Release(log *slog.Logger) {
	if p == nil || p.Env == nil {
		return
	}
	if err := p.Env.Release(); err != nil {
		cmp.Or(log, slog.Default()).Warn("release the prepared environment", "key", p.Env.Key, "err", err)
	}
	p.Env = nil
}

// Prepare is the setup step: it prepares the environment of s over its
// tree before the agent acts. With envs, it reuses the environment envs
// keeps for owner under the key of the setup's inputs, or builds and
// keeps it (Setup.Prepare); detail is then the setup's line for a trace
// or a terminal. Without envs, the policy's setup commands run in the
// tree itself and nothing is kept; detail is "". A setup command that
// fails ends it with a *SetupFailure.
func Prepare(ctx context.Context, s Setup, envs *envcache.Cache, owner envcache.Owner, repo string, tree fs.FS) (_ *Prepared, detail string, err error) {
	p := &Prepared{Image: s.Spec.Image}
	if envs == nil {
		if len(s.Policy.Run) == 0 {
			return p, "", nil
		}
		return p, "", s.Run(ctx)
	}
	if p.Env, detail, err = s.Prepare(ctx, envs, owner, repo, tree); err != nil {
		return nil, "", err
	}
	return p, detail, nil
}
