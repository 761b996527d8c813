package runner

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/workspace"
)

// ask answers "/agent ask <question>" and "/agent explain": the loop
// reads a checkout of the issue's default branch, or of the pull
// request's head, with the read tools only — no sandbox, no write, no
// branch, no pull request — and the answer is posted in the status
// comment with its citations linked to the commit it read. The task is
// admitted, audited, traced and bounded by the policy's budgets as a fix
// is. It changes nothing, so it does not queue behind the issue's running
// task.
func (r *Runner) ask(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	if err := tk.rep.react(ctx, app.ReactionReceived); err != nil {
		return err
	}
	tk.rep.phase(ctx, "admission")
	ws, err := r.readCheckout(ctx, tk)
	if err != nil {
		return err
	}
	defer ws.Close()
	tk.rep.phase(ctx, "workspace")

	st, err := r.answer(ctx, tk, ws)
	if err != nil {
		return err
	}
	tk.rep.ran(st)
	tk.rep.phase(ctx, "agent")
	if st.Status != app.StateSucceeded {
		report := tk.rep.report(st)
		return finished(app.StateFailed, text.NoAnswer(report), text.Reason(st, text.Failure{Stop: st.Stop})).
			withCheck(app.ConclusionFailure, text.NoAnswerCheck(report))
	}
	web := strings.TrimSuffix(tk.policy.Repo.CloneURL, ".git")
	// The answer is the model's text, posted in the App's name: inert, so
	// that it mentions nobody and hides nothing of the page after it.
	answer := app.Inert(linkCitations(st.Summary, web, tk.prog.Base, ws.Root().FS()), ownIssue(tk))
	if err := tk.rep.audit(ctx, app.AuditAnswered, "read at "+tk.prog.Base); err != nil {
		return err
	}
	report := tk.rep.report(st)
	return finished(app.StateSucceeded, text.Answer(report, answer, web), "answered").withCheck(app.ConclusionNeutral, text.AnsweredCheck(report))
}

// readCheckout checks out, with a read-only token, what a task that
// changes nothing reads (readAt), and keeps the commit it resolved to in
// tk's progress, so that a resumed task reads the same one.
func (r *Runner) readCheckout(ctx context.Context, tk *task) (*workspace.Workspace, error) {
	ref := cmp.Or(tk.prog.Base, readAt(tk))
	if err := tk.rep.running(ctx, "checkout", "reading "+ref); err != nil {
		return nil, err
	}
	tok, err := r.cfg.GitHub.Token(ctx, tk.InstallationID, tk.Repo, app.TokenPermissions{Contents: "read"})
	if err != nil {
		return nil, err
	}
	ws, err := r.cfg.Workspaces.Checkout(ctx, workspace.CheckoutOptions{Repo: tk.Repo,
		Remote: workspace.Remote{URL: tk.policy.Repo.CloneURL, Token: tok.Value}, Base: ref})
	if err != nil {
		return nil, err
	}
	if tk.prog.Base == "" {
		tk.prog.Base = ws.Base()
		if err := tk.rep.save(ctx); err != nil {
			ws.Close()
			return nil, err
		}
	}
	return ws, nil
}

// readAt is the ref a question reads: the pull request's head, or the
// default branch.
func readAt(tk *task) string {
	if pull := tk.issue.Pull; pull != nil {
		if pull.HeadRepo == tk.Repo {
			return pull.HeadSHA
		}
		return fmt.Sprintf("refs/pull/%d/head", tk.Number)
	}
	return tk.policy.Repo.DefaultBranch
}

// answer runs the read-only loop over ws.
func (r *Runner) answer(ctx context.Context, tk *task, ws *workspace.Workspace) (*agent.State, error) {
	p := &tk.policy.Policy
	r.nameModels(p)
	th, err := r.thread(ctx, tk)
	if err != nil {
		return nil, err
	}
	repo, err := prompts.LoadRepo(ws.Root().FS())
	if err != nil {
		return nil, fmt.Errorf("read the repository for the prompt: %w", err)
	}
	system, err := prompts.Ask(prompts.AskData{Limits: p.Limits})
	if err != nil {
		return nil, err
	}
	prompt, err := prompts.Task(prompts.TaskData{Repo: tk.Repo, Title: tk.issue.Title, Thread: th,
		Instructions: question(tk), Review: tk.ReviewComment, Context: repo})
	if err != nil {
		return nil, err
	}
	if err := tk.rep.say(ctx, text.Running(tk.request(), "reading the code")); err != nil {
		return nil, err
	}
	return r.readLoop(ctx, tk, agent.Config{TaskID: tk.ID, Policy: *p, Workspace: ws, ReadOnly: true,
		System: system, Task: prompt, Images: r.images(ctx, tk, th)})
}

// nameModels names the server's models where the policy p names none.
func (r *Runner) nameModels(p *policy.Policy) {
	p.Model.Edit = cmp.Or(p.Model.Edit, r.cfg.Models.Edit)
	p.Model.Fast = cmp.Or(p.Model.Fast, r.cfg.Models.Fast)
}

// readLoop runs a loop of tk that changes nothing (an answer, a review,
// a plan) from c, which names its id, policy, workspace, tools and
// prompts: the models, the store, tk's log and observers and tk's
// budgets are every such loop's, and what it spent is recorded as a
// fix's loop records it.
func (r *Runner) readLoop(ctx context.Context, tk *task, c agent.Config) (*agent.State, error) {
	c.Model, c.Fast, c.Store, c.Logger = r.cfg.Model, r.cfg.Fast, r.cfg.Store, tk.log
	c.Observe, c.ObserveModel = tk.rep.observe(ctx), tk.rep.observeModel(ctx)
	c.Budget = r.budgetCheck(tk, c.TaskID)
	a, err := agent.New(ctx, c)
	if err != nil {
		return nil, err
	}
	st, err := a.Run(ctx)
	return st, r.loopSpent(ctx, tk, c.TaskID, a.State(), err)
}

// question is what the model is asked: the question, or for a bare
// "/agent explain" an explanation of the issue or pull request.
func question(tk *task) string {
	q := strings.TrimSpace(tk.Instructions)
	switch {
	case tk.Verb == app.VerbExplain && q == "" && tk.issue.Pull != nil:
		return "Explain this pull request: what it changes, in which code, and why."
	case tk.Verb == app.VerbExplain && q == "":
		return "Explain this issue: what it is about, the code it concerns, and how that code works."
	case tk.Verb == app.VerbExplain:
		return "Explain " + q
	}
	return "Question: " + q
}
