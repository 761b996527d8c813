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

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/tools"
)

// verifyFlags are config init --verify's: the setup's network and the
// environment cache, as agentbot run's, and the binary run in the sandbox.
type verifyFlags struct {
	verify   bool
	setup    setupFlags
	envs     envCacheFlags
	dataDir  string
	executor string
}

func (v *verifyFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&v.verify, "verify", false, "run the policy's setup and each check once in the sandbox, as a task would, and say of each whether it runs")
	v.setup.register(fs)
	v.envs.register(fs)
	fs.StringVar(&v.dataDir, "data-dir", "", "with --verify: where the prepared environments are kept (envs/ in it), as a worker's --data-dir")
	fs.StringVar(&v.executor, "executor", "", "with --verify: the static agentbot binary run inside the sandbox; default this binary")
}

// cannotRun says why a check that failed cannot run in the sandbox as the
// policy prepares it, a cause no change to the code removes: what is
// missing, and what to change in the policy; ok false when the check ran
// and failed, which a task is there to fix.
type cannotRun func(c tools.CheckRun) (cause, fix string, ok bool)

// commandNotFound is the shell's exit status 127: the command is not in
// the image.
func commandNotFound(c tools.CheckRun) (string, string, bool) {
	if c.ExitCode != 127 || c.TimedOut {
		return "", "", false
	}
	return "the command is not found in the sandbox image (exit status 127)",
		"name an image that has it in sandbox.image, or install it in setup.run with setup.network: true", true
}

// verifyPolicy runs the policy text, inferred for the checkout repo, as a
// task would: its setup (agentbot run's, runSetup), then each of its
// checks in a sandbox over the prepared environment, and prints of each
// whether it runs. A setup that fails, or a check that cannot run, is the
// policy's fault, named with its line.
func verifyPolicy(ctx context.Context, repo, text string, vf verifyFlags, out io.Writer) error {
	src, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	server, err := vf.setup.server()
	if err != nil {
		return err
	}
	p, err := validatePolicy(filepath.Join(src, app.PolicyPath), []byte(text), server)
	if err != nil && !vf.setup.network && strings.Contains(err.Error(), "does not allow network during setup") {
		return fmt.Errorf("%w\n(config init --verify: pass --setup-network with an --allow-host for each host setup needs, or --config with the server config's setup.registries)", err)
	}
	if err != nil {
		return err
	}
	if vf.setup.network {
		p.Setup.Network = true
	}
	executor := vf.executor
	if executor == "" {
		if executor, err = os.Executable(); err != nil {
			return fmt.Errorf("config init --verify: find this binary for the sandbox: %w", err)
		}
	}
	tmp, err := os.MkdirTemp("", "agentbot-init-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree, err := eval.CopyTree(ctx, src, tmp)
	if err != nil {
		return err
	}
	defer tree.Close()
	id := fmt.Sprintf("init-%d", os.Getpid())
	image := cmp.Or(p.Sandbox.Image, server.DefaultImage)
	drv, err := docker.New(ctx, docker.Options{Image: image, ExecutorPath: executor, WorkerID: id})
	if err != nil {
		return fmt.Errorf("config init --verify: connect to Docker: %w", err)
	}
	defer drv.Close()
	envs, err := vf.envs.open(vf.dataDir)
	if err != nil {
		return fmt.Errorf("config init --verify: open the environment cache: %w", err)
	}
	fmt.Fprintf(out, "verifying in %s:\n", image)
	prepared, err := runSetup(ctx, drv, envs, id, filepath.Base(src), image, tree.Dir(), p, server, out)
	if ee, ok := errors.AsType[*exitError](err); ok {
		fmt.Fprintf(out, "setup FAILS: change the policy's setup (%s line %d), or let it reach the hosts it needs (--allow-host, or --config's setup.allow_hosts and setup.registries):\n%v\n",
			app.PolicyPath, lineOf(text, "setup:"), ee.err)
		return &exitError{code: 1, err: errors.New("the policy's setup fails; the checks did not run")}
	}
	if err != nil {
		return err
	}
	defer prepared.Release()
	overlays, err := prepared.Overlays()
	if err != nil {
		return fmt.Errorf("config init --verify: the prepared environment: %w", err)
	}
	runs, err := runEachCheck(ctx, drv, p, tree.Dir(), id, overlays)
	if err != nil {
		return fmt.Errorf("config init --verify: %w", err)
	}
	if n := reportChecks(out, text, runs, commandNotFound); n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d checks cannot run as the policy prepares them", n, len(runs))}
	}
	return nil
}

// runEachCheck runs every check of p, as the final verification does
// (runner.VerifyChecks), going on in a new sandbox after each that fails,
// so that each is seen to run or not.
func runEachCheck(ctx context.Context, drv *docker.Driver, p app.Policy, dir, id string, overlays []docker.Overlay) ([]tools.CheckRun, error) {
	s := p.Sandbox
	var runs []tools.CheckRun
	for rest := p.Checks; len(rest) > 0; {
		v, err := runner.VerifyChecks(ctx, runner.DockerSandboxes(drv), docker.Spec{TaskID: fmt.Sprintf("%s-check%d", id, len(runs)), WorkTree: dir,
			CPUs: s.CPUs, Memory: s.Memory, Pids: s.Pids, MaxTreeGrowth: s.Disk, Overlays: overlays}, rest)
		if err != nil {
			return runs, err
		}
		runs = append(runs, v.Checks...)
		rest = v.NotRun
	}
	return runs, nil
}

// reportChecks prints how each check ended, and returns how many cannot
// run: those are the policy's to fix, named with their line in text; a
// check that runs and fails is what a task is for.
func reportChecks(w io.Writer, text string, runs []tools.CheckRun, why cannotRun) int {
	n := 0
	for _, c := range runs {
		switch cause, fix, cannot := why(c); {
		case c.Passed:
			fmt.Fprintf(w, "  %-8s runs (passes)           %s\n", c.Name, c.Run)
		case cannot:
			n++
			fmt.Fprintf(w, "  %-8s CANNOT RUN               %s\n           %s: the policy's fault; change %s line %d: %s\n%s\n",
				c.Name, c.Run, cause, app.PolicyPath, lineOf(text, strconv.Quote(c.Run)), fix, indent(lastLines(c.Output, 5)))
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
