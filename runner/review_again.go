package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/tools"
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

// rechecked is an earlier finding this review looked at again.
type rechecked struct {
	CommentID int64 `json:"comment_id"`
	// Fixed: its test passes on this head, so its thread was resolved.
	Fixed bool `json:"fixed,omitempty"`
	// Dismissed: someone resolved its thread with no commit fixing it,
	// or dismissed its review.
	Dismissed bool `json:"dismissed,omitempty"`
}

// open are the findings of prior that a later review looks at again:
// its own posted inline, and those it carried from earlier reviews.
func (p *priorReview) open() []reviewed {
	var out []reviewed
	for _, f := range append(slices.Clone(p.rv.Findings), p.rv.Carried...) {
		if f.CommentID != 0 {
			out = append(out, f)
		}
	}
	return out
}

// repeats reports whether f says again what one of the open findings of
// earlier reviews says: about the same file, under the same title or
// with the same test. Lines move between pushes; a file, a title and a
// test do not.
func repeats(open []reviewed, f tools.Finding) bool {
	return slices.ContainsFunc(open, func(o reviewed) bool {
		if o.Path != f.Path {
			return false
		}
		sameTest := o.Test != nil && f.Test != nil && o.Test.Path == f.Test.Path && o.Test.Content == f.Test.Content
		return sameTest || strings.EqualFold(strings.TrimSpace(o.Title), strings.TrimSpace(f.Title))
	})
}

// failedOnHead reports whether f's test failed on the head it was
// posted for: a test worth running again.
func failedOnHead(f reviewed) bool {
	return f.Test != nil && f.Proof != nil && (f.Proof.Proven || f.Proof.PreExisting)
}

// recheck looks again at each finding prior left open. A thread someone
// resolved while the finding's test did not pass, or a finding of a
// review someone dismissed, is a dismissal. In an
// open thread, the test of a finding that failed on its head runs on
// this head: passing, the thread gets a reply and is resolved; failing,
// or with no test to run, the finding is carried to the next review.
// Progress is saved after each.
func (r *Runner) recheck(ctx context.Context, tk *task, ws *workspace.Workspace, env *proofEnv, prior *priorReview) error {
	if prior == nil {
		return nil
	}
	rv := tk.prog.Review
	threads, err := tk.inst.ReviewThreads(ctx, tk.Repo, tk.Number)
	if err != nil {
		return err
	}
	byComment := map[int64]app.ReviewThread{}
	for _, t := range threads {
		byComment[t.CommentID] = t
	}
	dismissed, err := tk.inst.DismissedReviews(ctx, tk.Repo, tk.Number)
	if err != nil {
		return err
	}
	for i, f := range prior.open() {
		thread, listed := byComment[f.CommentID]
		if !listed || slices.ContainsFunc(rv.Rechecked, func(c rechecked) bool { return c.CommentID == f.CommentID }) {
			continue
		}
		c := rechecked{CommentID: f.CommentID, Dismissed: thread.Resolved || slices.Contains(dismissed, f.ReviewID)}
		if !thread.Resolved && failedOnHead(f) && prior.head != ws.Base() {
			prepared, err := env.get(ctx)
			if err != nil {
				return err
			}
			if c.Fixed, err = r.testAgain(ctx, tk, ws, prepared, f, thread.ID, fmt.Sprintf("%s-again%d", tk.ID, i+1)); err != nil {
				return err
			}
		}
		if !c.Fixed && !c.Dismissed {
			rv.Carried = append(rv.Carried, f)
		}
		rv.Rechecked = append(rv.Rechecked, c)
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
	}
	return nil
}

// testAgain runs f's test on the head; when it passes, it says so in the
// finding's thread and resolves it.
func (r *Runner) testAgain(ctx context.Context, tk *task, ws *workspace.Workspace, env *Prepared, f reviewed, thread, id string) (fixed bool, err error) {
	if err := tk.rep.running(ctx, "proof", fmt.Sprintf("running the test of an earlier finding on %s", text.ShortSHA(ws.Base()))); err != nil {
		return false, err
	}
	v, _, err := r.runTest(ctx, tk, ws, env, ws.Base(), f.Finding, id)
	if err != nil {
		return false, err
	}
	traceProof(ctx, tk, "again", ws.Base(), v)
	if !v.Passed {
		return false, nil
	}
	return true, tk.rep.resolve(ctx, f.CommentID, thread, text.FixedOn(tk.request(), ws.Base(), f.Test.Path))
}
