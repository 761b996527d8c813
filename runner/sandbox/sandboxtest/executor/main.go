// Command executor is the sandbox executor for tests: what "agentbot
// sandbox-exec" and "agentbot egress-proxy" do, in a binary that depends
// only on runner/sandbox and runner/egress, so that sandbox tests do not
// break while cmd/agentbot is being changed. sandboxtest builds it static
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

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "egress-proxy" {
		err = egressProxy(ctx, os.Args[2:])
	} else {
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
	if len(os.Args) > 1 {
		fs.Parse(os.Args[2:])
	}
	return sandbox.Serve(ctx, os.Stdin, os.Stdout, sandbox.ExecOptions{Root: sandbox.WorkDir, Env: os.Environ(), Contain: *contain})
}

// egressProxy is "agentbot egress-proxy --listen ADDR --allow HOST...".
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
	fs.Parse(args)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	return egress.Serve(ctx, egress.OnlyFrom(ln, from), egress.Config{Allow: allow, Internal: internal}, os.Stdout, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
}
