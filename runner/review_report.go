package runner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
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
	title := "No findings"
	if len(posted) > 0 {
		title = fmt.Sprintf("%d %s, %d proven", len(posted), plural2(len(posted), "finding", "findings"), countProven(posted))
	}
	if len(posted) > 0 && rv.ReviewID == 0 {
		event := app.ReviewEventComment
		if blocking && tk.issue.Author != r.cfg.Bot.Name {
			// GitHub refuses a request for changes on one's own pull
			// request; the failing check run blocks it instead.
			event = app.ReviewEventRequestChanges
		}
		d := app.ReviewDraft{CommitID: tk.prog.Base, Event: event, Body: reviewBody(tk, st, inline, summarized)}
		for _, f := range inline {
			d.Comments = append(d.Comments, app.ReviewDraftComment{Path: f.Path, Line: f.Line, Body: findingComment(tk, rv, f)})
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
	detail := fmt.Sprintf("reviewed %s: %d findings, %d proven, %d posted, %d inline", shortSHA(tk.prog.Base), len(rv.Findings), proven, len(posted), len(inline))
	if err := tk.rep.audit(ctx, app.AuditAnswered, detail); err != nil {
		return err
	}
	tk.log.Info("reviewed", "findings", len(rv.Findings), "proven", proven, "posted", len(posted), "inline", len(inline), "held", len(held))
	conclusion := app.ConclusionNeutral
	if blocking {
		conclusion = app.ConclusionFailure
	}
	summary := "No findings."
	if len(posted) > 0 {
		summary = findingsList(tk, posted)
	}
	if err := tk.rep.completeCheck(ctx, conclusion, app.CheckOutput{Name: app.ReviewCheckName, Title: "Review: " + title,
		Summary: summary + "\n\n" + usageLine(st), Text: tk.rep.checkText(ctx, st)}); err != nil {
		return err
	}
	status := fmt.Sprintf("🔎 **Reviewed** `%s`: no findings.\n\n%s", shortSHA(tk.prog.Base), quoteRequest(tk))
	if len(posted) > 0 {
		status = fmt.Sprintf("🔎 **Reviewed** `%s`: %s, in the review above.\n\n%s", shortSHA(tk.prog.Base), strings.ToLower(title[:1])+title[1:], quoteRequest(tk))
	}
	return tk.rep.finish(ctx, app.StateSucceeded, status, "reviewed")
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

func plural2(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// severityMark is a severity as a review shows it.
func severityMark(s app.Severity) string {
	switch s {
	case app.SeverityHigh:
		return "🔴 High"
	case app.SeverityMedium:
		return "🟠 Medium"
	}
	return "🟡 Low"
}

// proofLabel says how far a finding is proven, after its severity.
func proofLabel(f reviewed) string {
	switch p := f.Proof; {
	case p != nil && p.Proven:
		return "✅ proven by a test"
	case p != nil && p.PreExisting:
		return "♻️ pre-existing: its test fails on the base too"
	}
	return "⚠️ unproven"
}

// findingComment is a finding's inline comment: severity, proof, the
// model's words made inert, and the test with its failure, collapsed.
func findingComment(tk *task, rv *reviewProgress, f reviewed) string {
	own := ownIssue(tk)
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · %s — **%s**\n\n%s\n", severityMark(f.Severity), proofLabel(f),
		app.InertPlain(oneLine(f.Title), own), app.Inert(f.Body, own))
	fmt.Fprintf(&b, "\n<sub>Reply `%s fix` in this thread for a fix of this finding%s.</sub>\n",
		cmp.Or(tk.policy.Policy.Trigger.Command, app.DefaultCommand), fixSuffix(f))
	p := f.Proof
	if f.Test == nil || p == nil {
		return b.String()
	}
	if !p.Proven && !p.PreExisting {
		fmt.Fprintf(&b, "\nIts test does not show it: %s.\n", p.Why)
	}
	summary := fmt.Sprintf("Test %s", app.CodeSpan(f.Test.Path, own))
	switch {
	case p.Proven && !p.BaseLacks:
		summary += fmt.Sprintf(": fails on %s, passes on the base %s", shortSHA(tk.prog.Base), shortSHA(rv.Base))
	case p.Proven:
		summary += fmt.Sprintf(": fails on %s (the base %s lacks the code)", shortSHA(tk.prog.Base), shortSHA(rv.Base))
	}
	fmt.Fprintf(&b, "\n<details><summary>%s</summary>\n\nAdd it as %s:\n\n%s\n", summary, app.CodeSpan(f.Test.Path, own),
		app.CodeBlock(f.Test.Content, langOf(f.Test.Path), own))
	if v := p.Head; v != nil && len(v.Checks) > 0 {
		c := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(&b, "\n**%s** on `%s` in a fresh sandbox (%s): %s\n\n%s\n", c.Name, shortSHA(tk.prog.Base),
			app.CodeSpan(c.Run, own), strings.TrimPrefix(strings.TrimPrefix(resultText(c), "❌ "), "✅ "), app.CodeBlock(change.Tail(c.Output, reproductionExcerpt), "", own))
	}
	b.WriteString("</details>\n")
	return b.String()
}

// reviewBody is the review's own text: the model's summary, and the
// findings that are not inline.
func reviewBody(tk *task, st *agent.State, inline, summarized []reviewed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "🔎 **agentbot review** of `%s`: %d inline %s", shortSHA(tk.prog.Base), len(inline), plural2(len(inline), "comment", "comments"))
	if len(summarized) > 0 {
		fmt.Fprintf(&b, ", %d more below", len(summarized))
	}
	b.WriteString(".\n\n")
	if s := strings.TrimSpace(st.Summary); s != "" {
		b.WriteString(app.Inert(s, ownIssue(tk)) + "\n\n")
	}
	if len(summarized) > 0 {
		b.WriteString("**Also found:**\n\n" + findingsList(tk, summarized) + "\n")
	}
	b.WriteString("Proven findings come with a test the host ran in a fresh sandbox without network: it fails on the head and passes on the base. Unproven ones are the reviewer's reading.\n")
	return b.String()
}

// findingsList is findings as a Markdown list, one line each.
func findingsList(tk *task, fs []reviewed) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "- **%s** · %s — %s:%d: %s\n", severityMark(f.Severity), proofLabel(f),
			app.CodeSpan(f.Path, ownIssue(tk)), f.Line, app.InertPlain(oneLine(f.Title), ownIssue(tk)))
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// langOf is a code block's language for a test file.
func langOf(path string) string {
	switch {
	case strings.HasSuffix(path, ".go"):
		return "go"
	case strings.HasSuffix(path, ".py"):
		return "python"
	case strings.HasSuffix(path, ".ts"), strings.HasSuffix(path, ".tsx"):
		return "ts"
	case strings.HasSuffix(path, ".js"), strings.HasSuffix(path, ".mjs"), strings.HasSuffix(path, ".cjs"):
		return "js"
	}
	return ""
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
