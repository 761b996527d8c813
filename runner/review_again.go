package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/workspace"
)

// A pull request reviewed before is reviewed again on a new push (with
// review.auto: pushed, or a later "/agent review"): the model is shown
// only what changed since the head the last review read, and each earlier
// finding whose thread is still open is tried again, its test run on the
// new head in a fresh sandbox. A test that passes there shows the finding
// fixed: its thread gets a reply saying so and is resolved.

// priorReview is the pull request's latest earlier review that ended
// with a report: the head it read and its findings.
type priorReview struct {
	head string
	rv   *reviewProgress
}

func (r *Runner) priorReview(ctx context.Context, tk *task) (*priorReview, error) {
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return nil, err
	}
	for _, t := range all { // newest first
		if t.ID == tk.ID || t.Verb != app.VerbReview || t.State != app.StateSucceeded {
			continue
		}
		p, err := r.loadProgress(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if p.Review != nil {
			return &priorReview{head: p.Base, rv: p.Review}, nil
		}
	}
	return nil, nil
}

// sinceReview is the commit the model's diff starts from: the head the
// prior review read when the new head descends from it, or else (no
// review before, the same head again, or history rewritten) base.
func sinceReview(ctx context.Context, tk *task, ws *workspace.Workspace, prior *priorReview, base string) string {
	if prior == nil || prior.head == "" || prior.head == ws.Base() {
		return base
	}
	mb, err := ws.MergeBase(ctx, prior.head, ws.Base())
	if err != nil || mb != prior.head {
		tk.log.Info("the head reviewed before is not in the new head's history; reviewing the whole change", "reviewed", prior.head, "err", err)
		return base
	}
	return prior.head
}

// rechecked is an earlier finding whose test ran again on this head.
type rechecked struct {
	CommentID int64 `json:"comment_id"`
	// Fixed: the test passes on this head, so the thread was resolved.
	Fixed bool `json:"fixed"`
}

// recheck runs again the test of each of prior's findings whose test
// failed on its head and whose thread is open, saving after each.
func (r *Runner) recheck(ctx context.Context, tk *task, ws *workspace.Workspace, prior *priorReview) error {
	if prior == nil || prior.head == ws.Base() {
		return nil
	}
	rv := tk.prog.Review
	threads, err := tk.inst.ReviewThreads(ctx, tk.Repo, tk.Number)
	if err != nil {
		return err
	}
	open := map[int64]string{}
	for _, t := range threads {
		if !t.Resolved {
			open[t.CommentID] = t.ID
		}
	}
	for i, f := range prior.rv.Findings {
		thread, isOpen := open[f.CommentID]
		done := slices.ContainsFunc(rv.Rechecked, func(c rechecked) bool { return c.CommentID == f.CommentID })
		if f.Test == nil || f.CommentID == 0 || !isOpen || done || f.Proof == nil || (!f.Proof.Proven && !f.Proof.PreExisting) {
			continue
		}
		if err := tk.rep.running(ctx, "proof", fmt.Sprintf("running the test of an earlier finding on %s", shortSHA(ws.Base()))); err != nil {
			return err
		}
		v, _, err := r.runTest(ctx, tk, ws, ws.Base(), f.Finding, fmt.Sprintf("%s-again%d", tk.ID, i+1))
		if err != nil {
			return err
		}
		traceProof(ctx, tk, "again", ws.Base(), v)
		if v.Passed {
			reply := fmt.Sprintf("✅ **Fixed on `%s`.** The test of this finding, %s, passes there in a fresh sandbox: what it showed no longer reproduces.",
				shortSHA(ws.Base()), app.CodeSpan(f.Test.Path, ownIssue(tk)))
			if err := tk.inst.ReplyInThread(ctx, tk.Repo, tk.Number, f.CommentID, tk.ID, reply); err != nil {
				return err
			}
			if err := tk.inst.ResolveThread(ctx, thread); err != nil {
				return err
			}
		}
		rv.Rechecked = append(rv.Rechecked, rechecked{CommentID: f.CommentID, Fixed: v.Passed})
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
	}
	return nil
}
