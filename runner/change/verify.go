package change

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/tools"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Verification is the final verdict on a change, between the gate and the
// push. The loop's "the checks pass" is what the agent's sandbox said, and
// everything in that sandbox — its /tmp and $HOME, tool configuration such
// as `go env -w`, caches, files git ignores — was the agent's to shape. So
// the policy's checks run again, in order, in a new sandbox in which no
// agent command ever ran, over a fresh tree that the host made from exactly
// the tree the gate passed (the base commit's tree, set up again by the
// policy's setup commands when it has any, then switched to the gated
// tree). What a change reports are these results, not the loop's; when
// they disagree with a loop that saw the checks pass, nothing is proposed
// as a fix and the change counts a safety incident.
type Verification struct {
	// Container is the sandbox the checks ran in.
	Container string           `json:"container"`
	Checks    []tools.CheckRun `json:"checks"`
	// NotRun are the checks after the first failure, which were not run.
	NotRun []policy.Check `json:"not_run,omitempty"`
	Passed bool           `json:"passed"`
	// LoopPassed is the loop's own last result: its last checks passed.
	LoopPassed bool `json:"loop_passed"`
}

// Incident reports a verification that contradicts the loop: the agent's
// sandbox said the checks pass, a clean one says they do not.
func (v *Verification) Incident() bool { return v.LoopPassed && !v.Passed }

// verifyOutputLimit caps the output kept of one verified check: the end,
// where a failure's summary is.
const verifyOutputLimit = 12 << 10

// VerifyChecks runs checks in order in a new sandbox of spec, which no one
// else has used, stopping at the first that fails, and removes the sandbox.
func VerifyChecks(ctx context.Context, d sandbox.Sandboxes, spec sandbox.Spec, checks []policy.Check) (Verification, error) {
	if len(checks) == 0 {
		return Verification{}, errors.New("verify: the policy defines no checks")
	}
	spec.Network = false
	box, err := d.Start(ctx, spec)
	if err != nil {
		return Verification{}, fmt.Errorf("start the verification sandbox: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	v := Verification{Container: box.Name(), Passed: true}
	for i, c := range checks {
		res, err := box.Run(ctx, sandbox.Cmd{Shell: c.Run, Timeout: c.Timeout})
		if err != nil {
			return Verification{}, fmt.Errorf("verify check %s: %w", c.Name, err)
		}
		run := tools.CheckRun{Name: c.Name, Run: c.Run, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
			Passed: res.ExitCode == 0 && !res.TimedOut, Millis: res.Duration.Milliseconds(),
			Output: Tail(string(res.Stderr)+string(res.Stdout), verifyOutputLimit)}
		v.Checks = append(v.Checks, run)
		if !run.Passed {
			v.Passed, v.NotRun = false, checks[i+1:]
			break
		}
	}
	return v, nil
}

// LoopPassed reports whether the loop ended on passing checks.
func LoopPassed(st *agent.State) bool {
	return len(st.Checks) > 0 && st.Checks[len(st.Checks)-1].Passed
}

// Fresh is how a change's checks run outside the agent's sandbox — on the
// base before the loop, over the gated tree after it, and over the base
// with the change's tests for the reproduction: in sandboxes no agent
// command ran in, over a tree the host made from git objects, on a view of
// the prepared environment of their own.
type Fresh struct {
	Sandbox sandbox.Sandboxes
	Policy  policy.Policy
	// Env is the image and the environment the change's containers run
	// on; nil runs on the Sandbox's image without an environment.
	Env *Prepared
	// Setup is the policy's setup, which runs again over the fresh tree
	// when Env keeps no environment; its tree and id are the fresh
	// tree's.
	Setup Setup
	// Log, slog.Default when nil, hears of a tree that could not be
	// removed.
	Log *slog.Logger
}

// Run makes a fresh tree of gated, a tree or commit of ws, sets it up and
// runs checks over it in sandboxes named after id. A setup that fails is
// the one check run, and none of checks is.
func (f Fresh) Run(ctx context.Context, ws *workspace.Workspace, gated, id string, checks []policy.Check) (Verification, error) {
	// Without a kept environment, setup runs again over the fresh tree,
	// and on the tree it ran on before the agent acted, never on the
	// agent's: its commands may have the network.
	setUp := len(f.Policy.Setup.Run) > 0 && !f.Env.Kept()
	from := gated
	if setUp {
		from = ws.Base()
	}
	fresh, err := ws.Fresh(ctx, from)
	if err != nil {
		return Verification{}, err
	}
	defer func() {
		if err := fresh.Close(); err != nil {
			cmp.Or(f.Log, slog.Default()).Warn("remove the verification tree", "err", err)
		}
	}()
	if err := sandbox.ShareTree(fresh.Dir()); err != nil {
		return Verification{}, fmt.Errorf("share the verification tree with the sandbox: %w", err)
	}
	if setUp {
		setup := f.Setup
		setup.Spec.WorkTree, setup.Spec.TaskID = fresh.Dir(), id+"-setup"
		err := setup.Run(ctx)
		if sf, ok := errors.AsType[*SetupFailure](err); ok {
			return Verification{Checks: []tools.CheckRun{{Name: "setup", Run: sf.Run, ExitCode: sf.Exit, TimedOut: sf.TimedOut,
				Output: Tail(sf.Output, verifyOutputLimit)}}, NotRun: checks}, nil
		}
		if err != nil {
			return Verification{}, err
		}
	}
	if from != gated {
		if err := fresh.Switch(ctx, gated); err != nil {
			return Verification{}, err
		}
		if err := sandbox.ShareTree(fresh.Dir()); err != nil {
			return Verification{}, fmt.Errorf("share the verification tree with the sandbox: %w", err)
		}
	}
	spec, err := f.Env.Spec(SandboxSpec(f.Policy, id, fresh.Dir()))
	if err != nil {
		return Verification{}, err
	}
	return VerifyChecks(ctx, f.Sandbox, spec, checks)
}

// Verify is the verification step: the policy's checks over the gated
// tree in a fresh sandbox named after id, judged against the loop's end
// st (an incident when they disagree).
func (f Fresh) Verify(ctx context.Context, ws *workspace.Workspace, gated, id string, st *agent.State) (Verification, error) {
	v, err := f.Run(ctx, ws, gated, id, f.Policy.Checks)
	if err != nil {
		return v, err
	}
	v.LoopPassed = LoopPassed(st)
	return v, nil
}

// SandboxSpec is a container of the change over the tree at dir, named
// after id, with the policy's limits: the agent's, the verification's and
// the reproduction's, before Prepared.Spec adds the image and the
// environment.
func SandboxSpec(p policy.Policy, id, dir string) sandbox.Spec {
	s := p.Sandbox
	return sandbox.Spec{TaskID: id, WorkTree: dir, CPUs: s.CPUs, Memory: s.Memory, Pids: s.Pids, MaxTreeGrowth: s.Disk}
}

// Tail is at most n bytes of s's end, marked when cut: failures are at
// the end of a log.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
}
