// Command agentbot is the GitHub App that turns "/agent fix" into a pull
// request: the webhook server, the workers, and the tools around them.
//
// main only wires: flags, environment and secret files become the concrete
// pieces of app, webhook, queue and runner, and nothing else meets them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Env is what a subcommand may touch of the process, passed in so that tests
// run subcommands in-process.
type Env struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// subcommand runs one "agentbot NAME ..." invocation; args exclude NAME.
type subcommand struct {
	run     func(ctx context.Context, args []string, env Env) error
	summary string
}

// commands is built per call, never kept in a package variable.
func commands() map[string]subcommand {
	return map[string]subcommand{
		"serve":        {cmdServe, "receive GitHub webhooks and run the queued tasks (--no-workers: intake only)"},
		"worker":       {cmdWorker, "run queued tasks only, beside an intake started with serve --no-workers"},
		"tasks":        {cmdTasks, "list or show queued tasks and their state: tasks list | tasks show ID"},
		"bench":        {cmdBench, "measure webhook intake: bench webhook --rate R --duration D --url URL --secret S"},
		"demo":         {cmdDemo, "run the intake on this machine and queue one sample command"},
		"run":          {cmdRun, "run the agent loop on a local checkout in the sandbox, without GitHub"},
		"eval":         {cmdEval, "score a model on a suite of tasks: eval SUITE_DIR [--model M] [--runs N] [--json]"},
		"config":       {cmdConfig, "validate .github/agent.yml files offline; print their JSON Schema"},
		"setup":        {cmdSetup, "register agentbot as a GitHub App (manifest flow) and save its credentials"},
		"audit":        {cmdAudit, "print the audit log: audit [--repo R] [--since 7d] [--json]"},
		"trace":        {cmdTrace, "print a task's trace: trace ID [--json | --markdown]"},
		"stats":        {cmdStats, "print task outcomes per repository and model: stats [--repo R] [--since 30d] [--json]"},
		"admin":        {cmdAdmin, "serve the read-only admin pages: task list and traces (--admin-addr, loopback by default)"},
		"sandbox-exec": {cmdSandboxExec, "run commands inside a sandbox container (started by the worker, not by hand)"},
		"egress-proxy": {cmdEgressProxy, "the setup phase's forward proxy, in a container beside setup (started by the worker, not by hand)"},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := run(ctx, os.Args[1:], env); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "agentbot:", err)
		}
		os.Exit(exitCode(err))
	}
}

// exitError carries a specific exit status, for commands such as
// "config validate" whose failure is an answer rather than a fault.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

func run(ctx context.Context, args []string, env Env) error {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.Stderr, cmds)
		return flag.ErrHelp
	}
	c, ok := cmds[args[0]]
	if !ok {
		usage(env.Stderr, cmds)
		return fmt.Errorf("unknown command %q", args[0])
	}
	return c.run(ctx, args[1:], env)
}

func usage(w io.Writer, cmds map[string]subcommand) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: agentbot COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, cmds[n].summary)
	}
}

// newFlagSet returns a flag set for a subcommand whose flags also read
// AGENTBOT_<NAME> from the environment (--redis-url ← AGENTBOT_REDIS_URL).
// Call parseFlags after defining the flags: explicit flags win over the
// environment, which wins over the defaults.
func newFlagSet(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet("agentbot "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// parseFlags applies the environment, then the command line.
func parseFlags(fs *flag.FlagSet, args []string, env Env) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil {
			return
		}
		key := "AGENTBOT_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := env.Getenv(key); v != "" {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", key, v, serr)
			}
		}
	})
	if err != nil {
		return err
	}
	return fs.Parse(args)
}
