// Command executor is the sandbox executor for tests: what "agentbot
// sandbox-exec", "agentbot egress-proxy" and "agentbot reach-probe" do,
// in a binary that depends only on runner/sandbox and runner/egress, so
// that sandbox tests do not break while cmd/agentbot is being changed. sandboxtest builds it static
// (CGO_ENABLED=0) to run in any image.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/reach"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "egress-proxy":
		err = egressProxy(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "reach-probe":
		err = reachProbe(ctx, os.Args[2:])
	default:
		err = sandboxExec(ctx)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
		os.Exit(1)
	}
}

// sandboxExec is the container's "/agentbot sandbox-exec --contain", as
// the agentbot binary runs it.
func sandboxExec(ctx context.Context) error {
	fs := flag.NewFlagSet("sandbox-exec", flag.ExitOnError)
	contain := fs.Bool("contain", false, "run commands as the sandbox user and kill what they leave behind")
	opts := sandbox.ExecOptions{Root: sandbox.WorkDir, Env: os.Environ()}
	opts.RegisterFlags(fs)
	if len(os.Args) > 1 {
		fs.Parse(os.Args[2:])
	}
	opts.Contain = *contain
	return sandbox.Serve(ctx, os.Stdin, os.Stdout, opts)
}

// egressProxy is "agentbot egress-proxy --listen ADDR --allow HOST...
// [--upstream-stdin]".
func egressProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("egress-proxy", flag.ExitOnError)
	listen := fs.String("listen", ":3128", "")
	var allow []app.AllowHost
	fs.Func("allow", "", func(v string) error {
		h, err := app.ParseAllowHost(v)
		allow = append(allow, h)
		return err
	})
	var from, internal []netip.Prefix
	for name, list := range map[string]*[]netip.Prefix{"accept-from": &from, "internal": &internal} {
		fs.Func(name, "", func(v string) error {
			p, err := netip.ParsePrefix(v)
			*list = append(*list, p)
			return err
		})
	}
	upstream := fs.Bool("upstream-stdin", false, "")
	fs.Parse(args)
	cfg := egress.Config{Allow: allow, Internal: internal}
	if *upstream {
		in, err := egress.ReadUpstream(os.Stdin)
		if err != nil {
			return err
		}
		cfg.Inject = in
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	return egress.Serve(ctx, egress.OnlyFrom(ln, from), cfg, os.Stdout, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
}

// reachProbe is "agentbot reach-probe [--timeout D] TARGET...".
func reachProbe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("reach-probe", flag.ExitOnError)
	timeout := fs.Duration("timeout", 2*time.Second, "")
	fs.Parse(args)
	return reach.Probe(ctx, os.Stdout, fs.Args(), os.Getenv("HTTPS_PROXY"), *timeout)
}
