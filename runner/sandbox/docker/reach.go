package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// A Kubernetes NetworkPolicy selects pods; the containers a worker starts
// on its node's engine are no pods, and no policy holds them. What they
// can reach is whatever the node's own firewall lets its Docker bridges
// reach, so a worker proves it before it takes a task: it runs a probe
// inside each kind of container it starts, from where that container
// sits on the network.

// Vantage is where a kind of container the worker starts sits on the
// network.
type Vantage string

// The vantages of a worker's containers.
const (
	// VantageSandbox is the agent's and the checks' sandbox: no network.
	VantageSandbox Vantage = "sandbox"
	// VantageSetup is a setup container on its internal setup network,
	// whose only peer is the egress proxy, which dials from Docker's
	// default bridge what the setup's allowed hosts name.
	VantageSetup Vantage = "setup"
)

// reachProbeTask labels the probe's containers and network, so that an
// orphan sweep removes them like any task's should the worker die midway.
const reachProbeTask = "reach-probe"

// ReachProbe runs the executor's "reach-probe" subcommand with args
// inside a sandbox at each vantage, as the sandbox user, and returns its
// output there. The setup vantage's egress proxy allows allow, as if a
// repository's setup.allow_hosts named them: what the node's firewall
// lets through is then what the proxy reaches. workTree is an empty
// directory the sandboxes mount, on a path the engine sees as the worker
// does (the data directory); timeout bounds each run.
func (d *Driver) ReachProbe(ctx context.Context, workTree string, args, allow []string, timeout time.Duration) (map[Vantage][]byte, error) {
	out := map[Vantage][]byte{}
	run := func(v Vantage, spec sandbox.Spec) error {
		spec.TaskID, spec.WorkTree = reachProbeTask, workTree
		c, err := d.Start(ctx, spec)
		if err != nil {
			return fmt.Errorf("start the %s probe: %w", v, err)
		}
		res, err := c.Run(ctx, sandbox.Cmd{Argv: append([]string{executorPath, "reach-probe"}, args...), Timeout: timeout})
		if cerr := c.Close(ctx); err == nil && cerr != nil {
			d.log.Warn("remove the reach probe's sandbox", "vantage", v, "err", cerr)
		}
		switch {
		case err != nil:
			return fmt.Errorf("run the %s probe: %w", v, err)
		case res.ExitCode != 0:
			return fmt.Errorf("the %s probe exited %d: %s", v, res.ExitCode, res.Stderr)
		}
		out[v] = res.Stdout
		return nil
	}
	if err := run(VantageSandbox, sandbox.Spec{}); err != nil {
		return nil, err
	}
	eg, err := d.StartEgress(ctx, sandbox.EgressSpec{TaskID: reachProbeTask, Allow: allow})
	if err != nil {
		return nil, fmt.Errorf("start the setup network of the probe: %w", err)
	}
	err = run(VantageSetup, sandbox.Spec{Egress: eg})
	if _, cerr := eg.Close(ctx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("remove the setup network of the probe: %w", cerr))
	}
	return out, err
}

// BridgeGateways are the host's addresses on Docker's bridge networks: a
// container on one reaches the host's services there.
func (d *Driver) BridgeGateways(ctx context.Context) ([]string, error) {
	list, err := d.cli.NetworkList(ctx, network.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Docker networks: %w", err)
	}
	var out []string
	for _, n := range list {
		if n.Driver != "bridge" {
			continue
		}
		info, err := d.cli.NetworkInspect(ctx, n.ID, network.InspectOptions{})
		if cerrdefs.IsNotFound(err) {
			continue // removed since the list (a task's setup network ending): no gateway of the host's now
		}
		if err != nil {
			return nil, fmt.Errorf("inspect Docker network %s: %w", n.Name, err)
		}
		if info.Options[inhibitIPv4] == "true" {
			continue // the host has no address there
		}
		for _, c := range info.IPAM.Config {
			if gw := gateway(c); gw != "" {
				out = append(out, gw)
			}
		}
	}
	return out, nil
}

// gateway is a subnet's gateway: the one the engine names, or its first
// address, which the engine gives the bridge when it names none (the
// default bridge's inspection often shows no gateway).
func gateway(c network.IPAMConfig) string {
	if c.Gateway != "" {
		return c.Gateway
	}
	prefix, err := netip.ParsePrefix(c.Subnet)
	if err != nil {
		return ""
	}
	return prefix.Masked().Addr().Next().String()
}
