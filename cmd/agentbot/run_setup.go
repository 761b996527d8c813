package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentbot/agentbot/app"
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

// runSetup runs the policy's setup commands in their own container over
// tree before the agent acts, as a worker does: with network only through
// the egress proxy, to server's setup.allow_hosts. It prints each command
// and every connection the proxy refused.
func runSetup(ctx context.Context, drv *docker.Driver, taskID, tree string, p app.Policy, server app.ServerConfig, out io.Writer) (err error) {
	s := p.Setup
	if len(s.Run) == 0 {
		return nil
	}
	spec := docker.Spec{TaskID: taskID + "-setup", WorkTree: tree, CPUs: p.Sandbox.CPUs, Memory: p.Sandbox.Memory, Pids: p.Sandbox.Pids, MaxTreeGrowth: p.Sandbox.Disk}
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
	for _, line := range s.Run {
		fmt.Fprintf(out, "setup: %s\n", line)
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
