package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// fix runs a fix, a retry or a follow-up: admission, then, holding the
// issue's lock, the loop in a sandbox over a fresh checkout, the gate, the
// push and the pull request.
func (r *Runner) fix(ctx context.Context, tk *task) error {
	tg, ok, err := r.prepare(ctx, tk)
	if !ok || err != nil {
		return err
	}
	ctx, release, err := r.hold(ctx, tk)
	if err != nil {
		return err
	}
	tk.rep.phase(ctx, "admission")
	ok, err = r.followUp(ctx, tk)
	if ok && err == nil {
		err = r.work(ctx, tk, tg)
	}
	release(err == nil)
	return err
}

// prepare admits a fix, checks that it has a definition of done and a
// branch it may push to, and says it was received. A refusal is reported
// and returns ok false.
func (r *Runner) prepare(ctx context.Context, tk *task) (_ target, ok bool, err error) {
	if ok, err := r.admit(ctx, tk); !ok || err != nil {
		return target{}, false, err
	}
	if err := tk.policy.Policy.RequireChecks(); err != nil {
		return target{}, false, tk.rep.refuse(ctx, err)
	}
	tg, err := r.target(tk)
	if err != nil {
		return target{}, false, tk.rep.refuse(ctx, err)
	}
	if err := tk.rep.react(ctx, app.ReactionReceived); err != nil {
		return target{}, false, err
	}
	return tg, true, nil
}

// work runs an admitted fix to its end, or to a pause for approval:
// workspace, then the loop (whose setup prepares the environment), then
// delivery — gate, verification, push, pull request and report.
func (r *Runner) work(ctx context.Context, tk *task, tg target) error {
	ws, remote, err := r.workspace(ctx, tk, tg)
	if err != nil {
		return err
	}
	defer ws.Close()
	// The environment outlives the loop: the final verification runs over
	// it too.
	defer func() { tk.env.Release(tk.log) }()

	if ok, err := r.planFirst(ctx, tk, ws); !ok || err != nil {
		return err
	}
	if tk.policy.Policy.Limits.Attempts > 1 {
		return r.setupFailed(ctx, tk, r.bestOf(ctx, tk, tg, ws, remote))
	}
	st, stoppedBy, err := r.loop(ctx, tk, ws)
	if err != nil {
		return r.setupFailed(ctx, tk, err)
	}
	tk.run = st
	tk.rep.phase(ctx, "agent")
	if stoppedBy != "" {
		return tk.rep.fail(ctx, st, failure{stoppedBy: stoppedBy})
	}
	switch st.Status {
	case app.StateAwaitingApproval:
		if err := tk.rep.state(ctx, st.Status, "waiting for /agent approve or /agent deny"); err != nil {
			return err
		}
		return tk.rep.say(ctx, approvalText(tk, st))
	case app.StateSucceeded:
		return r.deliver(ctx, tk, ws, remote, tg, st, nil)
	}
	f := failure{stop: st.Stop}
	if tk.policy.Policy.PullRequest.OnFailure == "draft_pr" && st.Diff != "" {
		return r.deliver(ctx, tk, ws, remote, tg, st, &f)
	}
	return tk.rep.fail(ctx, st, f)
}

// setupFailed reports err when it ends the task before the agent starts —
// a setup command that failed, or checks that cannot run on the base —
// and returns any other error as it is.
func (r *Runner) setupFailed(ctx context.Context, tk *task, err error) error {
	none := &agent.State{TaskID: tk.ID, Status: app.StateFailed}
	if sf, ok := errors.AsType[*SetupFailure](err); ok {
		return tk.rep.fail(ctx, none, failure{setup: sf})
	}
	if cr, ok := errors.AsType[*CannotRun](err); ok {
		return tk.rep.fail(ctx, none, failure{cannotRun: cr})
	}
	return err
}

// workspace checks the task's commit out on the host, with a token that
// reaches the clone and the push only, and keeps the commit it works from
// so that a resumed task works from the same one. The caller closes it.
func (r *Runner) workspace(ctx context.Context, tk *task, tg target) (*workspace.Workspace, workspace.Remote, error) {
	if err := tk.rep.running(ctx, "checkout", "checking out "+tg.base); err != nil {
		return nil, workspace.Remote{}, err
	}
	tok, err := r.cfg.GitHub.Token(ctx, tk.InstallationID, tk.Repo, app.TokenPermissions{Contents: "write"})
	if err != nil {
		return nil, workspace.Remote{}, err
	}
	remote := workspace.Remote{URL: tk.policy.Repo.CloneURL, Token: tok.Value}
	base := tk.prog.Base
	if base == "" {
		base = tg.base
	}
	ws, err := r.cfg.Workspaces.Checkout(ctx, workspace.CheckoutOptions{Repo: tk.Repo, Remote: remote, Base: base})
	if err != nil {
		return nil, workspace.Remote{}, err
	}
	if tk.prog.Base == "" {
		tk.prog.Base, tk.prog.Branch = ws.Base(), tg.branch
		if err := tk.rep.save(ctx); err != nil {
			ws.Close()
			return nil, workspace.Remote{}, err
		}
	}
	tk.rep.phase(ctx, "workspace")
	return ws, remote, nil
}

// target is where a task's change goes: the branch, the commit it starts
// from (a ref the remote has) and the pull request's base.
type target struct {
	branch   string
	base     string
	prBase   string
	existing bool // the branch is an open pull request's: push on top of it
}

// target decides the branch: a new agent branch for an issue, the pull
// request's own branch for a command on one of agentbot's pull requests,
// or a new agent branch from the head of a person's pull request, whose
// pull request proposes the change to that branch (proposalBranch): a
// person's branch is theirs, and agentbot never pushes to it.
func (r *Runner) target(tk *task) (target, error) {
	def := tk.policy.Repo.DefaultBranch
	if pull := tk.issue.Pull; pull != nil {
		if pull.HeadRepo != tk.Repo {
			return target{}, app.Errorf(app.EPolicy,
				"agentbot pushes only to branches of %s; the branch of #%d lives in %s.", tk.Repo, tk.Number, pull.HeadRepo)
		}
		if !agentsPull(tk) {
			return target{branch: proposalBranch(tk), base: pull.HeadSHA, prBase: pull.Head}, nil
		}
		return target{branch: pull.Head, base: pull.HeadSHA, prBase: pull.Base, existing: true}, nil
	}
	return target{branch: tk.policy.Policy.PullRequest.Branch(tk.Number, slug(tk.issue.Title)), base: def, prBase: def}, nil
}

// loop runs the agent in a network-less sandbox over ws, after setup and
// the checks' run on the base. When "/agent stop" ends it, the state so
// far is returned with who stopped it, once the sandbox is removed.
func (r *Runner) loop(ctx context.Context, tk *task, ws *workspace.Workspace) (_ *agent.State, stoppedBy string, err error) {
	if err := r.setup(ctx, tk, ws); err != nil {
		return nil, "", err
	}
	if err := r.checkBase(ctx, tk, ws); err != nil {
		return nil, "", err
	}
	return r.runLoop(ctx, tk, onlyAttempt(ctx, tk, ws))
}

// setup names the policy's models where it names none and prepares the
// environment over ws, which every container of the task then sees.
func (r *Runner) setup(ctx context.Context, tk *task, ws *workspace.Workspace) (err error) {
	r.nameModels(&tk.policy.Policy)
	if err := sandbox.ShareTree(ws.Dir()); err != nil {
		return fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	tk.env.Release(tk.log) // a resumed loop's earlier one
	tk.env, err = r.prepareEnv(ctx, tk, ws)
	return err
}

// runLoop runs one attempt of the agent in a network-less sandbox over its
// work tree, on the environment setup prepared.
func (r *Runner) runLoop(ctx context.Context, tk *task, at *attempt) (_ *agent.State, stoppedBy string, err error) {
	p := at.policy
	spec, err := tk.env.Spec(sandbox.Spec{TaskID: at.id, WorkTree: at.ws.Dir(), CPUs: p.Sandbox.CPUs, Memory: p.Sandbox.Memory, Pids: p.Sandbox.Pids, MaxTreeGrowth: p.Sandbox.Disk})
	if err != nil {
		return nil, "", err
	}
	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	box := boot(ctx, r.cfg.Sandbox, spec, cancel)
	defer box.Close(ctx)
	th, err := r.thread(ctx, tk)
	if err != nil {
		return nil, "", err
	}
	system, text, err := renderPrompts(tk, at.ws, th)
	if err != nil {
		return nil, "", err
	}
	text += approvedPlan(tk)
	a, err := agent.New(ctx, agent.Config{
		TaskID: at.id, Policy: p, Model: r.cfg.Model, Fast: r.cfg.Fast, Runner: box, Workspace: at.ws,
		Store: r.cfg.Store, System: system, Task: text, Images: r.images(ctx, tk, th), Logger: tk.log,
		Observe: at.observe, ObserveModel: at.observeModel, Spent: at.spent, Budget: r.budgetCheck(tk, at.id),
		Steer: r.steer(ctx, tk, at),
	})
	if err != nil {
		return nil, "", err
	}
	// A resumed loop may have applied its saved diff as the host's user.
	if err := sandbox.ShareTree(at.ws.Dir()); err != nil {
		return nil, "", fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	if at.n == 0 { // the attempts say so together
		if err := tk.rep.say(ctx, runningText(tk, "the agent is working")); err != nil {
			return nil, "", err
		}
	}
	d, err := r.pendingDecision(ctx, a.State())
	if err != nil {
		return nil, "", err
	}
	by := r.watchStop(loopCtx, tk.ID, cancel)
	var st *agent.State
	if d != nil {
		tk.log.Info("resuming on a decision", "call", d.Call, "approve", d.Approve, "by", d.By)
		st, err = a.Decide(loopCtx, d.Approve, d.By)
	} else {
		st, err = a.Run(loopCtx)
	}
	err = r.loopSpent(ctx, tk, at.id, a.State(), err)
	if err != nil && ctx.Err() == nil && loopCtx.Err() != nil && box.Err() != nil {
		// Cut short because the sandbox did not start: an outage, tried
		// again from the saved state.
		return nil, "", box.Err()
	}
	if err != nil && ctx.Err() == nil && by() != "" {
		// The loop saved its state before it noticed; the deferred Close
		// removes the sandbox before the stop is reported.
		return a.State(), by(), nil
	}
	return st, "", err
}

// deliver takes the change the loop ended with to its pull request: the
// host's gate, the final verification, then propose. failed is set when
// the loop failed and the policy asks for a draft pull request of the
// partial change anyway. A task resumed after its push goes straight to
// the pull request.
func (r *Runner) deliver(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote,
	tg target, st *agent.State, failed *failure) error {
	if tk.prog.Pushed != "" {
		// Resumed after the push: the pushed tree is the saved diff's.
		return r.propose(ctx, tk, ws, remote, tg, st, failed, savedTampering(tk, st))
	}
	report, ok, err := r.gate(ctx, tk, ws, st)
	if !ok || err != nil {
		return err
	}
	if failed, ok, err = r.verification(ctx, tk, ws, report, st, failed); !ok || err != nil {
		return err
	}
	return r.propose(ctx, tk, ws, remote, tg, st, failed, report.Tampering)
}

// propose commits and pushes a gated and verified change, unless it was
// pushed before, and opens its pull request and reports it.
func (r *Runner) propose(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote,
	tg target, st *agent.State, failed *failure, tamper app.Tampering) error {
	if tk.prog.Pushed == "" {
		if ok, err := r.pushChange(ctx, tk, ws, remote, tg, st); !ok || err != nil {
			return err
		}
	}
	failed = verdict(tk, failed)
	pr, err := r.pullRequest(ctx, tk, tg, st, failed, tamper)
	if err != nil {
		return err
	}
	return tk.rep.delivered(ctx, st, pr, tamper, failed)
}

// gate checks the change on the host against the policy. A refusal is
// reported and returns ok false.
func (r *Runner) gate(ctx context.Context, tk *task, ws *workspace.Workspace, st *agent.State) (_ workspace.GateReport, ok bool, err error) {
	if err := tk.rep.state(ctx, app.StateRunning, "gate and push"); err != nil {
		return workspace.GateReport{}, false, err
	}
	report, err := ws.Gate(ctx, tk.policy.Policy)
	tk.rep.phase(ctx, "gate")
	if err != nil {
		if _, user := errors.AsType[*app.Error](err); user {
			tk.gated = true
			return report, false, tk.rep.fail(ctx, st, failure{gate: err, diff: report.Diff})
		}
		return report, false, err
	}
	return report, true, nil
}

// verification runs the checks once more over the gated tree in a fresh
// sandbox and returns the task's verdict: failed as it was, or the
// verification's failure. A failed verification ends the task (reported,
// ok false) unless the policy asks for a draft pull request.
func (r *Runner) verification(ctx context.Context, tk *task, ws *workspace.Workspace, report workspace.GateReport,
	st *agent.State, failed *failure) (_ *failure, ok bool, err error) {
	// A tree with no change is refused when it is committed; there is
	// nothing to verify.
	if report.Diff != "" {
		if err := r.verify(ctx, tk, ws, report.Tree, st); err != nil {
			return failed, false, err
		}
	}
	if failed = verdict(tk, failed); failed != nil && failed.verify != nil && tk.policy.Policy.PullRequest.OnFailure != "draft_pr" {
		return failed, false, tk.rep.fail(ctx, st, *failed)
	}
	if failed == nil {
		if err := r.reproduce(ctx, tk, ws, report); err != nil {
			return failed, false, err
		}
		if err := reproductionRefusal(tk); err != nil {
			return failed, false, tk.rep.fail(ctx, st, failure{gate: err, diff: report.Diff})
		}
	}
	return failed, true, nil
}

// pushChange commits the gated tree as the bot, with the requester as
// co-author, and pushes it to the task's branch. A change that is empty
// is reported and returns ok false.
func (r *Runner) pushChange(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote,
	tg target, st *agent.State) (ok bool, err error) {
	// The commit's date is kept before the commit is made, so that a
	// worker that dies between the push and the save below makes the
	// same commit again on resume and finds the branch already there.
	if tk.prog.CommitDate.IsZero() {
		tk.prog.CommitDate = time.Now().UTC().Truncate(time.Second)
		if err := tk.rep.save(ctx); err != nil {
			return false, err
		}
	}
	credit, err := r.coAuthors(ctx, tk)
	if err != nil {
		return false, err
	}
	_, err = ws.Commit(ctx, workspace.CommitOptions{
		Message:   commitMessage(tk, st),
		Author:    r.cfg.Bot,
		CoAuthors: credit,
		Date:      tk.prog.CommitDate,
	})
	if errors.Is(err, workspace.ErrNoChanges) {
		return false, tk.rep.fail(ctx, st, failure{gate: change.NothingChanged()})
	}
	if err != nil {
		return false, err
	}
	lease := ""
	if tg.existing {
		lease = tk.prog.Base
	}
	sha, err := r.push(ctx, tk, ws, remote, lease)
	if err != nil {
		return false, err
	}
	tk.prog.Pushed = sha
	if err := tk.rep.save(ctx); err != nil {
		return false, err
	}
	tk.rep.phase(ctx, "push")
	return true, nil
}

// pullRequest opens the pushed branch's pull request, or finds the one
// open on it: a draft when failed is set.
func (r *Runner) pullRequest(ctx context.Context, tk *task, tg target, st *agent.State, failed *failure, tamper app.Tampering) (app.PullRequest, error) {
	spec := tk.policy.Policy.PullRequest
	title, body := prTitle(tk, st), prBody(tk, st, tamper)
	if failed != nil {
		spec.Draft = true
		title = shortTitle("Draft: " + app.InertPlain(tk.issue.Title, ownIssue(tk)))
		body = fmt.Sprintf("⚠️ **Draft: the checks did not pass** (%s). The policy asks for the partial change as a draft.\n\n%s",
			reasonLine(st, *failed), body)
	}
	if err := tk.rep.auditPush(ctx); err != nil {
		return app.PullRequest{}, err
	}
	pr, err := tk.inst.EnsurePullRequest(ctx, tk.Repo, app.PullRequestDraft{
		Head: tk.prog.Branch, Base: tg.prBase, Title: title, Body: body, Spec: spec,
	})
	if err != nil {
		return app.PullRequest{}, err
	}
	tk.prog.PR = &pr
	if err := tk.rep.save(ctx); err != nil {
		return app.PullRequest{}, err
	}
	if !tg.existing {
		// The pull request's own task: its follow-ups that failing CI
		// starts credit who asked for it.
		if err := r.cfg.Pulls.SavePull(ctx, app.AgentPull{Owner: recordOwner(tk), Repo: tk.Repo, Number: pr.Number,
			Task: tk.ID, Requester: tk.Requester, RequesterID: tk.RequesterID}); err != nil {
			return app.PullRequest{}, err
		}
	}
	if err := tk.rep.auditPullRequest(ctx, tg, pr); err != nil {
		return app.PullRequest{}, err
	}
	tk.log.Info("pull request ready", "pr", pr.Number, "created", pr.Created, "url", pr.HTMLURL, "draft", failed != nil)
	return pr, nil
}

// failure says why a task ends without a pull request: the loop's stop,
// or the host gate's refusal.
type failure struct {
	stop      *agent.Stop
	stoppedBy string // the login that asked /agent stop
	gate      error
	diff      string        // the gate's diff, when the gate refused
	setup     *SetupFailure // a setup command failed before the agent ran
	cannotRun *CannotRun    // the checks cannot run on the base, so the agent did not start
	verify    *Verification // the checks failed in the final verification
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
