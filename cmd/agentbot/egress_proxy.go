package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
)

// cmdEgressProxy is the setup phase's forward proxy: the worker starts it
// in a container of its own, beside the setup container, and reads what it
// refused from its stdout (see runner/egress).
func cmdEgressProxy(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("egress-proxy", env)
	listen := fs.String("listen", ":3128", "the address to accept proxy connections on")
	var allow allowHostFlags
	fs.Var(&allow, "allow", "a host (host, host:port, *.domain, an address or a CIDR network) connections may go to; repeatable")
	var from, internal []netip.Prefix
	fs.Func("accept-from", "a network (CIDR) whose peers are served; repeatable (default: any peer)", prefixFlag(&from))
	fs.Func("internal", "a network (CIDR) no allowed name may lead to, besides the built-in internal classes; repeatable", prefixFlag(&internal))
	upstream := fs.Bool("upstream-stdin", false, "read the registries' credentials and upstream CA certificates (egress.Upstream, JSON) from stdin")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	cfg := egress.Config{Allow: allow, Internal: internal}
	if *upstream {
		in, err := egress.ReadUpstream(env.Stdin)
		if err != nil {
			return fmt.Errorf("egress-proxy: %w", err)
		}
		cfg.Inject = in
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("egress-proxy: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(env.Stderr, nil))
	if err := egress.Serve(ctx, egress.OnlyFrom(ln, from), cfg, env.Stdout, log); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// prefixFlag appends each value, a CIDR network, to list.
func prefixFlag(list *[]netip.Prefix) func(string) error {
	return func(v string) error {
		p, err := netip.ParsePrefix(v)
		*list = append(*list, p)
		return err
	}
}

// allowHostFlags collects repeated host flags, each checked as an entry of
// setup.allow_hosts.
type allowHostFlags []app.AllowHost

func (a *allowHostFlags) String() string {
	var s []string
	for _, h := range *a {
		s = append(s, h.String())
	}
	return strings.Join(s, ", ")
}

func (a *allowHostFlags) Set(v string) error {
	h, err := app.ParseAllowHost(v)
	if err != nil {
		return err
	}
	*a = append(*a, h)
	return nil
}
