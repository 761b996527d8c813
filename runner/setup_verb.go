package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/workspace"
)

// setupVerb answers "/agent setup" on an issue: it infers the policy from
// the default branch's tree (app/policyinit, as "agentbot config init"
// does), proves it as "config init --verify" does — the setup in its own
// container through the egress proxy, then each check over the prepared
// environment (change.ProveChecks) in a fresh tree of the same commit — and opens
// a pull request adding .github/agent.yml whose body says what was
// detected, how each check ended and whom setup's network reached. A
// repository whose policy already says the same is told so, and nothing
// is proposed. Who may ask is who may ask for a fix.
func (r *Runner) setupVerb(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	if tk.issue.Pull != nil {
		return finished(app.StateRefused, text.SetupOnPull(tk.policy.Policy.Trigger.Command), "")
	}
	def := tk.policy.Repo.DefaultBranch
	tg := target{branch: tk.policy.Policy.PullRequest.Branch(tk.Number, "setup"), base: def, prBase: def}
	if err := tk.rep.react(ctx, app.ReactionReceived); err != nil {
		return err
	}
	return r.held(ctx, tk, func(ctx context.Context) error {
		tk.rep.phase(ctx, "admission")
		return r.proposeSetup(ctx, tk, tg)
	})
}

// proposeSetup is the held part of "/agent setup": checkout, inference,
// proof, and the pull request or the report of why there is none.
func (r *Runner) proposeSetup(ctx context.Context, tk *task, tg target) error {
	ws, remote, err := r.workspace(ctx, tk, tg)
	if err != nil {
		return err
	}
	defer ws.Close()
	prop, err := policyinit.Infer(ws.Root().FS())
	if err != nil {
		return finished(app.StateFailed, text.NothingInferred(tk.request(), err), "nothing inferred")
	}
	yaml := prop.YAML()
	candidate, err := buildPolicy(r.cfg.Server, yaml)
	if err != nil {
		return finished(app.StateFailed, text.PolicyRefused(tk.request(), err, yaml), "policy refused")
	}
	existing, err := fs.ReadFile(ws.Root().FS(), policy.PolicyPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", policy.PolicyPath, err)
	}
	if existing != nil {
		if same, err := buildPolicy(r.cfg.Server, string(existing)); err == nil && sameProposal(same, candidate) {
			return finished(app.StateSucceeded, text.PolicyUnchanged, "nothing to change")
		}
	}
	tk.policy.Policy = candidate // the policy being proved is the one setup and the checks run under
	pf, err := r.provePolicy(ctx, tk, ws)
	if err != nil {
		return err
	}
	reached, refused := tk.rep.egress()
	body := text.SetupBody(text.Setup{Request: tk.request(), Base: tk.prog.Base, Proposal: prop, Policy: candidate, Server: r.cfg.Server,
		Replaces: existing != nil, Detail: pf.detail, Failed: pf.setup, Checks: pf.checks, Reached: reached, Refused: refused})
	if pf.setup != nil {
		return finished(app.StateFailed, text.SetupFails(tk.request(), body, yaml), "setup fails")
	}
	pr, err := r.pushPolicy(ctx, tk, ws, remote, tg, yaml, body)
	if err != nil {
		return err
	}
	return finished(app.StateSucceeded, text.PolicyProposed(pr.Number, body), "proposed").withCheck(app.ConclusionNeutral, text.ProposedCheck(body))
}

// buildPolicy is the policy text makes over the built-in defaults, under
// server's caps.
func buildPolicy(server policy.ServerConfig, text string) (policy.Policy, error) {
	raw, err := policy.ParsePolicy(policy.PolicyPath, []byte(text))
	if err != nil {
		return policy.Policy{}, err
	}
	return policy.BuildPolicy(server, raw)
}

// sameProposal says whether policy have already sets what the inference
// sets: the image, the setup and the checks' commands.
func sameProposal(have, want policy.Policy) bool {
	runs := func(p policy.Policy) []string {
		var out []string
		for _, c := range p.Checks {
			out = append(out, c.Run)
		}
		return out
	}
	return have.Sandbox.Image == want.Sandbox.Image && have.Setup.Network == want.Setup.Network &&
		slices.Equal(have.Setup.Run, want.Setup.Run) && slices.Equal(runs(have), runs(want))
}

// proof is how a proposed policy ran: its setup's line, or its failure,
// and each check.
type proof struct {
	detail string        // "setup: built KEY", as a task's trace says it
	setup  *SetupFailure // the setup failed; no check ran
	checks []change.ProvedCheck
}

// provePolicy runs the task's policy over a fresh tree of the workspace's
// base, as "config init --verify" runs it over a checkout: the setup
// (kept in the environment cache, as a task's would be), then every
// check. The workspace's own tree stays as checked out, so that the
// commit holds the policy file and nothing setup or the checks wrote.
func (r *Runner) provePolicy(ctx context.Context, tk *task, ws *workspace.Workspace) (proof, error) {
	if err := tk.rep.running(ctx, "setup", "running the inferred setup and checks in the sandbox"); err != nil {
		return proof{}, err
	}
	fresh, err := ws.Fresh(ctx, ws.Base())
	if err != nil {
		return proof{}, err
	}
	defer func() {
		if err := fresh.Close(); err != nil {
			tk.log.Warn("remove the setup tree", "err", err)
		}
	}()
	if err := sandbox.ShareTree(fresh.Dir()); err != nil {
		return proof{}, fmt.Errorf("share the setup tree with the sandbox: %w", err)
	}
	s := r.setupOf(ctx, tk, fresh.Dir(), tk.ID+"-setup")
	prepared := &Prepared{Image: s.Spec.Image}
	var pf proof
	switch {
	case r.cfg.Envs != nil:
		env, detail, err := s.Prepare(ctx, r.cfg.Envs, envOwner(tk), tk.Repo, os.DirFS(fresh.Dir()))
		pf.detail = detail
		if err == nil {
			prepared.Env = env
			defer prepared.Release(tk.log)
		} else if pf.setup, _ = errors.AsType[*SetupFailure](err); pf.setup == nil {
			return proof{}, err
		}
	case len(s.Policy.Run) > 0:
		err := s.Run(ctx)
		if pf.setup, _ = errors.AsType[*SetupFailure](err); pf.setup == nil && err != nil {
			return proof{}, err
		}
	}
	tk.rep.setupPhase(ctx, pf.detail)
	if pf.setup != nil {
		return pf, nil
	}
	own := func(path string) bool {
		_, err := ws.Root().Stat(path)
		return err == nil
	}
	if pf.checks, err = change.ProveChecks(ctx, r.cfg.Sandbox, prepared, tk.policy.Policy, fresh.Dir(), tk.ID+"-prove", own); err != nil {
		return proof{}, fmt.Errorf("prove the checks: %w", err)
	}
	end := time.Now().UTC()
	for _, c := range pf.checks {
		tk.rep.traceCheck(ctx, end, 0, "prove "+c.Name, c.CheckRun, "on "+text.ShortSHA(ws.Base())+": "+c.Run)
	}
	tk.rep.phase(ctx, "checks")
	return pf, nil
}

// pushPolicy commits yaml as .github/agent.yml on the task's branch, once,
// and opens its pull request with body, or finds the one open.
func (r *Runner) pushPolicy(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote, tg target, yaml, body string) (app.PullRequest, error) {
	if tk.prog.Pushed == "" {
		if err := ws.Root().MkdirAll(".github", 0o755); err != nil {
			return app.PullRequest{}, fmt.Errorf("write %s: %w", policy.PolicyPath, err)
		}
		if err := ws.Root().WriteFile(policy.PolicyPath, []byte(yaml), 0o644); err != nil {
			return app.PullRequest{}, fmt.Errorf("write %s: %w", policy.PolicyPath, err)
		}
		// The change is agentbot's own, not the model's: the gate allows
		// the policy file and nothing else.
		only := tk.policy.Policy
		only.Paths = policy.Paths{Allow: []string{policy.PolicyPath}}
		if _, err := ws.Gate(ctx, only); err != nil {
			return app.PullRequest{}, fmt.Errorf("gate the policy file: %w", err)
		}
		if err := r.commitAndPush(ctx, tk, ws, remote, text.PolicyCommit, ""); err != nil {
			return app.PullRequest{}, err
		}
	}
	return tk.rep.pullRequest(ctx, tg, text.PolicyTitle, body, tk.policy.Policy.PullRequest)
}
