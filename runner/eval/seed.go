package eval

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// seedTimeout bounds copying the image's seed of $HOME.
const seedTimeout = 5 * time.Minute

// seedOwner names the owner of the seeds of $HOME evaluations keep: no
// repository's, and no local checkout's either.
const seedOwner = "agentbot eval: the image's seed of $HOME"

// seededHome is the image's seed of $HOME (envcache.SeedHome: the Go
// image's build cache of the standard library), copied out once and seen
// by every sandbox of every run copy-on-write, as a worker's tasks see
// their prepared environment: a run's first build is as warm as a
// worker's, and no run, loop or hidden tests, sees what another wrote.
type seededHome struct {
	env *envcache.Env
	dir string
}

// seedHome returns the seed of drv's image: the one envs keeps, copied
// into envs when it holds none yet; without envs, a private copy under a
// temporary directory, removed at close.
func seedHome(ctx context.Context, drv sandbox.Sandboxes, envs *envcache.Cache, log *slog.Logger) (_ *seededHome, err error) {
	dir, err := os.MkdirTemp("", "agentbot-eval-home-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	cache := envs
	if cache == nil {
		if cache, err = envcache.Open(filepath.Join(dir, "cache"), 0, log); err != nil {
			return nil, err
		}
	}
	// The seeding container's work tree: it writes nothing there.
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o777); err != nil {
		return nil, err
	}
	imageID, err := drv.ImageID(ctx, drv.Image())
	if err != nil {
		return nil, fmt.Errorf("the sandbox image: %w", err)
	}
	owner := envcache.Owner{Local: seedOwner}
	key, _, err := envcache.Key(envcache.KeyInput{Owner: owner, ImageID: imageID, Setup: []string{envcache.SeedHome}}, os.DirFS(tree))
	if err != nil {
		return nil, err
	}
	// A cache of its own (envs nil) is this evaluation's alone: the seed is
	// kept private. In a shared one, evaluations seeding at once copy it once.
	env, err := cache.Prepare(ctx, envcache.Entry{Key: key, Owner: owner, Image: drv.Image()}, tree, policy.DefaultSetupMaxEnvBytes, envs == nil,
		func(home string) error { return copySeed(ctx, drv, tree, home) })
	if err != nil {
		return nil, err
	}
	return &seededHome{env: env, dir: dir}, nil
}

// copySeed runs envcache.SeedHome in a network-less container whose $HOME
// is home.
func copySeed(ctx context.Context, drv sandbox.Sandboxes, tree, home string) error {
	box, err := drv.Start(ctx, sandbox.Spec{TaskID: fmt.Sprintf("eval-%d-home", os.Getpid()), WorkTree: tree, Home: home})
	if err != nil {
		return fmt.Errorf("start the sandbox: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	res, err := box.Run(ctx, sandbox.Cmd{Shell: envcache.SeedHome, Timeout: seedTimeout})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("%q exited %d (timed out: %v): %s", envcache.SeedHome, res.ExitCode, res.TimedOut,
			strings.TrimSpace(string(res.Stderr)+string(res.Stdout)))
	}
	return nil
}

// Spec gives a sandbox a view of the seed of its own.
func (s *seededHome) Spec(spec sandbox.Spec) (sandbox.Spec, error) {
	ov, err := s.env.Overlays()
	spec.Overlays = ov
	return spec, err
}

// close gives the seed back and removes what the containers wrote over
// it, and a private seed; they must be gone.
func (s *seededHome) close() error {
	err := s.env.Release()
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}
