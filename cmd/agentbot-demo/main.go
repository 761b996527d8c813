// Command agentbot-demo runs agentbot's whole pipeline on one machine
// ("make demo"): a simulated GitHub, Redis, a model and "agentbot serve"
// with real sandboxes, from a signed "/agent fix" comment to a pull
// request with passing checks.
//
// The demo is a binary of its own because its world (the GitHub
// simulator and the scripted model) is not agentbot's: the agentbot binary
// that is deployed links neither, and a dependency test holds it so. The
// demo still runs that very binary, as a process of its own.
//
// "agentbot-demo model" serves the scripted model alone, as an endpoint
// agentbot reaches as it reaches a real one: "make eval" replays the
// shipped suite through it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agentbot/agentbot/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if status, ok := errors.AsType[exitStatus](err); ok {
		os.Exit(int(status))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbot-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "model" {
		return cmdModel(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("agentbot-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := demo.Config{Stdout: stdout, Stderr: stderr, Logs: getenv("AGENTBOT_DEMO_LOGS") != ""}
	c.Getenv = getenv
	fs.StringVar(&c.RedisURL, "redis-url", "redis://127.0.0.1:6379/0", "Redis to use; a private redis-server is started when none answers")
	fs.StringVar(&c.Sample, "sample", "deploy/demo", "the sample: repo/, issue.md and model.yaml")
	fs.StringVar(&c.Agentbot, "agentbot", besideThis("agentbot"), "the agentbot binary to serve with")
	fs.StringVar(&c.Executor, "sandbox-executor", "", "the static agentbot binary mounted into sandboxes (default: --agentbot)")
	fs.StringVar(&c.Image, "sandbox-image", "agentbot-sandbox:dev", "the sandbox image")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the flag package printed the help
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return demo.Run(ctx, c)
}

// besideThis is the path of name in this binary's directory, where "make
// build" puts agentbot; just name when this binary's path is unknown.
func besideThis(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return name
	}
	return filepath.Join(filepath.Dir(exe), name)
}
