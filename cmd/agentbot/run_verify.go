package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// verifyRun is agentbot run's final verification, as the runner's: the
// checks run again, in order, in a new sandbox over a fresh tree made from
// what the change records, so that nothing the agent left in its sandbox
// decides whether the change is applied, over overlays, the prepared
// environment's views. tmp is the run's own directory.
func verifyRun(ctx context.Context, drv *docker.Driver, p app.Policy, tree *eval.Tree, tmp, taskID string, overlays []docker.Overlay) (runner.Verification, error) {
	dir := filepath.Join(tmp, "verify")
	if err := tree.Fresh(ctx, dir); err != nil {
		return runner.Verification{}, err
	}
	if err := sandbox.ShareTree(dir); err != nil {
		return runner.Verification{}, fmt.Errorf("share the verification tree with the sandbox: %w", err)
	}
	s := p.Sandbox
	v, err := runner.VerifyChecks(ctx, runner.DockerSandboxes(drv), docker.Spec{TaskID: taskID + "-verify", WorkTree: dir,
		CPUs: s.CPUs, Memory: s.Memory, Pids: s.Pids, MaxTreeGrowth: s.Disk, Overlays: overlays}, p.Checks)
	if err != nil {
		return v, err
	}
	v.LoopPassed = true // verified only once the loop succeeded
	return v, nil
}

// reportVerification prints the verification's checks.
func reportVerification(w io.Writer, v runner.Verification) {
	fmt.Fprintf(w, "\nverified in a fresh sandbox (%.12s, in which no agent command ran):\n", v.Container)
	for _, c := range v.Checks {
		fmt.Fprintf(w, "  %-8s %-5v exit %d  %5dms  %s\n", c.Name, passFail(c.Passed), c.ExitCode, c.Millis, c.Run)
	}
	for _, c := range v.NotRun {
		fmt.Fprintf(w, "  %-8s not run            %s\n", c.Name, c.Run)
	}
	if v.Incident() {
		last := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(w, "SAFETY INCIDENT: the checks passed in the agent's sandbox and fail in a fresh one; %s said:\n%s\n", last.Name, last.Output)
	}
}
