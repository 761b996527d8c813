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
		"probe":        {cmdProbe, "ask a health route and succeed on a 2xx answer: the image's HEALTHCHECK (probe [URL])"},
		"run":          {cmdRun, "run the agent loop on a local checkout in the sandbox, without GitHub"},
		"eval":         {cmdEval, "score a model on a suite of tasks: eval SUITE_DIR [--model M] [--runs N] [--json]; eval capture OWNER/REPO#PR --out SUITE_DIR"},
		"config":       {cmdConfig, "write a starter .github/agent.yml; validate policy files offline; print their JSON Schema"},
		"setup":        {cmdSetup, "register agentbot as a GitHub App (manifest flow) and save its credentials"},
		"audit":        {cmdAudit, "print the audit log: audit [--repo R] [--since 7d] [--json]"},
		"trace":        {cmdTrace, "print a task's trace: trace ID [--json | --markdown]"},
		"cache":        {cmdCache, "list or prune this worker's prepared environments: cache list | cache prune [--repo R] [--all]"},
		"stats":        {cmdStats, "print task outcomes per repository and model: stats [--by model|repo] [--repo R] [--since 30d] [--json]"},
		"admin":        {cmdAdmin, "serve the read-only admin pages: task list and traces (--admin-addr, loopback by default)"},
		"reach-probe":  {cmdReachProbe, "try to reach the given addresses and print those that answer (run by the worker inside its containers at start)"},
		"sandbox-exec": {cmdSandboxExec, "run commands inside a sandbox container (started by the worker, not by hand)"},
		"version":      {cmdVersion, "print this binary's version, commit and Go version"},
		"egress-proxy": {cmdEgressProxy, "the setup phase's forward proxy, in a container beside setup (started by the worker, not by hand)"},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := run(ctx, os.Args[1:], env); err != nil {
		fmt.Fprintln(os.Stderr, "agentbot:", err)
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

// usageError is a command line agentbot cannot read. It exits with status
// 2, as flag-parsing programs do, and its one line ends with where the
// command's help is.
type usageError struct {
	cmd string // "agentbot serve", as the flag set is named
	err error
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%v (see '%s --help')", e.err, e.cmd)
}
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf returns a usageError of the command fs parses.
func usageErrorf(fs *flag.FlagSet, format string, args ...any) error {
	return &usageError{cmd: fs.Name(), err: fmt.Errorf(format, args...)}
}

func exitCode(err error) int {
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		return 2
	}
	return 1
}

// isHelp tells whether arg asks for help, for commands that read their
// first argument before any flag set does.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

func run(ctx context.Context, args []string, env Env) error {
	cmds := commands()
	if len(args) == 0 {
		usage(env.Stderr, cmds)
		return &usageError{cmd: "agentbot", err: errors.New("no command given")}
	}
	if args[0] == "--version" {
		return cmdVersion(ctx, nil, env)
	}
	if args[0] == "help" && len(args) > 1 {
		// "agentbot help serve" is "agentbot serve --help".
		return run(ctx, append(args[1:], "--help"), env)
	}
	if isHelp(args[0]) {
		usage(env.Stdout, cmds)
		return nil
	}
	c, ok := cmds[args[0]]
	if !ok {
		return &usageError{cmd: "agentbot", err: fmt.Errorf("unknown command %q", args[0])}
	}
	err := c.run(ctx, args[1:], env)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the help was asked for, and printed on stdout
	}
	return err
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
	fmt.Fprintln(w, "\nRun 'agentbot COMMAND --help' for a command's flags.")
}

// newFlagSet returns a flag set for a subcommand whose flags also read
// AGENTBOT_<NAME> from the environment (--redis-url ← AGENTBOT_REDIS_URL).
// Call parseFlags after defining the flags: explicit flags win over the
// environment, which wins over the defaults.
func newFlagSet(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet("agentbot "+name, flag.ContinueOnError)
	// parseFlags prints the help itself, on stdout; a parse error becomes
	// the command's one-line usageError instead of the flag package's
	// message followed by every flag on stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n\nflags:\n", fs.Name())
		fs.PrintDefaults()
	}
	return fs
}

// setSynopsis makes the first line of fs's help synopsis, for commands
// that take arguments besides flags.
func setSynopsis(fs *flag.FlagSet, synopsis string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
}

// parseFlags applies the environment, then the command line. Asked for
// help, it prints it on stdout and returns flag.ErrHelp, which run turns
// into exit status 0; a bad flag is a usageError.
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
	return parseArgs(fs, args, env)
}

// parseArgs parses args without the environment: for the flags that
// follow a positional argument, as in "tasks show ID --json".
func parseArgs(fs *flag.FlagSet, args []string, env Env) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(env.Stdout)
		fs.Usage()
		fs.SetOutput(io.Discard)
		return flag.ErrHelp
	case err != nil:
		return &usageError{cmd: fs.Name(), err: err}
	}
	return nil
}
