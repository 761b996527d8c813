package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// fix runs a fix or a follow-up: admission, then the loop in a sandbox
// over a fresh checkout, then the gate, the push and the pull request.
func (r *Runner) fix(ctx context.Context, tk *task) error {
	if ok, err := r.admit(ctx, tk); !ok || err != nil {
		return err
	}
	p := tk.policy.Policy
	if err := p.RequireChecks(); err != nil {
		return r.refuse(ctx, tk, err)
	}
	target, err := r.target(tk)
	if err != nil {
		return r.refuse(ctx, tk, err)
	}
	r.phase(ctx, tk, "admission")
	if err := tk.inst.React(ctx, tk.Task, app.ReactionReceived); err != nil {
		return err
	}
	if err := r.cfg.Store.SetState(ctx, tk.ID, app.StateRunning, "checkout"); err != nil {
		return err
	}
	if err := tk.status.Set(ctx, runningText(tk, "checking out "+target.base)); err != nil {
		return err
	}

	// The token reaches the clone and the push only, on the host.
	tok, err := r.cfg.GitHub.Token(ctx, tk.InstallationID, tk.Repo, app.TokenPermissions{Contents: "write"})
	if err != nil {
		return err
	}
	remote := workspace.Remote{URL: tk.policy.Repo.CloneURL, Token: tok.Value}
	base := tk.prog.Base
	if base == "" {
		base = target.base
	}
	ws, err := r.cfg.Workspaces.Checkout(ctx, workspace.CheckoutOptions{Repo: tk.Repo, Remote: remote, Base: base})
	if err != nil {
		return err
	}
	defer ws.Close()
	if tk.prog.Base == "" {
		tk.prog.Base, tk.prog.Branch = ws.Base(), target.branch
		if err := r.saveProgress(ctx, tk.ID, tk.prog); err != nil {
			return err
		}
	}
	r.phase(ctx, tk, "workspace")

	check := tk.inst.CheckRun(tk.Repo, tk.prog.Base, tk.ID, tk.prog.CheckRunID)
	if err := check.Start(ctx, app.CheckOutput{Title: "Working on " + issueRef(tk), Summary: quoteRequest(tk)}); err != nil {
		return err
	}
	if tk.prog.CheckRunID != check.ID() {
		tk.prog.CheckRunID = check.ID()
		if err := r.saveProgress(ctx, tk.ID, tk.prog); err != nil {
			return err
		}
	}

	st, stoppedBy, err := r.loop(ctx, tk, ws)
	if err != nil {
		return err
	}
	tk.run = st
	r.phase(ctx, tk, "agent")
	if stoppedBy != "" {
		return r.fail(ctx, tk, check, st, failure{stoppedBy: stoppedBy})
	}
	switch st.Status {
	case app.StateAwaitingApproval:
		if err := r.cfg.Store.SetState(ctx, tk.ID, st.Status, "waiting for /agent approve or /agent deny"); err != nil {
			return err
		}
		return tk.status.Set(ctx, approvalText(tk, st))
	case app.StateSucceeded:
		return r.deliver(ctx, tk, ws, remote, target, check, st, nil)
	}
	f := failure{stop: st.Stop}
	if tk.policy.Policy.PullRequest.OnFailure == "draft_pr" && st.Diff != "" {
		return r.deliver(ctx, tk, ws, remote, target, check, st, &f)
	}
	return r.fail(ctx, tk, check, st, f)
}

// target is where a task's change goes: the branch, the commit it starts
// from (a ref the remote has) and the pull request's base.
type target struct {
	branch   string
	base     string
	prBase   string
	existing bool // the branch is an open pull request's: push on top of it
}

// target decides the branch: a new agent branch for an issue, or the pull
// request's own branch for a command on one in the same repository.
func (r *Runner) target(tk *task) (target, error) {
	def := tk.policy.Repo.DefaultBranch
	if pull := tk.issue.Pull; pull != nil {
		if pull.HeadRepo != tk.Repo {
			return target{}, app.Errorf(app.EPolicy,
				"agentbot pushes only to branches of %s; the branch of #%d lives in %s.", tk.Repo, tk.Number, pull.HeadRepo)
		}
		return target{branch: pull.Head, base: pull.HeadSHA, prBase: pull.Base, existing: true}, nil
	}
	return target{branch: tk.policy.Policy.PullRequest.Branch(tk.Number, slug(tk.issue.Title)), base: def, prBase: def}, nil
}

// loop runs the agent in a network-less sandbox over ws. When "/agent
// stop" ends it, the state so far is returned with who stopped it, once the
// sandbox is removed.
func (r *Runner) loop(ctx context.Context, tk *task, ws *workspace.Workspace) (_ *agent.State, stoppedBy string, err error) {
	if tk.policy.Policy.Model.Edit == "" {
		tk.policy.Policy.Model.Edit = r.cfg.Models.Edit
	}
	if tk.policy.Policy.Model.Fast == "" {
		tk.policy.Policy.Model.Fast = r.cfg.Models.Fast
	}
	p := tk.policy.Policy
	if err := sandbox.ShareTree(ws.Dir()); err != nil {
		return nil, "", fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	if err := r.setup(ctx, tk, ws); err != nil {
		return nil, "", err
	}
	system, text, err := renderPrompts(tk, ws)
	if err != nil {
		return nil, "", err
	}
	box, err := r.cfg.Sandbox.Start(ctx, sandbox.Spec{TaskID: tk.ID, WorkTree: ws.Dir(),
		CPUs: p.Sandbox.CPUs, Memory: p.Sandbox.Memory, Pids: p.Sandbox.Pids})
	if err != nil {
		return nil, "", fmt.Errorf("start the sandbox: %w", err)
	}
	defer box.Close(ctx)
	a, err := agent.New(ctx, agent.Config{
		TaskID: tk.ID, Policy: p, Model: r.cfg.Model, Fast: r.cfg.Fast, Runner: box, Workspace: ws,
		Store: r.cfg.Store, System: system, Task: text, Logger: tk.log,
		Observe: r.observe(ctx, tk), ObserveModel: r.observeModel(ctx, tk),
	})
	if err != nil {
		return nil, "", err
	}
	// A resumed loop may have applied its saved diff as the host's user.
	if err := sandbox.ShareTree(ws.Dir()); err != nil {
		return nil, "", fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	if err := tk.status.Set(ctx, runningText(tk, "the agent is working")); err != nil {
		return nil, "", err
	}
	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	by := r.watchStop(loopCtx, tk.ID, cancel)
	st, err := a.Run(loopCtx)
	if err != nil && ctx.Err() == nil && by() != "" {
		// The loop saved its state before it noticed; the deferred Close
		// removes the sandbox before the stop is reported.
		return a.State(), by(), nil
	}
	return st, "", err
}

// setup runs the policy's setup commands in their own container, with
// network only when the policy asks and the server allows it, before the
// agent acts.
func (r *Runner) setup(ctx context.Context, tk *task, ws *workspace.Workspace) error {
	s := tk.policy.Policy.Setup
	if len(s.Run) == 0 {
		return nil
	}
	defer r.phase(ctx, tk, "setup")
	p := tk.policy.Policy.Sandbox
	box, err := r.cfg.Sandbox.Start(ctx, sandbox.Spec{TaskID: tk.ID + "-setup", WorkTree: ws.Dir(),
		CPUs: p.CPUs, Memory: p.Memory, Pids: p.Pids, Network: s.Network})
	if err != nil {
		return fmt.Errorf("start the setup sandbox: %w", err)
	}
	defer box.Close(ctx)
	for _, line := range s.Run {
		res, err := box.Run(ctx, sandbox.Cmd{Shell: line, Timeout: s.Timeout})
		if err != nil {
			return fmt.Errorf("setup %q: %w", line, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("setup %q exited %d: %s", line, res.ExitCode, tail(string(res.Stderr)+string(res.Stdout), 2000))
		}
	}
	return nil
}

// deliver gates, commits and pushes the change, opens (or finds) the pull
// request and completes the report. failed is set when the loop failed and
// the policy asks for a draft pull request of the partial change anyway.
func (r *Runner) deliver(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote,
	tg target, check *app.CheckRun, st *agent.State, failed *failure) error {
	p := tk.policy.Policy
	title, body := prTitle(tk, st), prBody(tk, st)
	if failed != nil {
		p.PullRequest.Draft = true
		title = head("Draft: "+tk.issue.Title, 72)
		body = fmt.Sprintf("⚠️ **Draft: the checks did not pass** (%s). The policy asks for the partial change as a draft.\n\n%s",
			reasonLine(st, *failed), body)
	}
	if tk.prog.Pushed == "" {
		if err := r.cfg.Store.SetState(ctx, tk.ID, app.StateRunning, "gate and push"); err != nil {
			return err
		}
		report, err := ws.Gate(ctx, p)
		r.phase(ctx, tk, "gate")
		if err != nil {
			if _, user := errors.AsType[*app.Error](err); user {
				tk.gated = true
				return r.fail(ctx, tk, check, st, failure{gate: err, diff: report.Diff})
			}
			return err
		}
		sha, err := ws.Commit(ctx, workspace.CommitOptions{
			Message:   commitMessage(tk, st),
			Author:    r.cfg.Bot,
			CoAuthors: []workspace.Signature{{Name: tk.Requester, Email: tk.Requester + "@users.noreply.github.com"}},
		})
		if errors.Is(err, workspace.ErrNoChanges) {
			return r.fail(ctx, tk, check, st, failure{gate: app.Errorf(app.EPolicy, "The checks pass but the agent changed nothing, so there is nothing to propose.")})
		}
		if err != nil {
			return err
		}
		lease := ""
		if tg.existing {
			lease = tk.prog.Base
		}
		if err := ws.Push(ctx, remote, tk.prog.Branch, lease); err != nil {
			return err
		}
		tk.prog.Pushed = sha
		if err := r.saveProgress(ctx, tk.ID, tk.prog); err != nil {
			return err
		}
		r.phase(ctx, tk, "push")
	}
	if err := r.auditPush(ctx, tk); err != nil {
		return err
	}
	pr, err := tk.inst.EnsurePullRequest(ctx, tk.Repo, app.PullRequestDraft{
		Head: tk.prog.Branch, Base: tg.prBase, Title: title, Body: body, Spec: p.PullRequest,
	})
	if err != nil {
		return err
	}
	tk.prog.PR = &pr
	if err := r.saveProgress(ctx, tk.ID, tk.prog); err != nil {
		return err
	}
	if err := r.auditPullRequest(ctx, tk, tg, pr); err != nil {
		return err
	}
	tk.log.Info("pull request ready", "pr", pr.Number, "created", pr.Created, "url", pr.HTMLURL, "draft", failed != nil)
	if failed != nil {
		return r.fail(ctx, tk, check, st, *failed)
	}
	if err := check.Complete(ctx, app.ConclusionSuccess, app.CheckOutput{
		Title: "Pull request #" + fmt.Sprint(pr.Number), Summary: checksTable(st) + "\n" + usageLine(st), Text: r.checkText(ctx, tk, st),
	}); err != nil {
		return err
	}
	return r.finish(ctx, tk, app.StateSucceeded, doneText(tk, st, pr), fmt.Sprintf("pull request #%d", pr.Number))
}

// failure says why a task ends without a pull request: the loop's stop,
// or the host gate's refusal.
type failure struct {
	stop      *agent.Stop
	stoppedBy string // the login that asked /agent stop
	gate      error
	diff      string // the gate's diff, when the gate refused
}

// fail reports a task that ends without a pull request.
func (r *Runner) fail(ctx context.Context, tk *task, check *app.CheckRun, st *agent.State, f failure) error {
	text := failureText(tk, st, f)
	conclusion := app.ConclusionFailure
	if st.Status == app.StateStopped || f.stoppedBy != "" {
		conclusion = app.ConclusionCancelled
	}
	if err := check.Complete(ctx, conclusion, app.CheckOutput{Title: "No pull request: " + reasonLine(st, f), Summary: text, Text: r.checkText(ctx, tk, st)}); err != nil {
		return err
	}
	final := app.StateFailed
	switch {
	case f.stoppedBy != "":
		final = app.StateStopped
	case st.Status.Final() && st.Status != app.StateSucceeded:
		final = st.Status
	}
	return r.finish(ctx, tk, final, text, reasonLine(st, f))
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug is a branch-safe short form of an issue title: the same title always
// gives the same slug.
func slug(title string) string {
	s := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(title), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	if s == "" {
		return "fix"
	}
	return s
}
