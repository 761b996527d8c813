package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
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
func (s *setupFlags) server() (app.ServerConfig, error) {
	server, err := app.LoadServerConfig(s.config)
	if err != nil {
		return app.ServerConfig{}, fmt.Errorf("run: --config: %s", app.ErrorMessage(err))
	}
	switch {
	case s.network:
		server.SetupNetwork = true
		server.SetupAllowHosts = append(server.SetupAllowHosts, s.allow...)
	case len(s.allow) > 0:
		return app.ServerConfig{}, errors.New("run: --allow-host needs --setup-network")
	}
	return server, nil
}

// runSetup prepares the environment the agent and the checks run over, as
// a worker does (runner.Setup): an environment of envs whose key (image,
// setup commands, lock files) matches is reused without running setup;
// otherwise the image's seed of $HOME and the policy's setup commands run
// in their own container over tree, with network only through the egress
// proxy to server's setup.allow_hosts, and what they leave is kept under
// the key, for the checkout at src alone. It prints each command and every
// connection the proxy refused.
func runSetup(ctx context.Context, drv *docker.Driver, envs *envcache.Cache, id, src, image, tree string, p app.Policy, server app.ServerConfig, out io.Writer) (*envcache.Env, error) {
	owner, err := envcache.LocalOwner(src)
	if err != nil {
		return nil, fmt.Errorf("run: setup: %w", err)
	}
	s := runner.NewSetup(runner.DockerSandboxes(drv), p, id+"-setup", tree, image)
	s.AllowHosts = server.SetupAllowHosts
	s.MaxEnvBytes = server.SetupMaxEnvBytes
	s.InternalRanges = server.SetupInternalRanges
	s.Progress = func(line string) { fmt.Fprintf(out, "setup: %s\n", line) }
	s.Refused = func(x egress.Refusal) { fmt.Fprintln(out, x) }
	env, detail, err := s.Prepare(ctx, envs, owner, filepath.Base(src), os.DirFS(tree))
	if sf, ok := errors.AsType[*runner.SetupFailure](err); ok {
		return nil, &exitError{code: 1, err: fmt.Errorf("setup %q exited %d (timed out: %v); the agent did not start:\n%s", sf.Run, sf.Exit, sf.TimedOut, strings.TrimSpace(sf.Output))}
	}
	if err != nil {
		return nil, fmt.Errorf("run: setup: %w", err)
	}
	fmt.Fprintln(out, detail)
	return env, nil
}
