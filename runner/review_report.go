package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
)

// postReview submits the review's findings as one GitHub review, ends its
// check run and its status comment, and records its outcome. A clean
// pull request gets no review: the check run says "no findings".
func (r *Runner) postReview(ctx context.Context, tk *task, st *agent.State, diff string) error {
	rv := tk.prog.Review
	pol := tk.policy.Policy.Review
	var posted, held []reviewed
	for _, f := range sortFindings(rv.Findings) {
		if pol.Posts(f.Severity, f.Proof != nil && f.Proof.Proven) {
			posted = append(posted, f)
		} else {
			held = append(held, f)
		}
	}
	// Inline comments go on lines the diff shows; the rest, and those past
	// the cap, are summarized in the review's body.
	lines := app.DiffLines(diff)
	var inline, summarized []reviewed
	for _, f := range posted {
		if len(inline) < pol.MaxComments && lines[f.Path][f.Line] {
			inline = append(inline, f)
		} else {
			summarized = append(summarized, f)
		}
	}
	proven := countProven(rv.Findings)
	blocking := pol.BlockOn == policy.BlockProven && countProven(posted) > 0
	view := text.Review{Request: tk.request(), Head: tk.prog.Base, Base: rv.Base, Trigger: tk.policy.Policy.Trigger.Command, Summary: st.Summary}
	if len(posted) > 0 && rv.ReviewID == 0 {
		event := app.ReviewEventComment
		if blocking && tk.issue.Author != r.cfg.Bot.Name {
			// GitHub refuses a request for changes on one's own pull
			// request; the failing check run blocks it instead.
			event = app.ReviewEventRequestChanges
		}
		d := app.ReviewDraft{CommitID: tk.prog.Base, Event: event, Body: text.ReviewBody(view, findingViews(inline), findingViews(summarized))}
		for _, f := range inline {
			d.Comments = append(d.Comments, app.ReviewDraftComment{Path: f.Path, Line: f.Line, Body: text.FindingComment(view, findingView(f))})
		}
		id, err := tk.rep.review(ctx, d)
		if err != nil {
			return err
		}
		if err := noteComments(ctx, tk, rv, id); err != nil {
			return err
		}
		rv.ReviewID, rv.Posted = id, len(inline)
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
	}
	detail := fmt.Sprintf("reviewed %s: %d findings, %d proven, %d posted, %d inline", text.ShortSHA(tk.prog.Base), len(rv.Findings), proven, len(posted), len(inline))
	if err := tk.rep.audit(ctx, app.AuditAnswered, detail); err != nil {
		return err
	}
	tk.log.Info("reviewed", "findings", len(rv.Findings), "proven", proven, "posted", len(posted), "inline", len(inline), "held", len(held))
	conclusion := app.ConclusionNeutral
	if blocking {
		conclusion = app.ConclusionFailure
	}
	return finished(app.StateSucceeded, text.Reviewed(tk.request(), tk.prog.Base, len(posted), countProven(posted)), "reviewed").
		withCheck(conclusion, text.ReviewCheck(tk.rep.report(st), findingViews(posted), countProven(posted)))
}

// noteComments keeps which inline comment of review id posted each
// finding, for a later review to find its thread.
func noteComments(ctx context.Context, tk *task, rv *reviewProgress, id int64) error {
	comments, err := tk.inst.ReviewComments(ctx, tk.Repo, tk.Number, id)
	if err != nil {
		return err
	}
	for _, c := range comments {
		i := slices.IndexFunc(rv.Findings, func(f reviewed) bool { return f.CommentID == 0 && f.Path == c.Path && f.Line == c.Line })
		if i >= 0 {
			rv.Findings[i].CommentID, rv.Findings[i].ReviewID = c.ID, id
		}
	}
	return nil
}

func countProven(fs []reviewed) int {
	n := 0
	for _, f := range fs {
		if f.Proof != nil && f.Proof.Proven {
			n++
		}
	}
	return n
}

// reviewOutcome is a review's counts for its outcome, nil for a task that
// is no review.
func reviewOutcome(tk *task) *app.ReviewOutcome {
	rv := tk.prog.Review
	if rv == nil {
		return nil
	}
	pol := tk.policy.Policy.Review
	o := &app.ReviewOutcome{Findings: len(rv.Findings), Proven: countProven(rv.Findings)}
	for _, c := range rv.Rechecked {
		switch {
		case c.Fixed:
			o.Resolved++
		case c.Dismissed:
			o.Dismissed++
		}
	}
	for _, f := range rv.Findings {
		if pol.Posts(f.Severity, f.Proof != nil && f.Proof.Proven) {
			o.Posted++
		}
	}
	return o
}
