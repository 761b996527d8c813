package change

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// Setup is the setup phase of one tree, apart from the task it is for: the
// policy's setup commands in a container of their own, with network only
// through the egress proxy to the server config's setup.allow_hosts, and
// the prepared environment they leave in $HOME. A worker's task
// (prepareEnv) and agentbot run's local checkout both run it, so that
// both prepare the same environment under the same key.
type Setup struct {
	Sandbox sandbox.Sandboxes
	// Spec is the setup container: its id, the tree, the image and the
	// policy's limits, and Network when setup may reach its allowed hosts.
	Spec sandbox.Spec
	// Policy is the policy's setup: its commands, their timeout, its
	// network and its cache_key_files.
	Policy policy.Setup
	// Private says that nobody trusts the tree (a pull request's head: its
	// lock files are its author's): setup runs without network, and the
	// environment Prepare builds is the caller's alone, never kept.
	Private bool
	// AllowHosts are the server config's setup.allow_hosts, all that a
	// setup with network reaches; CABundle, when set, is a PEM file the
	// setup container trusts besides the image's.
	AllowHosts []app.AllowHost
	CABundle   string
	// Registries are the server config's setup.registries: a setup with
	// network gets their variables (GOPROXY, PIP_INDEX_URL, …) and
	// reaches their hosts, and the egress proxy adds their credentials,
	// read from the worker's secrets as each setup starts.
	Registries []policy.Registry
	// Secrets holds the credentials a registry names by variable
	// (credentials.env): the worker's environment as the command line
	// read it, handed down rather than read here, so that what a setup
	// may send is what the caller gave it. Nil: there are none.
	Secrets func(name string) string
	// MaxEnvBytes bounds the environment Prepare builds (the server
	// config's setup.max_env_bytes; policy.DefaultSetupMaxEnvBytes when
	// zero): its commands are stopped once the tree and $HOME grow past
	// it, and an environment over it is refused, never kept.
	MaxEnvBytes int64
	// InternalRanges are the server config's setup.internal_ranges.
	InternalRanges []netip.Prefix
	// Progress, when set, is told what setup does as it does it: whom its
	// network reaches, and each of the policy's commands as it starts.
	Progress func(line string)
	// Refused, when set, is told each connection the egress proxy refused,
	// once the setup container is removed.
	Refused func(egress.Refusal)
	// Reached, when set, is told each host the egress proxy connected
	// setup to, once the setup container is removed.
	Reached func(egress.Reach)
	// Log, slog.Default when nil, hears of a setup network that could not
	// be removed.
	Log *slog.Logger
}

// NewSetup is policy p's setup, in a container named id over the tree at
// dir on image, with the policy's limits and its network.
func NewSetup(sb sandbox.Sandboxes, p policy.Policy, id, dir, image string) Setup {
	return Setup{Sandbox: sb, Policy: p.Setup,
		Spec: sandbox.Spec{TaskID: id, WorkTree: dir, Image: image,
			CPUs: p.Sandbox.CPUs, Memory: p.Sandbox.Memory, Pids: p.Sandbox.Pids, MaxTreeGrowth: p.Sandbox.Disk, Network: p.Setup.Network}}
}

// Prepare reuses the environment envs keeps for owner under the key of the
// setup's inputs (owner, the image's id, the setup commands, its network,
// and the lock files, the files setup runs and the cache_key_files of
// tree, the work tree's view), or builds it in a container whose $HOME is
// the new environment's: the image's seed of $HOME (envcache.SeedHome),
// then the policy's commands. repo names the repository for people. Tasks
// that prepare the same environment at once build it once, the others
// waiting for it (envcache.Cache.Prepare).
//
// detail is the setup's line in a task's trace and in agentbot run's
// output: "setup: cached KEY", "setup: built KEY", or for a private one
// "setup: private KEY (…)". A setup command that fails ends it with a
// *SetupFailure. The caller releases env once its containers are removed.
func (s Setup) Prepare(ctx context.Context, envs *envcache.Cache, owner envcache.Owner, repo string, tree fs.FS) (env *envcache.Env, detail string, err error) {
	imageID, err := s.Sandbox.ImageID(ctx, s.Spec.Image)
	if err != nil {
		return nil, "", err
	}
	p := s.Policy
	key, files, err := envcache.Key(envcache.KeyInput{Owner: owner, ImageID: imageID, Setup: p.Run, Network: p.Network, Patterns: p.CacheKeyFiles}, tree)
	if err != nil {
		return nil, "", app.Errorf(app.EPolicy, "The prepared environment's key cannot be made: %v", err)
	}
	maxEnv := cmp.Or(s.MaxEnvBytes, policy.DefaultSetupMaxEnvBytes)
	env, err = envs.Prepare(ctx, envcache.Entry{Key: key, Owner: owner, Repo: repo, Image: s.Spec.Image, Files: files},
		s.Spec.WorkTree, maxEnv, s.Private, func(home string) error {
			s.Spec.Home = home
			// Everything this setup writes, in $HOME and in the tree, is
			// the environment: the executor counts both against its cap,
			// so that a setup cannot fill the worker's disk before it is
			// measured.
			s.Spec.MaxTreeGrowth = maxEnv
			return s.run(ctx, envcache.SeedHome, p.Run)
		})
	if tl, ok := errors.AsType[*envcache.TooLargeError](err); ok {
		why := tl.Error() + " (setup.max_env_bytes of the server config)"
		return nil, "", &SetupFailure{Refused: why, Output: why}
	}
	if err != nil {
		return nil, "", err
	}
	switch {
	case env.Cached:
		detail = "setup: cached " + key
	case s.Private:
		detail = "setup: private " + key + " (a pull request's head: no network, not kept)"
	default:
		detail = "setup: built " + key
	}
	return env, detail, nil
}

// Run runs the policy's commands over the tree alone, keeping nothing but
// what they write in it: the setup of a worker without an environment
// cache (and of each further attempt's tree), and of the final
// verification's tree on its base. A command that fails ends it with a
// *SetupFailure.
func (s Setup) Run(ctx context.Context) error {
	return s.run(ctx, "", s.Policy.Run)
}

// run runs seed, when set, then lines in order in a container of s.Spec,
// whose network, if it asks for one, reaches only s.AllowHosts through the
// egress proxy; the first line that fails ends it with a *SetupFailure.
func (s Setup) run(ctx context.Context, seed string, lines []string) error {
	done, err := s.egress(ctx)
	if err != nil {
		return err
	}
	defer done()
	box, err := s.Sandbox.Start(ctx, s.Spec)
	if err != nil {
		return fmt.Errorf("start the setup sandbox: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	if seed != "" {
		lines = append([]string{seed}, lines...)
	}
	for i, line := range lines {
		if s.Progress != nil && (seed == "" || i > 0) {
			s.Progress(line)
		}
		res, err := box.Run(ctx, sandbox.Cmd{Shell: line, Timeout: s.Policy.Timeout})
		if err != nil {
			return fmt.Errorf("setup %q: %w", line, err)
		}
		if res.ExitCode != 0 || res.TimedOut {
			return &SetupFailure{Run: line, Exit: res.ExitCode, TimedOut: res.TimedOut, Output: string(res.Stderr) + string(res.Stdout)}
		}
	}
	return nil
}

// egress turns the network s.Spec asks for into its egress: an internal
// network whose only way out is the egress proxy, which reaches
// s.AllowHosts and nothing else. done, once the container is removed,
// removes the network and tells s.Refused and s.Reached what the proxy
// refused and reached.
func (s *Setup) egress(ctx context.Context) (done func(), err error) {
	s.Spec.CABundle = s.CABundle
	network := s.network()
	// Never the default bridge, which reaches everywhere.
	s.Spec.Network = false
	if !network {
		return func() {}, nil
	}
	var allow []string
	for _, a := range s.AllowHosts {
		allow = append(allow, a.String())
	}
	spec := sandbox.EgressSpec{TaskID: s.Spec.TaskID, CABundle: s.CABundle}
	for _, n := range s.InternalRanges {
		spec.Internal = append(spec.Internal, n.String())
	}
	env := slices.Clip(s.Spec.Env)
	for _, r := range s.Registries {
		for _, a := range r.AllowedHosts() {
			allow = append(allow, a.String())
		}
		env = append(env, r.Env()...)
		if r.Credentials == nil {
			continue
		}
		auth, err := r.Credentials.Authorization(s.secret)
		if err != nil {
			return nil, fmt.Errorf("setup.registries.%s: %w", r.Ecosystem, err)
		}
		spec.Upstream.Credentials = append(spec.Upstream.Credentials, egress.Credential{
			Scheme: r.URL.Scheme, Host: r.Host.Host, Port: r.Host.Port, Authorization: auth})
	}
	spec.Allow = allow
	e, err := s.Sandbox.StartEgress(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start the setup network: %w", err)
	}
	s.Spec.Env = env
	s.Spec.Egress = e
	if s.Progress != nil {
		to := strings.Join(allow, ", ")
		if len(allow) == 0 {
			to = "no host (setup.allow_hosts is empty)"
		}
		s.Progress("network through the egress proxy to " + to)
	}
	return func() {
		got, err := e.Close(context.WithoutCancel(ctx))
		if err != nil {
			cmp.Or(s.Log, slog.Default()).Warn("remove the setup network", "err", err)
		}
		if s.Refused != nil {
			for _, x := range got.Refused {
				s.Refused(x)
			}
		}
		if s.Reached != nil {
			for _, x := range got.Reached {
				s.Reached(x)
			}
		}
	}, nil
}

// secret is s.Secrets(name), or empty when s has no secrets.
func (s *Setup) secret(name string) string {
	if s.Secrets == nil {
		return ""
	}
	return s.Secrets(name)
}

// network says whether setup may reach its allowed hosts.
func (s *Setup) network() bool { return s.Spec.Network && !s.Private }

// SetupFailure is a setup command that failed, or a setup whose result was
// refused: a task ends, since the agent would work in a tree the
// repository's setup did not prepare.
type SetupFailure struct {
	Run      string
	Exit     int
	TimedOut bool
	Output   string
	// Refused says why what the commands left was refused, though they
	// succeeded (Run is then empty): an environment over its cap.
	Refused string
}

func (f *SetupFailure) Error() string {
	if f.Refused != "" {
		return "setup refused: " + f.Refused
	}
	if f.TimedOut {
		return fmt.Sprintf("setup `%s` timed out", f.Run)
	}
	return fmt.Sprintf("setup `%s` exited %d", f.Run, f.Exit)
}
