package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/text"
)

// followUp is what a follow-up on a pull request addresses beyond the
// command's own words: a review's inline comments, failing CI, or a
// review's finding.
type followUp struct {
	text     string              // for the model, after the instructions
	comments []app.InlineComment // answered in their threads when the task ends
	refused  []refusedComment    // outside the allowed paths: answered with the refusal
	ci       []ciFailure         // the failing checks, each with how it is answered
	finding  *reviewed           // the review's finding whose thread asked for the fix (finding.go)
}

type refusedComment struct {
	comment app.InlineComment
	why     string
}

// quiet reports whether a refusal of tk is kept off GitHub: nobody asked
// for it in words. A review that requests changes of someone who may not
// command, or the CI of a pull request that is not the agent's, is no
// command to refuse.
func quiet(tk *task) bool {
	return tk.CI != nil || tk.Auto != nil || (tk.Review != nil && tk.Review.Implicit)
}

// authorize decides whether tk may run. A follow-up that failing CI
// started has no requester to ask about: it runs on the agent's own pull
// requests, which someone who may command asked for. Nor has an
// automatic review, which the policy asks for (autoReview).
func (r *Runner) authorize(ctx context.Context, tk *task, authz *policy.Authorizer, inv app.Invocation) (app.Decision, error) {
	if tk.Auto != nil {
		return autoReview(tk), nil
	}
	if tk.CI == nil {
		return authz.Authorize(ctx, app.Actor{Login: tk.Requester, Type: "User"}, inv)
	}
	if !r.agentsPull(tk) {
		return app.Decision{Reason: fmt.Sprintf("#%d is not one of agentbot's pull requests", tk.Number)}, nil
	}
	return app.Decision{Allowed: true, Reason: "failing CI on agentbot's pull request"}, nil
}

// agentsPull reports whether tk is on one of agentbot's pull requests:
// opened by the App itself, from a branch of the repository under the
// policy's branch prefix. The branch's name alone proves nothing: anyone
// who may push can name a branch "agent/…".
func (r *Runner) agentsPull(tk *task) bool {
	p := tk.issue.Pull
	return p != nil && strings.EqualFold(tk.issue.Author, r.cfg.Bot.Name) &&
		p.HeadRepo == tk.Repo && strings.HasPrefix(p.Head, tk.policy.Policy.PullRequest.BranchPrefix)
}

// followUp gathers what a review or CI follow-up addresses, once the task
// is admitted and holds its pull request, and tells the reporter, which
// answers it however the task ends; nil for a task that follows up on
// nothing. A follow-up with nothing to address is an *ended.
func (r *Runner) followUp(ctx context.Context, tk *task) (*followUp, error) {
	var f *followUp
	var err error
	switch {
	case tk.Review != nil:
		f, err = r.reviewFollowUp(ctx, tk)
	case tk.Verb == app.VerbFixCI:
		f, err = r.ciFollowUp(ctx, tk)
	case tk.ReviewComment != nil:
		f, err = r.findingFollowUp(ctx, tk)
	}
	tk.rep.follows(f)
	return f, err
}

// reviewFollowUp reads the review's inline comments: the ones on paths
// the agent may change become the task, the others are answered with the
// refusal once the task ends.
func (r *Runner) reviewFollowUp(ctx context.Context, tk *task) (*followUp, error) {
	if tk.Review.Implicit && !r.agentsPull(tk) {
		return nil, ignored("changes requested on a pull request that is not agentbot's")
	}
	comments, err := tk.inst.ReviewComments(ctx, tk.Repo, tk.Number, tk.Review.ID)
	if err != nil {
		return nil, err
	}
	f := &followUp{}
	for _, c := range comments {
		if err := tk.policy.Policy.Paths.Check(c.Path); err != nil {
			f.refused = append(f.refused, refusedComment{c, app.ErrorMessage(err)})
			continue
		}
		f.comments = append(f.comments, c)
	}
	if len(comments) == 0 {
		// "/agent fix" in a review without inline comments is a follow-up
		// like one in a comment.
		return f, nil
	}
	if len(f.comments) == 0 && tk.Instructions == "" {
		return f, finished(app.StateRefused, text.NothingToAddress, "")
	}
	var b strings.Builder
	if len(f.comments) > 0 {
		fmt.Fprintf(&b, "## The review's inline comments\n\nAddress every comment below in one change. A comment may concern lines the pull request did not change; it is still in scope.\n")
	}
	for n, c := range f.comments {
		fmt.Fprintf(&b, "\n### %d. %s", n+1, c.Path)
		if c.Line > 0 {
			fmt.Fprintf(&b, " line %d", c.Line)
		}
		fmt.Fprintf(&b, " (@%s)\n\n%s\n", c.Author, strings.TrimSpace(app.CleanText(c.Body)))
		if c.DiffHunk != "" {
			fmt.Fprintf(&b, "\n%s\n", text.Fence(c.DiffHunk, "diff"))
		}
	}
	for _, c := range f.refused {
		fmt.Fprintf(&b, "\n(A comment on %s is outside the paths you may change and is answered apart; leave it.)\n", c.comment.Path)
	}
	f.text = b.String()
	return f, nil
}

// changedPaths are the files the task's pushed change touches.
func (rp *reporter) changedPaths() map[string]bool {
	out, tk, run := map[string]bool{}, rp.tk, rp.acct.run
	if run == nil || tk.prog.Pushed == "" {
		return out
	}
	files, _, err := gitdiff.Parse(strings.NewReader(run.Diff))
	if err != nil {
		tk.log.Warn("read the pushed diff for the review replies", "err", err)
		return out
	}
	for _, f := range files {
		out[f.OldName], out[f.NewName] = true, true
	}
	delete(out, "")
	return out
}

// ciFollowUp finds the pull request's failing checks and what they said,
// and judges each failing check on the head once: a follow-up, "fails on
// the base too", or "the follow-ups are used". It ends the task when
// there is nothing for it to fix: the head moved on, every failing check
// was answered before, fails on the base too, or the automatic
// follow-ups are used up.
func (r *Runner) ciFollowUp(ctx context.Context, tk *task) (*followUp, error) {
	pull := tk.issue.Pull
	if pull == nil {
		return nil, finished(app.StateRefused, text.NotAPull(tk.Verb, tk.policy.Policy.Trigger.Command, tk.Number), "")
	}
	head := pull.HeadSHA
	if tk.prog.Base != "" {
		// Resumed: the head may be this task's own push by now.
		head = tk.prog.Base
	} else if ci := tk.CI; ci != nil {
		if ci.HeadSHA != head {
			return nil, ignored(fmt.Sprintf("the pull request's head moved on from %s to %s", ci.HeadSHA, head))
		}
		if tk.policy.Policy.PullRequest.CIFollowups == 0 {
			return nil, ignored("pull_request.ci_followups is 0")
		}
	}
	checks, err := tk.inst.CIChecks(ctx, tk.Repo, head, "", 0)
	if err != nil {
		return nil, err
	}
	answers, err := r.ciAnswers(ctx, tk)
	if err != nil {
		return nil, err
	}
	earlier := map[string]app.CIAnswer{}
	for _, a := range answers {
		if a.Head == head && a.Task != tk.ID {
			earlier[ciKey(a)] = a
		}
	}
	var all []ciFailure
	for _, c := range checks {
		if !app.CIFailed(c.Conclusion) || len(all) == app.CIChecksShown {
			continue
		}
		f := ciFailure{check: c, answer: app.CIAnswer{Owner: recordOwner(tk), Head: head, AppID: c.AppID, Check: c.Name, Task: tk.ID}}
		if a, ok := earlier[ciKey(f.answer)]; ok {
			f.answer = a
			all = append(all, f)
			continue
		}
		if f.base, err = r.baseRun(ctx, tk, c); err != nil {
			return nil, err
		}
		f.answer.Decision = app.CIFollowUp
		if f.base != nil && app.CIFailed(f.base.Conclusion) {
			f.answer.Decision, f.answer.BaseRun = app.CIFailsOnBase, f.base.HTMLURL
		}
		all = append(all, f)
	}
	if len(all) == 0 {
		if tk.CI != nil {
			return nil, ignored("no check of another App fails on " + head)
		}
		return nil, finished(app.StateRefused, text.NoFailingCheck(tk.Number, head), "")
	}
	if tk.CI != nil {
		if all, err = r.answerCI(ctx, tk, all, answers); err != nil {
			return nil, err
		}
	}
	f := &followUp{ci: all}
	switch ciDecided(tk, all) {
	case app.CIFollowUp:
		f.text = ciText(tk, head, all)
		return f, nil
	case app.CIFollowUpsUsed:
		return f, finished(app.StateRefused, text.CIFollowUpsUsed(tk.Number, tk.policy.Policy.PullRequest.CIFollowups), "follow-ups for CI used up")
	case app.CIFailsOnBase:
		return f, finished(app.StateRefused, text.CIFailsOnBase(tk.Number, pull.Base), failsOnBaseStep(tk))
	}
	return f, ignored("every check failing on " + head + " was answered before")
}

// ciFailure is a failing check, its latest finished run on the base, and
// how it is answered: by this task, or by the earlier one that answered
// it on the same head.
type ciFailure struct {
	check  app.CICheck
	base   *app.CICheck
	answer app.CIAnswer
}

// earlier reports whether another task answered f.
func (f ciFailure) earlier(tk *task) bool { return f.answer.Task != tk.ID }

// ciKey names a check on a head among a pull request's answers.
func ciKey(a app.CIAnswer) string { return fmt.Sprintf("%s %d %s", a.Head, a.AppID, a.Check) }

// recordOwner is whose the records tk leaves for other tasks are.
func recordOwner(tk *task) app.RecordOwner {
	return app.RecordOwner{InstallationID: tk.InstallationID, RepoID: tk.policy.Repo.ID}
}

// ciDecided is what tk does about failing CI: a follow-up when one check
// it answers calls for one; else it says the follow-ups are used, or
// that the checks fail on the base too; "" when every check was
// answered before.
func ciDecided(tk *task, all []ciFailure) app.CIDecision {
	var decided app.CIDecision
	for _, f := range all {
		switch d := f.answer.Decision; {
		case f.earlier(tk):
		case d == app.CIFollowUp:
			return d
		case d == app.CIFollowUpsUsed || decided == "":
			decided = d
		}
	}
	return decided
}

// ciAnswers are the answers to failing CI on tk's pull request that tk
// may go by: none for a follow-up a person asked for, who is answered
// whatever came before; else those its own installation and repository
// recorded.
func (r *Runner) ciAnswers(ctx context.Context, tk *task) ([]app.CIAnswer, error) {
	if tk.CI == nil {
		return nil, nil
	}
	all, err := r.cfg.Pulls.CIAnswers(ctx, tk.Repo, tk.Number)
	if err != nil {
		return nil, err
	}
	owner := recordOwner(tk)
	return slices.DeleteFunc(all, func(a app.CIAnswer) bool { return !a.Owner.Owns(owner) }), nil
}

// answerCI bounds the follow-ups of a CI follow-up's checks that call for
// one: pull_request.ci_followups per pull request, counted over the
// tasks that followed up before. It then records the answers to the checks
// not answered before and returns all with the answers that stand. Tasks
// on a pull request run one at a time, so the count is not raced; the
// record settles the rest.
func (r *Runner) answerCI(ctx context.Context, tk *task, all []ciFailure, answers []app.CIAnswer) ([]ciFailure, error) {
	followed := map[string]bool{}
	for _, a := range answers {
		if a.Decision == app.CIFollowUp && a.Task != tk.ID {
			followed[a.Task] = true
		}
	}
	used := len(followed) >= tk.policy.Policy.PullRequest.CIFollowups
	var mine []app.CIAnswer
	var at []int
	for i, f := range all {
		if f.earlier(tk) {
			continue
		}
		if used && f.answer.Decision == app.CIFollowUp && tk.prog.Base == "" {
			all[i].answer.Decision = app.CIFollowUpsUsed
		}
		mine, at = append(mine, all[i].answer), append(at, i)
	}
	stood, err := r.cfg.Pulls.AnswerCI(ctx, tk.Repo, tk.Number, mine)
	if err != nil {
		return nil, err
	}
	for k, a := range stood {
		all[at[k]].answer = a
	}
	return all, nil
}

// baseRun is the latest finished run of check c on the pull request's
// base commit, or nil when there is none.
func (r *Runner) baseRun(ctx context.Context, tk *task, c app.CICheck) (*app.CICheck, error) {
	base := tk.issue.Pull.BaseSHA
	if base == "" {
		base = tk.issue.Pull.Base
	}
	runs, err := tk.inst.CIChecks(ctx, tk.Repo, base, c.Name, c.AppID)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return &runs[0], nil // newest first
}

// failsOnBaseStep is the step of a task that found every failing check
// failing on the base too.
func failsOnBaseStep(tk *task) string { return "fails on " + tk.issue.Pull.Base + " too" }

// ciText is what the model reads of the failing checks: those the
// follow-up addresses, with their output, and the others to leave.
func ciText(tk *task, head string, all []ciFailure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Failing CI on the pull request's head (%s)\n\nThe repository's CI fails on this pull request. Make these checks pass; their output follows.\n", head)
	for _, f := range all {
		if f.earlier(tk) || f.answer.Decision != app.CIFollowUp {
			continue
		}
		c := f.check
		fmt.Fprintf(&b, "\n### %s (%s, %s)\n", c.Name, c.AppSlug, c.Conclusion)
		if c.Title != "" {
			fmt.Fprintf(&b, "\n%s\n", c.Title)
		}
		if c.Summary != "" {
			fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.Summary))
		}
		if len(c.Annotations) > 0 {
			b.WriteString("\nAnnotations:\n")
			for _, a := range c.Annotations {
				fmt.Fprintf(&b, "- %s:%d %s: %s\n", a.Path, a.StartLine, a.Level, strings.TrimSpace(a.Message))
			}
		}
		if c.Log != "" {
			cut := ""
			if c.LogCut {
				cut = ", its end"
			}
			fmt.Fprintf(&b, "\nThe job's log%s:\n\n%s\n", cut, text.Fence(c.Log, "text"))
		}
	}
	for _, f := range all {
		switch {
		case f.answer.Decision == app.CIFailsOnBase:
			fmt.Fprintf(&b, "\n(%s fails on %s too; it is not this pull request's to fix: leave it.)\n", f.check.Name, tk.issue.Pull.Base)
		case f.earlier(tk):
			fmt.Fprintf(&b, "\n(%s was answered by an earlier follow-up: leave it.)\n", f.check.Name)
		}
	}
	return b.String()
}

// taskText is tk's instructions with what f addresses; f may be nil.
func (f *followUp) taskText(tk *task) string {
	if f == nil || f.text == "" {
		return tk.Instructions
	}
	if tk.Instructions == "" {
		return f.text
	}
	return tk.Instructions + "\n\n" + f.text
}
