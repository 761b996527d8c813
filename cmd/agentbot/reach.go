package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/reach"
	"github.com/agentbot/agentbot/runner/workspace"
)

// The containers a worker starts are the node's, not the cluster's: no
// NetworkPolicy holds them, so the worker proves at start what they can
// reach, and refuses to take tasks while any of these answers from any of
// them. Only a completed connection (or a DNS reply) counts: a firewall
// rule that drops or rejects passes.

// metadataAddr is the cloud's instance metadata service, which hands out
// the node's credentials.
const metadataAddr = "169.254.169.254"

// nodePorts are tried on each of the node's own addresses: ssh, web,
// Docker's API, etcd, Redis, agentbot's intake and metrics, the kubelet,
// node exporters.
var nodePorts = []int{22, 80, 443, 2375, 2376, 2379, 6379, 8080, 9090, 9100, 10250, 10255}

// reachTimeout bounds one connection attempt of the probe, and
// reachRunTimeout the probe's whole run in one container.
const (
	reachTimeout    = 2 * time.Second
	reachRunTimeout = 30 * time.Second
)

// reachFlags are the probe's settings.
type reachFlags struct {
	targets hostPorts // --reach-target
	dns     hostPorts // --reach-dns
	skip    bool
	// resolvConf is where the cluster's DNS is read from in Kubernetes.
	resolvConf string
}

func (f *reachFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.targets, "reach-target", "HOST:PORT a sandbox, setup container or the egress proxy must not reach, besides the metadata address, the node's addresses, the Redis and the cluster DNS; repeat or separate with commas")
	fs.Var(&f.dns, "reach-dns", "the cluster DNS (HOST:PORT) those containers must not reach (default in Kubernetes: the nameservers of /etc/resolv.conf, port 53)")
	fs.BoolVar(&f.skip, "skip-reach-probe", false, "start without proving what the worker's containers can reach (see the RUNBOOK: only where the node's firewall is known to close it)")
	f.resolvConf = "/etc/resolv.conf"
}

// hostPorts collects repeated HOST:PORT flags.
type hostPorts []string

func (h *hostPorts) String() string { return strings.Join(*h, ",") }

func (h *hostPorts) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		host, port, err := net.SplitHostPort(part)
		if err != nil {
			return fmt.Errorf("%q: want HOST:PORT: %w", part, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not 1 to 65535", part, port)
		}
		if host == "" {
			return fmt.Errorf("%q: the host is empty", part)
		}
		*h = append(*h, part)
	}
	return nil
}

// reachTarget is one address the containers must not reach, and why it
// matters.
type reachTarget struct {
	What string // "metadata", "node address", "Redis", "cluster DNS", "--reach-target"
	Addr string // IP:PORT
	DNS  bool   // a DNS server: a reply over UDP counts too
}

// probeArg is the target as the probe subcommand takes it.
func (t reachTarget) probeArg() string {
	if t.DNS {
		return "dns:" + t.Addr
	}
	return "tcp:" + t.Addr
}

// reachTargets lists what the worker's containers must not reach: the
// metadata address, the node's addresses (interfaces and Docker bridge
// gateways) on the usual ports and Redis's, the Redis the worker uses,
// the cluster DNS and the operator's extra targets. Names are resolved
// here, where the cluster's DNS answers, not in the containers.
func (f *reachFlags) reachTargets(ctx context.Context, env Env, redisAddr string, gateways []string) ([]reachTarget, error) {
	targets := []reachTarget{{What: "metadata", Addr: net.JoinHostPort(metadataAddr, "80")}}
	add := func(what, hostPort string, dns bool) error {
		host, port, err := net.SplitHostPort(hostPort)
		if err != nil {
			return fmt.Errorf("%s %q: %w", what, hostPort, err)
		}
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return fmt.Errorf("resolve %s %s: %w", what, host, err)
		}
		for _, ip := range ips {
			t := reachTarget{What: what, Addr: net.JoinHostPort(ip, port), DNS: dns}
			// An address is tried once, under the first reason for it
			// (Redis before the node's ports).
			if !slices.ContainsFunc(targets, func(o reachTarget) bool { return o.probeArg() == t.probeArg() }) {
				targets = append(targets, t)
			}
		}
		return nil
	}
	if redisAddr != "" {
		if err := add("Redis", redisAddr, false); err != nil {
			return nil, err
		}
	}
	ports := nodePorts
	if _, p, err := net.SplitHostPort(redisAddr); err == nil {
		if n, err := strconv.Atoi(p); err == nil && !slices.Contains(ports, n) {
			ports = append(slices.Clone(ports), n)
		}
	}
	nodes, err := nodeAddrs(gateways)
	if err != nil {
		return nil, err
	}
	for _, ip := range nodes {
		for _, p := range ports {
			if err := add("node address", net.JoinHostPort(ip, strconv.Itoa(p)), false); err != nil {
				return nil, err
			}
		}
	}
	dns := f.dns
	if len(dns) == 0 && env.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		if dns, err = nameservers(f.resolvConf); err != nil {
			return nil, err
		}
	}
	for _, d := range dns {
		if err := add("cluster DNS", d, true); err != nil {
			return nil, err
		}
	}
	for _, t := range f.targets {
		if err := add("--reach-target", t, false); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// nodeAddrs are the addresses of this host's interfaces, but loopback and
// IPv6 link-local ones (which a container cannot name without a zone),
// and gateways, Docker's bridges' addresses of the host.
func nodeAddrs(gateways []string) ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list this host's addresses: %w", err)
	}
	out := slices.Clone(gateways)
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() && n.IP.To4() == nil {
			continue
		}
		if ip := n.IP.String(); !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out, nil
}

// nameservers are the nameservers of a resolv.conf, on port 53.
func nameservers(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the cluster DNS: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			out = append(out, net.JoinHostPort(fields[1], "53"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the cluster DNS from %s: %w", path, err)
	}
	return out, nil
}

// reachProber runs the probe in the worker's containers.
type reachProber interface {
	ReachProbe(ctx context.Context, workTree string, args, allow []string, timeout time.Duration) (map[docker.Vantage][]byte, error)
	BridgeGateways(ctx context.Context) ([]string, error)
}

// proveUnreachable runs the probe from every vantage and fails naming
// each target that answered there. dataDir holds the probe's empty work
// tree, on a path the engine sees as the worker does.
func (f *reachFlags) proveUnreachable(ctx context.Context, env Env, p reachProber, redisAddr, dataDir string, log *slog.Logger) error {
	if f.skip {
		log.Warn("the reach probe is skipped (--skip-reach-probe): nothing proves that sandboxes, setup containers and the egress proxy cannot reach the node, its metadata or Redis")
		return nil
	}
	gateways, err := p.BridgeGateways(ctx)
	if err != nil {
		return err
	}
	targets, err := f.reachTargets(ctx, env, redisAddr, gateways)
	if err != nil {
		return err
	}
	if dataDir == "" {
		if dataDir, err = workspace.DefaultDataDir(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("reach probe: %w", err)
	}
	tree, err := os.MkdirTemp(dataDir, "reach-probe-")
	if err != nil {
		return fmt.Errorf("reach probe: %w", err)
	}
	defer os.RemoveAll(tree)
	// The probe runs as the sandbox user, in this directory.
	if err := os.Chmod(tree, 0o755); err != nil {
		return fmt.Errorf("reach probe: %w", err)
	}
	args := []string{"--timeout", reachTimeout.String()}
	var allow []string
	byArg := map[string]reachTarget{}
	for _, t := range targets {
		args = append(args, t.probeArg())
		byArg[t.probeArg()] = t
		// The proxy never takes the metadata address (app.ParseAllowHost);
		// every other target it is offered, as a setup's allow_hosts may.
		if t.What != "metadata" {
			allow = append(allow, t.Addr)
		}
	}
	out, err := p.ReachProbe(ctx, filepath.Clean(tree), args, allow, reachRunTimeout)
	if err != nil {
		return fmt.Errorf("reach probe: %w", err)
	}
	var reached []string
	for _, v := range []docker.Vantage{docker.VantageSandbox, docker.VantageSetup} {
		for line := range strings.Lines(string(out[v])) {
			arg, proxied := strings.CutSuffix(strings.TrimSpace(line), reach.ViaProxy)
			t, ok := byArg[arg]
			if !ok {
				return fmt.Errorf("reach probe: the %s probe answered %q, which is no target", v, strings.TrimSpace(line))
			}
			how := ""
			if proxied {
				how = " through the egress proxy"
			}
			reached = append(reached, fmt.Sprintf("%s reaches %s %s%s", v, t.What, t.Addr, how))
		}
	}
	if len(reached) > 0 {
		return fmt.Errorf("refusing to start: %s; close them on the node (DOCKER-USER and INPUT rules, see deploy/RUNBOOK.md), or start with --skip-reach-probe", strings.Join(reached, "; "))
	}
	log.Info("reach probe: no target answered", "targets", len(targets), "vantages", len(out))
	return nil
}

// redisAddr is the HOST:PORT of the Redis rdb talks to, or "" for a kind
// of client that has no one address.
func redisAddr(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok {
		return c.Options().Addr
	}
	return ""
}

// cmdReachProbe runs inside a worker's container: see reach.Probe.
func cmdReachProbe(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("reach-probe", env)
	setSynopsis(fs, "agentbot reach-probe [--timeout D] tcp:HOST:PORT|dns:HOST:PORT...")
	timeout := fs.Duration("timeout", reachTimeout, "how long to wait for each target")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if err := reach.Probe(ctx, env.Stdout, fs.Args(), env.Getenv("HTTPS_PROXY"), *timeout); err != nil {
		return usageErrorf(fs, "%v", err)
	}
	return nil
}
