package main

import (
	"context"
	"errors"
	"os"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// cmdSandboxExec is the executor inside a sandbox container: the driver
// mounts this binary read-only and starts it as the container's command. It
// reads JSON commands on stdin and answers on stdout until stdin closes.
func cmdSandboxExec(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("sandbox-exec", env)
	root := fs.String("root", sandbox.WorkDir, "the work tree commands run in")
	contain := fs.Bool("contain", false, "run commands as the sandbox user and kill what they leave behind (as the container's root only)")
	var opts sandbox.ExecOptions
	opts.RegisterFlags(fs)
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	// The container's environment is exactly what the driver set, so
	// commands inherit all of it.
	opts.Root, opts.Env, opts.Contain = *root, os.Environ(), *contain
	err := sandbox.Serve(ctx, env.Stdin, env.Stdout, opts)
	if errors.Is(err, context.Canceled) {
		return nil // stopped by SIGTERM: the container is being stopped
	}
	return err
}
