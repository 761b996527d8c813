package runner

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/workspace"
)

// change is the change a fix asks runner/change to make over ws: the
// task's policy, prompts (with f, what a follow-up addresses) and
// environment, the attempts' checkouts from GitHub, and the worker's
// hooks — the loop's saved state, approvals, stops, notes, budgets, and
// the reporter that hears of every step.
//
// The reporter's mutex guards what the attempts of limits.attempts would
// otherwise share unlocked: the task's report, its refusals and their
// spending.
func (r *Runner) change(ctx context.Context, tk *task, f *followUp, ws *workspace.Workspace, remote workspace.Remote) (change.Change, error) {
	r.nameModels(&tk.policy.Policy)
	th, err := r.thread(ctx, tk)
	if err != nil {
		return change.Change{}, err
	}
	p := tk.policy.Policy
	mu := tk.rep.mu
	return change.Change{
		ID: tk.ID, Tree: ws, Policy: p, Sandbox: r.cfg.Sandbox, Setup: r.setupOf(ctx, tk, ws.Dir(), tk.ID+"-setup"),
		Envs: r.cfg.Envs, Owner: envOwner(tk),
		Task: taskData(tk, f, th), Plan: approvedPlan(tk),
		// A fix of a review's finding must keep the finding's test.
		OnPull:   followsUp(tk, f),
		Unproven: func(tree *workspace.Workspace) string { return findingTestDropped(tk, f, tree) },
		Model:    r.cfg.Model, Fast: r.cfg.Fast, Base: tk.prog.BaseChecks,
		Checkout: func(ctx context.Context) (*workspace.Workspace, error) {
			return r.cfg.Workspaces.Checkout(ctx, workspace.CheckoutOptions{Repo: tk.Repo, Remote: remote, Base: tk.prog.Base})
		},
		Hooks:  r.loopHooks(tk, r.images(ctx, tk, th), mu),
		Draft:  p.PullRequest.OnFailure == "draft_pr",
		Report: tk.rep.changed,
		Log:    tk.log,
	}, nil
}

// taskData is what the model is asked, with f, what a follow-up
// addresses; th is the conversation it may read.
func taskData(tk *task, f *followUp, th *app.Thread) prompts.TaskData {
	return prompts.TaskData{Repo: tk.Repo, Title: tk.issue.Title, Thread: th, Instructions: f.taskText(tk), Review: tk.ReviewComment}
}

// loopHooks are the worker's hooks on each attempt's loop: the loop's
// state in the store, the decision a paused loop resumes on, "/agent
// stop", the notes, the budgets and what the loop spends, and its steps
// reported as the attempt's. The attempts of limits.attempts share
// cost_usd: each counts every attempt's spending, its earlier processes'
// included.
func (r *Runner) loopHooks(tk *task, images []llm.Image, mu *sync.Mutex) func(context.Context, int, string) (change.Hooks, error) {
	costs := make([]float64, max(1, tk.policy.Policy.Limits.Attempts)+1) // by attempt, from 1
	spent := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		var sum float64
		for _, c := range costs {
			sum += c
		}
		return sum
	}
	return func(ctx context.Context, n int, id string) (change.Hooks, error) {
		h := change.Hooks{Store: r.cfg.Store, Images: images, Budget: r.budgetCheck(tk, id), Steer: r.steer(ctx, tk, n, mu),
			Decision: r.decision,
			Stopped:  func(ctx context.Context) (string, error) { return r.cfg.Store.StopRequested(ctx, tk.ID) },
			Ended: func(ctx context.Context, st *agent.State, err error) error {
				return r.loopSpent(ctx, tk, id, st, err)
			},
		}
		rp := tk.rep
		if n > 0 {
			rp = rp.forAttempt(n)
			h.Spent = spent
			// A resumed attempt has spent before.
			saved, err := r.loopState(ctx, id)
			if err != nil {
				return h, err
			}
			if saved != nil {
				mu.Lock()
				costs[n] = saved.Usage.CostUSD
				mu.Unlock()
			}
		}
		observe, observeModel := rp.observe(ctx), rp.observeModel(ctx)
		h.Observe = func(e agent.Event) {
			mu.Lock()
			defer mu.Unlock()
			observe(e)
		}
		h.ObserveModel = func(c agent.ModelCall) {
			mu.Lock()
			defer mu.Unlock()
			costs[n] += c.Usage.CostUSD
			observeModel(c)
		}
		return h, nil
	}
}

// decision is the approver's decision on the call st waits on, if one
// was made.
func (r *Runner) decision(ctx context.Context, st *agent.State) (*change.Decision, error) {
	d, err := r.pendingDecision(ctx, st)
	if d == nil || err != nil {
		return nil, err
	}
	return &change.Decision{Approve: d.Approve, By: d.By}, nil
}

// judged reports whether every attempt of res ran and was judged: not
// ended by setup or a stop.
func judged(res change.Result) bool {
	if e := res.Ended; e != nil {
		if _, stopped := e.Cause.(*change.Stopped); stopped || e.Step == change.StepSetup {
			return false
		}
	}
	return true
}

// traceAttempts keeps what became of the attempts in the task's progress
// and traces each attempt's verdict with its diff.
func traceAttempts(ctx context.Context, tk *task, res change.Result) {
	rep := &text.Attempts{Ran: len(res.Attempts), Winner: res.Winner, Why: res.Why, Draft: res.Draft}
	end := time.Now().UTC()
	for _, at := range res.Attempts {
		s := text.Attempt{N: at.N, Model: at.Policy.Model.Edit, Temperature: at.Policy.Model.Temperature, Passed: at.Ended == nil,
			Why: attemptWhy(at), Reproduced: at.Reproduction != nil && at.Reproduction.Reproduced, Tokens: at.Usage().Total(), Cost: at.Usage().CostUSD}
		if at.Gate != nil {
			s.Lines, s.Files = at.Gate.LinesAdded+at.Gate.LinesDeleted, at.Gate.FilesChanged
		}
		if s.Passed {
			rep.Passed++
		}
		rep.Each = append(rep.Each, s)
		rep.Tokens += s.Tokens
		rep.Cost += s.Cost
		outcome := "failed"
		switch {
		case s.N == rep.Winner:
			outcome = "chosen"
		case s.Passed:
			outcome = "passed"
		}
		var took time.Duration
		if at.Loop != nil {
			took = at.Loop.Elapsed
		}
		tk.rep.forAttempt(at.N).trace(ctx, app.TraceEvent{Time: end, Kind: app.TraceAttempt, Name: s.Model, Outcome: outcome,
			Duration: took, Detail: s.Line(), Result: at.Diff()})
	}
	tk.prog.Attempts = rep
	tk.log.Info("attempts ranked", "ran", rep.Ran, "passed", rep.Passed, "winner", rep.Winner, "why", rep.Why)
}

// attemptWhy is why an attempt's change is not proposed, in a line; ""
// when it passed.
func attemptWhy(at change.Attempt) string {
	e := at.Ended
	switch {
	case e == nil:
		return ""
	case e.Step == change.StepLoop && at.Loop.Stop != nil:
		return text.Reason(at.Loop, text.Failure{Stop: at.Loop.Stop})
	case e.Step == change.StepLoop:
		return "the agent did not finish"
	case e.Step == change.StepGate && at.Gate.Diff == "":
		return "it changed nothing"
	case e.Step == change.StepGate:
		return "the gate refused it: " + text.FirstLine(app.ErrorMessage(e.Cause))
	case e.Step == change.StepReproduction:
		return "not reproduced: " + at.Reproduction.Why
	}
	return e.Reason
}

// closeAttempts removes the work trees of the attempts past the first,
// whose tree is the task's.
func closeAttempts(tk *task, ws *workspace.Workspace, ats []change.Attempt) {
	for _, at := range ats {
		if at.Tree == ws || at.Tree == nil {
			continue
		}
		if err := at.Tree.Close(); err != nil {
			tk.log.Warn("remove an attempt's work tree", "attempt", at.N, "err", err)
		}
	}
}

// envOwner is the owner of the environments tk prepares and reuses: its
// installation and its repository's id, from the API, not its name:
// another repository can take a name, never an id.
func envOwner(tk *task) envcache.Owner {
	return envcache.GitHubOwner(tk.InstallationID, tk.policy.Repo.ID)
}

// setupOf is the policy's setup over the tree at dir in a container named
// id: the policy's image and limits, with network when the policy asks for
// it, through the egress proxy to the server's setup.allow_hosts, and what
// the proxy refused reported as the task's. Every tree of a task on a pull
// request comes from its head, so its setup is private.
func (r *Runner) setupOf(ctx context.Context, tk *task, dir, id string) Setup {
	p := tk.policy.Policy
	s := change.NewSetup(r.cfg.Sandbox, p, id, dir, cmp.Or(p.Sandbox.Image, r.cfg.Sandbox.Image()))
	s.Private = tk.issue.Pull != nil
	s.AllowHosts = r.cfg.Server.SetupAllowHosts
	s.Registries = r.cfg.Server.SetupRegistries
	s.InternalRanges = r.cfg.Server.SetupInternalRanges
	s.CABundle = r.cfg.SetupCABundle
	s.Secrets = r.cfg.SetupSecrets
	s.MaxEnvBytes = r.cfg.Server.SetupMaxEnvBytes
	s.Refused = func(x egress.Refusal) { tk.rep.connectionRefused(ctx, x) }
	s.Reached = func(x egress.Reach) { tk.rep.reached(ctx, x) }
	s.Log = tk.log
	return s
}
