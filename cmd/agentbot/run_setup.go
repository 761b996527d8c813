package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// setupFlags are agentbot run's say on the setup phase's network.
type setupFlags struct {
	config  string
	network bool
	allow   allowHostFlags
}

func (s *setupFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.config, "config", "", "a server config (server.yaml) to work under, as a worker would: its caps, policy and setup.allow_hosts")
	fs.BoolVar(&s.network, "setup-network", false, "run the policy's setup with network, through the egress proxy to the hosts of --allow-host (and of --config)")
	fs.Var(&s.allow, "allow-host", "a host setup may reach with --setup-network (host, host:port, *.domain); repeatable")
}

// server is the server config agentbot run works under: --config's, or the
// defaults, with --setup-network's allowance and --allow-host's hosts.
func (s *setupFlags) server() (policy.ServerConfig, error) {
	server, err := policy.LoadServerConfig(s.config)
	if err != nil {
		return policy.ServerConfig{}, fmt.Errorf("run: --config: %s", app.ErrorMessage(err))
	}
	switch {
	case s.network:
		server.SetupNetwork = true
		server.SetupAllowHosts = append(server.SetupAllowHosts, s.allow...)
	case len(s.allow) > 0:
		return policy.ServerConfig{}, errors.New("run: --allow-host needs --setup-network")
	}
	return server, nil
}

// newRunSetup is the policy's setup over the tree at dir, as a worker's
// (change.Setup): in its own container on the policy's image, with
// network only through the egress proxy to server's setup.allow_hosts,
// trusting caBundle, with the registries' credentials that getenv holds.
// It prints each command, every host the proxy connected setup to and
// every connection it refused.
func newRunSetup(sb sandbox.Sandboxes, p policy.Policy, server policy.ServerConfig, id, dir, caBundle string, getenv func(string) string, out io.Writer) change.Setup {
	s := change.NewSetup(sb, p, id+"-setup", dir, p.Sandbox.Image)
	s.AllowHosts = server.SetupAllowHosts
	s.CABundle = caBundle
	s.Secrets = getenv
	s.Registries = server.SetupRegistries
	s.MaxEnvBytes = server.SetupMaxEnvBytes
	s.InternalRanges = server.SetupInternalRanges
	s.Progress = func(line string) { fmt.Fprintf(out, "setup: %s\n", line) }
	s.Refused = func(x egress.Refusal) { fmt.Fprintln(out, x) }
	s.Reached = func(x egress.Reach) { fmt.Fprintf(out, "setup reached %s\n", x) }
	return s
}

// prepareRun prepares the environment config init --verify's checks run
// over, as a worker's setup step does (change.Prepare): an environment of
// envs whose key (image, setup commands, lock files) matches is reused
// without running setup; otherwise the image's seed of $HOME and the
// policy's setup commands run and what they leave is kept under the key,
// for the checkout at src alone.
func prepareRun(ctx context.Context, s change.Setup, envs *envcache.Cache, src string, ws *workspace.Workspace, out io.Writer) (*change.Prepared, error) {
	owner, err := envcache.LocalOwner(src)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	env, detail, err := change.Prepare(ctx, s, envs, owner, filepath.Base(src), ws.Root().FS())
	if sf, ok := errors.AsType[*change.SetupFailure](err); ok {
		return nil, &exitError{code: 1, err: fmt.Errorf("setup %q exited %d (timed out: %v); the agent did not start:\n%s", sf.Run, sf.Exit, sf.TimedOut, strings.TrimSpace(sf.Output))}
	}
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	fmt.Fprintln(out, detail)
	return env, nil
}
