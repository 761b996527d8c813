// Command executor is the sandbox executor for tests: what "agentbot
// sandbox-exec" does, in a binary that depends only on runner/sandbox, so
// that sandbox tests do not break while cmd/agentbot is being changed.
// sandboxtest builds it static (CGO_ENABLED=0) to run in any image.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbot/agentbot/runner/sandbox"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The container runs "/agentbot sandbox-exec --contain", as it would
	// the agentbot binary.
	fs := flag.NewFlagSet("sandbox-exec", flag.ExitOnError)
	contain := fs.Bool("contain", false, "run commands as the sandbox user and kill what they leave behind")
	if len(os.Args) > 1 {
		fs.Parse(os.Args[2:])
	}
	err := sandbox.Serve(ctx, os.Stdin, os.Stdout, sandbox.ExecOptions{Root: sandbox.WorkDir, Env: os.Environ(), Contain: *contain})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "sandbox-exec:", err)
		os.Exit(1)
	}
}
