package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox"
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
	if ok, err := r.admit(ctx, tk); !ok || err != nil {
		return err
	}
	if tk.issue.Pull != nil {
		return tk.rep.finish(ctx, app.StateRefused, fmt.Sprintf("`%s setup` works on an issue: it reads the default branch and opens a pull request of its own.",
			tk.policy.Policy.Trigger.Command), "")
	}
	def := tk.policy.Repo.DefaultBranch
	tg := target{branch: tk.policy.Policy.PullRequest.Branch(tk.Number, "setup"), base: def, prBase: def}
	if err := tk.rep.react(ctx, app.ReactionReceived); err != nil {
		return err
	}
	ctx, release, err := r.hold(ctx, tk)
	if err != nil {
		return err
	}
	tk.rep.phase(ctx, "admission")
	err = r.proposeSetup(ctx, tk, tg)
	release(err == nil)
	return err
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
		return tk.rep.finish(ctx, app.StateFailed, fmt.Sprintf("❌ **No policy to propose:** %s. Write `%s` by hand; `agentbot config schema` lists its keys.",
			app.Inert(err.Error(), ownIssue(tk)), policy.PolicyPath), "nothing inferred")
	}
	text := prop.YAML()
	candidate, err := buildPolicy(r.cfg.Server, text)
	if err != nil {
		return tk.rep.finish(ctx, app.StateFailed, fmt.Sprintf("❌ **The inferred policy does not hold under this server's config**, so it was not proposed:\n\n%s\n%s",
			app.CodeBlock(app.ErrorMessage(err), "", ownIssue(tk)), policyDetails(text, tk)), "policy refused")
	}
	existing, err := fs.ReadFile(ws.Root().FS(), policy.PolicyPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", policy.PolicyPath, err)
	}
	if existing != nil {
		if same, err := buildPolicy(r.cfg.Server, string(existing)); err == nil && sameProposal(same, candidate) {
			return tk.rep.finish(ctx, app.StateSucceeded, fmt.Sprintf("`%s` exists and already has what agentbot infers (image, setup and checks): nothing to propose.",
				policy.PolicyPath), "nothing to change")
		}
	}
	tk.policy.Policy = candidate // the policy being proved is the one setup and the checks run under
	pf, err := r.provePolicy(ctx, tk, ws)
	if err != nil {
		return err
	}
	body := setupBody(tk, prop, candidate, pf, existing != nil, r.cfg.Server)
	if pf.setup != nil {
		return tk.rep.finish(ctx, app.StateFailed, "❌ **The inferred setup fails**, so no pull request was opened.\n\n"+body+policyDetails(text, tk), "setup fails")
	}
	pr, err := r.pushPolicy(ctx, tk, ws, remote, tg, text, body)
	if err != nil {
		return err
	}
	if err := tk.rep.completeCheck(ctx, app.ConclusionNeutral, app.CheckOutput{Title: "Proposed " + policy.PolicyPath,
		Summary: body}); err != nil {
		return err
	}
	return tk.rep.finish(ctx, app.StateSucceeded, fmt.Sprintf("✅ Opened #%d with `%s`, proved in the sandbox.\n\n%s", pr.Number, policy.PolicyPath, body), "proposed")
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
		tk.rep.traceCheck(ctx, end, 0, "prove "+c.Name, c.CheckRun, "on "+shortSHA(ws.Base())+": "+c.Run)
	}
	tk.rep.phase(ctx, "checks")
	return pf, nil
}

// pushPolicy commits text as .github/agent.yml on the task's branch, once,
// and opens its pull request with body, or finds the one open.
func (r *Runner) pushPolicy(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote, tg target, text, body string) (app.PullRequest, error) {
	if tk.prog.Pushed == "" {
		if err := ws.Root().MkdirAll(".github", 0o755); err != nil {
			return app.PullRequest{}, fmt.Errorf("write %s: %w", policy.PolicyPath, err)
		}
		if err := ws.Root().WriteFile(policy.PolicyPath, []byte(text), 0o644); err != nil {
			return app.PullRequest{}, fmt.Errorf("write %s: %w", policy.PolicyPath, err)
		}
		// The change is agentbot's own, not the model's: the gate allows
		// the policy file and nothing else.
		only := tk.policy.Policy
		only.Paths = policy.Paths{Allow: []string{policy.PolicyPath}}
		if _, err := ws.Gate(ctx, only); err != nil {
			return app.PullRequest{}, fmt.Errorf("gate the policy file: %w", err)
		}
		msg := "Add " + policy.PolicyPath + ", agentbot's policy for this repository\n\nInferred from the tree and proved in the sandbox; see the pull request."
		if err := r.commitAndPush(ctx, tk, ws, remote, msg, ""); err != nil {
			return app.PullRequest{}, err
		}
	}
	return tk.rep.pullRequest(ctx, tg, "Add agentbot's policy ("+policy.PolicyPath+")", body, tk.policy.Policy.PullRequest)
}

// setupBody is the pull request's body, and the status comment's: what
// was detected, the setup, each check's result, and setup's network.
// Every text from the repository or its commands goes out inert.
func setupBody(tk *task, prop policyinit.Proposal, p policy.Policy, pf proof, replaces bool, server policy.ServerConfig) string {
	own := ownIssue(tk)
	var b strings.Builder
	if replaces {
		fmt.Fprintf(&b, "`%s` exists on the default branch and says something else: this replaces it with what agentbot infers. Keep what you wrote by hand that you still want.\n\n", policy.PolicyPath)
	}
	fmt.Fprintf(&b, "agentbot's policy for this repository, inferred from the tree at `%s` and proved in the sandbox, as `agentbot config init --verify` would. Asked for in #%d.\n\n",
		shortSHA(tk.prog.Base), tk.Number)
	b.WriteString("**Detected**\n\n")
	for _, t := range prop.Toolchains {
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, app.Inert(strings.Join(t.Evidence, ", "), own))
	}
	for _, n := range prop.Primary().Notes {
		fmt.Fprintf(&b, "- note: %s\n", app.Inert(n, own))
	}
	fmt.Fprintf(&b, "\n**Image:** `%s`\n\n", p.Sandbox.Image)
	switch {
	case len(p.Setup.Run) == 0:
		b.WriteString("**Setup:** none: nothing to download\n\n")
	case pf.setup != nil:
		fmt.Fprintf(&b, "**Setup:** ❌ %s\n\n%s\n", app.Inert(pf.setup.Error(), own), app.CodeBlock(change.Tail(pf.setup.Output, outputExcerpt), "", own))
	default:
		fmt.Fprintf(&b, "**Setup:** ✅ %s (%s)\n\n", runsList(p.Setup.Run, own), app.Inert(pf.detail, own))
	}
	if len(pf.checks) > 0 {
		b.WriteString("**Checks**, each run once on the default branch over the prepared environment:\n\n| check | command | result |\n| --- | --- | --- |\n")
		for _, c := range pf.checks {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, app.CodeSpan(c.Run, own), checkResult(c, own))
		}
		b.WriteString("\n")
	}
	b.WriteString(hostsText(tk, p, server, pf))
	return b.String()
}

// checkResult is one proved check's result, in a table cell.
func checkResult(c change.ProvedCheck, own app.IssueRef) string {
	switch {
	case c.Passed:
		return "✅ passes"
	case c.CannotRun != nil:
		return "⛔ cannot run: " + app.Inert(c.CannotRun.Cause+". "+c.CannotRun.Fix, own)
	case c.TimedOut:
		return "⏱️ runs, and times out today"
	}
	return fmt.Sprintf("⚠️ runs, and fails today (exit %d): a task's work", c.ExitCode)
}

// hostsText says whom setup's network may reach and whom it did: the
// registries and hosts the server config allows, each host the egress
// proxy connected setup to (with the entry that allowed it), and each it
// refused, with the server config's line that allows it.
func hostsText(tk *task, p policy.Policy, server policy.ServerConfig, pf proof) string {
	if !p.Setup.Network {
		return ""
	}
	var b strings.Builder
	var allowed []string
	for _, r := range server.SetupRegistries {
		allowed = append(allowed, fmt.Sprintf("%s registry `%s`", r.Ecosystem, r.Host.String()))
	}
	for _, a := range server.SetupAllowHosts {
		allowed = append(allowed, "`"+a.String()+"`")
	}
	if len(allowed) == 0 {
		allowed = []string{"no host"}
	}
	fmt.Fprintf(&b, "**Setup's network** goes through the egress proxy to %s (the server config's `setup.registries` and `setup.allow_hosts`).\n", strings.Join(allowed, ", "))
	switch {
	case len(tk.reached) > 0:
		b.WriteString("Setup needed, and reached:\n\n")
		for _, x := range tk.reached {
			fmt.Fprintf(&b, "- %s (%s)\n", app.CodeSpan(x.String(), app.IssueRef{}), allowedBy(server, x))
		}
		b.WriteString("\n")
	case strings.HasPrefix(pf.detail, "setup: cached"):
		b.WriteString("Setup reused the environment an earlier setup prepared, and connected nowhere.\n")
	default:
		b.WriteString("Setup reached no host.\n")
	}
	if len(tk.refused) == 0 {
		b.WriteString("The proxy refused no connection.\n")
		return b.String()
	}
	b.WriteString("The proxy refused these, which setup needed; an operator who trusts them adds them to the server config:\n\n")
	seen := map[string]bool{}
	for _, x := range tk.refused {
		host := egress.CutHost(x.Host)
		if seen[host] {
			continue
		}
		seen[host] = true
		fmt.Fprintf(&b, "- %s — %s\n", app.CodeSpan(host, app.IssueRef{}), app.Inert(x.Reason, app.IssueRef{}))
	}
	b.WriteString("\n```yaml\nsetup:\n  allow_hosts:\n")
	for _, x := range tk.refused {
		if host := egress.CutHost(x.Host); seen[host] {
			fmt.Fprintf(&b, "    - %s\n", strconv.Quote(host))
			delete(seen, host)
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// allowedBy names the server config's entry that let setup reach x: a
// registry, or setup.allow_hosts.
func allowedBy(server policy.ServerConfig, x egress.Reach) string {
	for _, r := range server.SetupRegistries {
		if app.HostAllowed(r.AllowedHosts(), x.Host, x.Port) {
			return "the " + r.Ecosystem + " registry"
		}
	}
	return "`setup.allow_hosts`"
}

// runsList is commands as code spans, joined.
func runsList(runs []string, own app.IssueRef) string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = app.CodeSpan(r, own)
	}
	return strings.Join(out, ", ")
}

// policyDetails is the proposed policy, collapsed, for a report that
// proposes no pull request.
func policyDetails(text string, tk *task) string {
	return fmt.Sprintf("\n<details><summary>The policy agentbot inferred</summary>\n\n%s\n</details>\n", app.CodeBlock(text, "yaml", ownIssue(tk)))
}
