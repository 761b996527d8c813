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
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/workspace"
)

// fix runs a fix, a retry or a follow-up: admission, then, holding the
// issue's lock, the loop in a sandbox over a fresh checkout, the gate, the
// push and the pull request.
func (r *Runner) fix(ctx context.Context, tk *task) error {
	tg, err := r.prepare(ctx, tk)
	if err != nil {
		return err
	}
	return r.held(ctx, tk, func(ctx context.Context) error {
		tk.rep.phase(ctx, "admission")
		return r.followUpAndWork(ctx, tk, tg)
	})
}

// followUpAndWork reads what a follow-up addresses (a review's comments,
// failing CI, a finding and its test), then works: the sequence of a fix
// once it holds its issue, whether it starts or an approval resumes it.
func (r *Runner) followUpAndWork(ctx context.Context, tk *task, tg target) error {
	f, err := r.followUp(ctx, tk)
	if err != nil {
		return err
	}
	return r.work(ctx, tk, tg, f)
}

// prepare admits a fix, checks that it has a definition of done and a
// branch it may push to, and says it was received; a refusal is an
// *ended.
func (r *Runner) prepare(ctx context.Context, tk *task) (target, error) {
	if err := r.admit(ctx, tk); err != nil {
		return target{}, err
	}
	if err := tk.policy.Policy.RequireChecks(); err != nil {
		return target{}, refused(err)
	}
	tg, err := r.target(tk)
	if err != nil {
		return target{}, refused(err)
	}
	return tg, tk.rep.react(ctx, app.ReactionReceived)
}

// work runs an admitted fix, following up on f (nil for none), to its
// end, or to a pause for approval: the workspace, the plan when the policy
// asks for one, the change (runner/change: setup, base checks, the loop
// or the attempts, the gate, the verification and the reproduction), then
// what the change came to — a pull request, a draft, a pause, or the
// report of why there is none.
func (r *Runner) work(ctx context.Context, tk *task, tg target, f *followUp) error {
	ws, remote, err := r.workspace(ctx, tk, tg)
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := r.planFirst(ctx, tk, f, ws); err != nil {
		return err
	}
	if tk.prog.Pushed != "" {
		return r.proposeSaved(ctx, tk, ws, remote, tg)
	}
	c, err := r.change(ctx, tk, f, ws, remote)
	if err != nil {
		return err
	}
	res, err := change.Make(ctx, c)
	defer closeAttempts(tk, ws, res.Attempts)
	if err != nil {
		return err
	}
	return r.conclude(ctx, tk, remote, tg, res)
}

// conclude takes what Make made to its end: the pull request of a fix or
// of a draft, a pause for approval, or the report of why there is none.
func (r *Runner) conclude(ctx context.Context, tk *task, remote workspace.Remote, tg target, res change.Result) error {
	tk.rep.ran(res.Loop)
	if res.Attempts != nil && judged(res) {
		traceAttempts(ctx, tk, res)
	}
	tk.prog.Verified, tk.prog.Reproduction = res.Verified, res.Reproduction
	if err := tk.rep.save(ctx); err != nil {
		return err
	}
	e := res.Ended
	if e == nil {
		return r.propose(ctx, tk, res.Tree, remote, tg, res.Loop, nil, res.Gate.Tampering)
	}
	st := res.Loop
	if st == nil { // ended before the loop
		st = &agent.State{TaskID: tk.ID, Status: app.StateFailed}
	}
	var f text.Failure
	switch e.Step {
	case change.StepSetup:
		f.Setup, _ = e.Cause.(*SetupFailure)
	case change.StepBaseChecks:
		cr, _ := e.Cause.(*CannotRun)
		tk.log.Info("the checks cannot run on the base", "check", cr.Check, "cause", cr.Cause, "evidence", cr.Evidence)
		f.CannotRun = cr
	case change.StepLoop:
		if s, ok := e.Cause.(*change.Stopped); ok {
			f.StoppedBy = s.By
			break
		}
		if st.Status == app.StateAwaitingApproval && res.Attempts == nil {
			return paused("waiting for /agent approve or /agent deny", text.Approval(tk.request(), st.Pending))
		}
		f.Stop = st.Stop
		if res.Verified != nil { // a draft, gated and verified
			return r.propose(ctx, tk, res.Tree, remote, tg, st, &f, res.Gate.Tampering)
		}
	case change.StepGate:
		f.Gate, f.Diff = e.Cause, res.Gate.Diff
		if res.Gate.Diff != "" { // an empty change is no refusal of the policy's
			tk.rep.gateRefused()
		}
	case change.StepVerification:
		f.Verify = res.Verified
		if c := tk.policy.Policy.PullRequest; c.OnFailure == "draft_pr" {
			return r.propose(ctx, tk, res.Tree, remote, tg, st, &f, res.Gate.Tampering)
		}
	case change.StepReproduction:
		f.Gate, f.Diff = e.Cause, res.Gate.Diff
	}
	return failed(st, f)
}

// proposeSaved proposes the change of a task resumed after its push: the
// pushed tree is the saved diff's, of the only attempt or of the one
// proposed.
func (r *Runner) proposeSaved(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote, tg target) error {
	id := tk.ID
	if a := tk.prog.Attempts; a != nil && a.Proposed() > 0 {
		id = change.AttemptID(tk.ID, a.Proposed())
	}
	st, err := r.loopState(ctx, id)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("the change of task %s was pushed, but its loop state %s is gone", tk.ID, id)
	}
	tk.rep.ran(st)
	var failed *text.Failure // a draft's, as the loop ended it
	if st.Status != app.StateSucceeded {
		failed = &text.Failure{Stop: st.Stop}
	}
	return r.propose(ctx, tk, ws, remote, tg, st, failed, savedTampering(tk, st))
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
		if !r.agentsPull(tk) {
			return target{branch: proposalBranch(tk), base: pull.HeadSHA, prBase: pull.Head}, nil
		}
		return target{branch: pull.Head, base: pull.HeadSHA, prBase: pull.Base, existing: true}, nil
	}
	return target{branch: tk.policy.Policy.PullRequest.Branch(tk.Number, slug(tk.issue.Title)), base: def, prBase: def}, nil
}

// propose commits and pushes a gated and verified change, unless it was
// pushed before, and opens its pull request and reports it.
func (r *Runner) propose(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote,
	tg target, st *agent.State, draft *text.Failure, tamper app.Tampering) error {
	if tk.prog.Pushed == "" {
		if err := r.pushChange(ctx, tk, ws, remote, tg, st); err != nil {
			return err
		}
	}
	draft = verdict(tk, draft)
	report := tk.rep.report(st)
	report.Tampering, report.Proposed = tamper, tk.issue.Pull != nil && !tg.existing
	pr, err := r.pullRequest(ctx, tk, tg, report, draft)
	if err != nil {
		return err
	}
	return tk.rep.delivered(ctx, report, pr, draft)
}

// pushChange commits the gated tree and pushes it to the task's branch;
// a change that is empty is an *ended.
func (r *Runner) pushChange(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote,
	tg target, st *agent.State) error {
	lease := ""
	if tg.existing {
		lease = tk.prog.Base
	}
	err := r.commitAndPush(ctx, tk, ws, remote, text.CommitMessage(tk.rep.report(st)), lease)
	if errors.Is(err, workspace.ErrNoChanges) {
		return failed(st, text.Failure{Gate: change.NothingChanged()})
	}
	return err
}

// commitAndPush commits the tree as the bot, with the requester as
// co-author, pushes it to the task's branch (with lease, when set, as the
// commit the branch must be at) and saves the commit pushed.
func (r *Runner) commitAndPush(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote, message, lease string) error {
	// The commit's date is kept before the commit is made, so that a
	// worker that dies between the push and the save below makes the
	// same commit again on resume and finds the branch already there.
	if tk.prog.CommitDate.IsZero() {
		tk.prog.CommitDate = time.Now().UTC().Truncate(time.Second)
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
	}
	credit, err := r.coAuthors(ctx, tk)
	if err != nil {
		return err
	}
	if _, err := ws.Commit(ctx, workspace.CommitOptions{Message: message, Author: r.cfg.Bot, CoAuthors: credit, Date: tk.prog.CommitDate}); err != nil {
		return err
	}
	sha, err := r.push(ctx, tk, ws, remote, lease)
	if err != nil {
		return err
	}
	tk.prog.Pushed = sha
	if err := tk.rep.save(ctx); err != nil {
		return err
	}
	tk.rep.phase(ctx, "push")
	return nil
}

// pullRequest opens the pushed branch's pull request, or finds the one
// open on it: a draft when draft, why the change is no fix, is set.
func (r *Runner) pullRequest(ctx context.Context, tk *task, tg target, report text.Report, draft *text.Failure) (app.PullRequest, error) {
	spec := tk.policy.Policy.PullRequest
	title, body := text.Title(report), text.Body(report)
	if draft != nil {
		spec.Draft = true
		title, body = text.DraftTitle(report), text.DraftBody(report, *draft)
	}
	pr, err := tk.rep.pullRequest(ctx, tg, title, body, spec)
	if err != nil {
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
	tk.log.Info("pull request ready", "pr", pr.Number, "created", pr.Created, "url", pr.HTMLURL, "draft", draft != nil)
	return pr, nil
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
