package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
)

// decision is an approver's answer to the call a paused task waits on,
// recorded in the Store where the paused task's loop finds it. It applies only
// to that call at that point of the task (Approvals already given), so it
// never answers a later pause.
type decision struct {
	Call      string `json:"call"`
	Approvals int    `json:"approvals"`
	Approve   bool   `json:"approve"`
	By        string `json:"by"`
	Task      string `json:"task"` // the approve or deny task that decided
}

// decide answers "/agent approve" and "/agent deny": holding the issue's
// lock, it records the decision for the issue's paused task and runs that
// task on from its saved state to its end, then says how it ended.
// Authorize has already let only approvers through.
func (r *Runner) decide(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	return r.held(ctx, tk, func(ctx context.Context) error { return r.resume(ctx, tk) })
}

func (r *Runner) resume(ctx context.Context, tk *task) error {
	if tk.prog.Resumes == "" {
		// A plan waiting for approval (plan.go), else a paused call.
		if err := r.decidePlan(ctx, tk); err != nil {
			return err
		}
	}
	if tk.prog.Resumes == "" {
		paused, st, err := r.pausedTask(ctx, tk)
		if err != nil {
			return err
		}
		if paused == "" {
			return finished(app.StateRefused, text.NothingAwaits(tk.Number), "")
		}
		d := decision{Call: st.Pending.ID, Approvals: len(st.Approvals), Approve: tk.Verb == app.VerbApprove, By: tk.Requester, Task: tk.ID}
		raw, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if err := r.cfg.Store.RecordDecision(ctx, paused, raw); err != nil {
			return fmt.Errorf("save the decision on task %s: %w", paused, err)
		}
		if err := tk.rep.auditDecision(ctx, paused, st.Pending, d.Approve); err != nil {
			return err
		}
		tk.prog.Resumes = paused
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
		tk.log.Info("decided", "paused", paused, "call", d.Call, "approve", d.Approve)
	}
	ptk, err := r.goOn(ctx, tk, tk.prog.Resumes)
	if err != nil {
		return err
	}
	return finished(app.StateSucceeded, text.Decided(tk.request(), ptk.ID, ptk.prog.Final), "")
}

// goOn runs the paused task id on tk's issue on from its saved progress to
// its end, or to its next pause, on tk's behalf, and returns it.
func (r *Runner) goOn(ctx context.Context, tk *task, id string) (*task, error) {
	pt, err := r.issueTask(ctx, tk, id)
	if err != nil {
		return nil, err
	}
	ptk := &task{Task: &pt, inst: tk.inst, status: linkPage(tk.inst.StatusComment(pt.Repo, pt.Number, pt.ID), r.cfg.Pages, pt),
		log: r.log.With("task", pt.ID, "delivery", pt.Delivery, "repo", pt.Repo, "number", pt.Number, "verb", pt.Verb, "resumed_by", tk.ID)}
	ptk.rep = r.reporter(ptk)
	if ptk.prog, err = r.loadProgress(ctx, pt.ID); err != nil {
		return nil, err
	}
	if ptk.prog.Final == "" {
		tg, err := r.prepare(ctx, ptk)
		if err == nil {
			// A follow-up reads again what it addresses: the paused task
			// read it before it paused, and its answers and reproduction
			// depend on it.
			err = r.followUpAndWork(ctx, ptk, tg)
		}
		if err := ptk.rep.ended(ctx, err); err != nil {
			return nil, err
		}
	}
	return ptk, nil
}

// pausedTask finds the newest task on tk's issue that waits for approval,
// with its saved loop state; "" when none does.
func (r *Runner) pausedTask(ctx context.Context, tk *task) (string, *agent.State, error) {
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return "", nil, err
	}
	for _, t := range all {
		if t.State != app.StateAwaitingApproval {
			continue
		}
		st, err := r.loopState(ctx, t.ID)
		if err != nil {
			return "", nil, err
		}
		if st != nil && st.Status == app.StateAwaitingApproval && st.Pending != nil {
			return t.ID, st, nil
		}
	}
	return "", nil, nil
}

// issueTask returns the task id asked on tk's issue.
func (r *Runner) issueTask(ctx context.Context, tk *task, id string) (app.Task, error) {
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return app.Task{}, err
	}
	for _, t := range all {
		if t.ID == id {
			return t.Task, nil
		}
	}
	return app.Task{}, fmt.Errorf("task %s on %s#%d is gone", id, tk.Repo, tk.Number)
}

// loopState is the loop state saved under id (a task's, or one of its
// attempts'), nil when there is none.
func (r *Runner) loopState(ctx context.Context, id string) (*agent.State, error) {
	raw, err := r.cfg.Store.LoadState(ctx, id)
	if err != nil || raw == nil {
		return nil, err
	}
	var st agent.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("decode state of %s: %w", id, err)
	}
	return &st, nil
}

// pendingDecision is the decision on the call that st waits on, if an
// approver made one.
func (r *Runner) pendingDecision(ctx context.Context, st *agent.State) (*decision, error) {
	if st.Status != app.StateAwaitingApproval || st.Pending == nil {
		return nil, nil
	}
	raw, err := r.cfg.Store.Decision(ctx, st.TaskID)
	if err != nil || raw == nil {
		return nil, err
	}
	var d decision
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("decode the decision on task %s: %w", st.TaskID, err)
	}
	if d.Call != st.Pending.ID || d.Approvals != len(st.Approvals) {
		return nil, nil
	}
	return &d, nil
}
