package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/change"
)

// verifyFlags are config init --verify's: the sandbox's, the setup's
// network and the environment cache, as agentbot run's.
type verifyFlags struct {
	verify  bool
	sb      sandboxFlags
	setup   setupFlags
	envs    envCacheFlags
	dataDir string
}

func (v *verifyFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&v.verify, "verify", false, "run the policy's setup and each check once in the sandbox, as a task would, and say of each whether it runs")
	v.sb.register(fs)
	v.setup.register(fs)
	v.envs.register(fs)
	fs.StringVar(&v.dataDir, "data-dir", "", "with --verify: where the prepared environments are kept (envs/ in it), as a worker's --data-dir")
}

// verifyPolicy runs the policy text, inferred for the checkout repo, as a
// task would: its setup (agentbot run's, prepareRun), then each of its
// checks in a sandbox over the prepared environment, and prints of each
// whether it runs; getenv holds the registries' credentials named by
// variable. A setup that fails, or a check that cannot run, is the
// policy's fault, named with its line.
func verifyPolicy(ctx context.Context, repo, text string, vf verifyFlags, getenv func(string) string, out io.Writer) error {
	src, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	server, err := vf.setup.server()
	if err != nil {
		return err
	}
	p, err := validatePolicy(filepath.Join(src, policy.PolicyPath), []byte(text), server)
	if err != nil && !vf.setup.network && strings.Contains(err.Error(), "does not allow network during setup") {
		return fmt.Errorf("%w\n(config init --verify: pass --setup-network with an --allow-host for each host setup needs, or --config with the server config's setup.registries)", err)
	}
	if err != nil {
		return err
	}
	if vf.setup.network {
		p.Setup.Network = true
	}
	local, err := openLocal(ctx, src, vf.sb.setupCA, server)
	if err != nil {
		return fmt.Errorf("config init --verify: %w", err)
	}
	defer local.close()
	ws, caBundle := local.ws, local.caBundle
	id := fmt.Sprintf("init-%d", os.Getpid())
	p.Sandbox.Image = cmp.Or(p.Sandbox.Image, server.DefaultImage, vf.sb.image)
	drv, err := vf.sb.driver(ctx, id, nil)
	if err != nil {
		return fmt.Errorf("config init --verify: %w", err)
	}
	defer drv.Close()
	envs, err := vf.envs.open(vf.dataDir)
	if err != nil {
		return fmt.Errorf("config init --verify: open the environment cache: %w", err)
	}
	fmt.Fprintf(out, "verifying in %s:\n", p.Sandbox.Image)
	prepared, err := prepareRun(ctx, newRunSetup(drv, p, server, id, ws.Dir(), caBundle, getenv, out), envs, src, ws, out)
	if ee, ok := errors.AsType[*exitError](err); ok {
		fmt.Fprintf(out, "setup FAILS: change the policy's setup (%s line %d), or let it reach the hosts it needs (--allow-host, or --config's setup.allow_hosts and setup.registries):\n%v\n",
			policy.PolicyPath, lineOf(text, "setup:"), ee.err)
		return &exitError{code: 1, err: errors.New("the policy's setup fails; the checks did not run")}
	}
	if err != nil {
		return err
	}
	defer prepared.Env.Release()
	own := func(path string) bool {
		_, err := ws.Root().Stat(path)
		return err == nil
	}
	runs, err := change.ProveChecks(ctx, drv, prepared, p, ws.Dir(), id, own)
	if err != nil {
		return fmt.Errorf("config init --verify: %w", err)
	}
	if n := reportChecks(out, text, runs); n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d checks cannot run as the policy prepares them", n, len(runs))}
	}
	return nil
}

// reportChecks prints how each check ended, and returns how many cannot
// run: those are the policy's to fix, named with their line in text; a
// check that runs and fails is what a task is for.
func reportChecks(w io.Writer, text string, runs []change.ProvedCheck) int {
	n := 0
	for _, c := range runs {
		switch cr := c.CannotRun; {
		case c.Passed:
			fmt.Fprintf(w, "  %-8s runs (passes)           %s\n", c.Name, c.Run)
		case cr != nil:
			n++
			fmt.Fprintf(w, "  %-8s CANNOT RUN               %s\n           %s: the policy's fault; change %s line %d: %s\n%s\n",
				c.Name, c.Run, cr.Cause, policy.PolicyPath, lineOf(text, strconv.Quote(c.Run)), cr.Fix, indent(lastLines(c.Output, 5)))
		case c.TimedOut:
			fmt.Fprintf(w, "  %-8s runs (times out today)   %s\n", c.Name, c.Run)
		default:
			fmt.Fprintf(w, "  %-8s runs (fails today, exit %d) %s\n", c.Name, c.ExitCode, c.Run)
		}
	}
	return n
}

// lastLines is the end of s, where a failure says why.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func indent(s string) string {
	return "           | " + strings.ReplaceAll(s, "\n", "\n           | ")
}
