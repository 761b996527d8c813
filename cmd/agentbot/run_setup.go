package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
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

// runTarget is what agentbot run prepares an environment for: the run's
// id, the repository's name, the sandbox image and the copied tree.
type runTarget struct {
	id, repo, image, tree string
}

// runSetup prepares the environment the agent and the checks run over, as
// a worker does: an environment of envs whose key (image, setup commands,
// lock files) matches is reused without running setup; otherwise the
// policy's setup commands run in their own container over the tree, with
// network only through the egress proxy to server's setup.allow_hosts,
// and what they leave is kept under the key. It prints each command and
// every connection the proxy refused. Without setup commands there is no
// environment (nil).
func runSetup(ctx context.Context, drv *docker.Driver, envs *envcache.Cache, t runTarget, p app.Policy, server app.ServerConfig, out io.Writer) (env *envcache.Env, err error) {
	s := p.Setup
	if len(s.Run) == 0 {
		return nil, nil
	}
	imageID, err := drv.ImageID(ctx, t.image)
	if err != nil {
		return nil, fmt.Errorf("run: the sandbox image: %w", err)
	}
	key, files, err := envcache.Key(envcache.KeyInput{ImageID: imageID, Setup: s.Run, Network: s.Network, Patterns: s.CacheKeyFiles}, os.DirFS(t.tree))
	if err != nil {
		return nil, fmt.Errorf("run: the prepared environment's key: %w", err)
	}
	if env, err = envs.Acquire(key); err != nil || env != nil {
		if env != nil {
			fmt.Fprintf(out, "setup: cached %s\n", key)
		}
		return env, err
	}
	b, err := envs.Build(envcache.Entry{Key: key, Repo: t.repo, Image: t.image, Files: files}, t.tree)
	if err != nil {
		return nil, fmt.Errorf("run: build the prepared environment: %w", err)
	}
	if err := runSetupLines(ctx, drv, t.id, t.tree, b.Home(), p, server, out); err != nil {
		b.Abort()
		return nil, err
	}
	if env, err = b.Publish(); err != nil {
		return nil, fmt.Errorf("run: keep the prepared environment: %w", err)
	}
	fmt.Fprintf(out, "setup: built %s\n", key)
	return env, nil
}

// runSetupLines runs the policy's setup commands in a container over tree
// whose $HOME is home.
func runSetupLines(ctx context.Context, drv *docker.Driver, taskID, tree, home string, p app.Policy, server app.ServerConfig, out io.Writer) (err error) {
	s := p.Setup
	spec := docker.Spec{TaskID: taskID + "-setup", WorkTree: tree, Home: home, CPUs: p.Sandbox.CPUs, Memory: p.Sandbox.Memory, Pids: p.Sandbox.Pids, MaxTreeGrowth: p.Sandbox.Disk}
	if s.Network {
		allow := make([]string, len(server.SetupAllowHosts))
		for i, a := range server.SetupAllowHosts {
			allow[i] = a.String()
		}
		e, err := drv.StartEgress(ctx, docker.EgressSpec{TaskID: spec.TaskID, Allow: allow})
		if err != nil {
			return fmt.Errorf("run: start the setup network: %w", err)
		}
		fmt.Fprintf(out, "setup: network through the egress proxy to %s\n", orNone(allow))
		spec.Egress = e
		defer func() {
			refused, cerr := e.Close(ctx)
			for _, r := range refused {
				fmt.Fprintln(out, r)
			}
			err = errors.Join(err, cerr)
		}()
	}
	box, err := drv.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("run: start the setup sandbox: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	for _, line := range append([]string{envcache.SeedHome}, s.Run...) {
		if line != envcache.SeedHome {
			fmt.Fprintf(out, "setup: %s\n", line)
		}
		res, err := box.Run(ctx, sandbox.Cmd{Shell: line, Timeout: s.Timeout})
		if err != nil {
			return fmt.Errorf("run: setup %q: %w", line, err)
		}
		if res.ExitCode != 0 || res.TimedOut {
			output := strings.TrimSpace(string(res.Stderr) + string(res.Stdout))
			return &exitError{code: 1, err: fmt.Errorf("setup %q exited %d (timed out: %v); the agent did not start:\n%s", line, res.ExitCode, res.TimedOut, output)}
		}
	}
	return nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no host (setup.allow_hosts is empty)"
	}
	return strings.Join(list, ", ")
}
