package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/tools"
	"github.com/agentbot/agentbot/runner/workspace"
)

// A review's finding is fixed from its thread: "/agent fix" replied to
// the inline comment that posted it (the comment says so) is a fix whose
// task is the finding, with its test file. When the review saw that test
// fail on the head, it is the fix's reproduction: the fix is to add it as
// it is and make it pass, and the host runs the change's new tests on the
// pull request's head without the fix, where it fails; a change that drops
// or alters it is not reproduced, and says so. Like every fix on a pull
// request, it is a follow-up commit on agentbot's own pull request and a
// pull request against the branch of a person's (target).

// findingOf is the finding whose inline comment begins the thread tk's
// command was replied in, or nil: not in a thread, or not a finding's.
// The findings are those of the pull request's reviews, newest first,
// with the earlier ones a review carried.
func (r *Runner) findingOf(ctx context.Context, tk *task) (*reviewed, error) {
	rc := tk.ReviewComment
	if rc == nil || rc.InReplyTo == 0 {
		return nil, nil
	}
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return nil, err
	}
	for _, t := range all {
		if t.Verb != app.VerbReview || t.State != app.StateSucceeded {
			continue
		}
		p, err := r.loadProgress(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if p.Review == nil {
			continue
		}
		for _, f := range append(p.Review.Findings, p.Review.Carried...) {
			if f.CommentID == rc.InReplyTo {
				return &f, nil
			}
		}
	}
	return nil, nil
}

// findingFollowUp makes the finding whose thread tk was asked in its task,
// when it is one; any other inline command goes on as it is.
func (r *Runner) findingFollowUp(ctx context.Context, tk *task) (*followUp, error) {
	f, err := r.findingOf(ctx, tk)
	if err != nil || f == nil {
		return nil, err
	}
	tk.log.Info("fixing a review's finding", "comment", f.CommentID, "path", f.Path, "line", f.Line, "test", f.Test != nil)
	return &followUp{text: text.FindingTask(tk.request(), findingView(*f)), finding: f}, nil
}

// fixesFinding reports whether f, what a task follows up on, is a
// review's finding: a reproduction is tried, as for a fix of an issue,
// even where a follow-up on a pull request would not try one.
func (f *followUp) fixesFinding() bool {
	return f != nil && f.finding != nil
}

// failingTest is f's test when the review saw it fail on the head — the
// fix's reproduction, which the change must carry unchanged — or nil.
func failingTest(f *reviewed) *tools.FindingTest {
	if f == nil || f.Test == nil || f.Proof == nil || !f.Proof.Proven && !f.Proof.PreExisting {
		return nil
	}
	return f.Test
}

// findingTestDropped says why the change in ws does not carry the
// finding's failing test as the review wrote it, or "" when it does or
// f is no finding with such a test: without it, whatever reproduced the
// change is not the finding's test.
func findingTestDropped(tk *task, f *followUp, ws *workspace.Workspace) string {
	if !f.fixesFinding() {
		return ""
	}
	t := failingTest(f.finding)
	if t == nil {
		return ""
	}
	path := app.CodeSpan(t.Path, ownIssue(tk))
	b, err := fs.ReadFile(ws.Root().FS(), t.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the change does not add the finding's test " + path
	case err != nil:
		return fmt.Sprintf("the finding's test %s cannot be read (%v)", path, err)
	case string(b) != t.Content:
		return "the change alters the finding's test " + path
	}
	return ""
}

// findingView is f as texts show it.
func findingView(f reviewed) text.Finding {
	v := text.Finding{Finding: f.Finding, Reproduces: failingTest(&f) != nil}
	if p := f.Proof; p != nil {
		v.Tested, v.Proven, v.PreExisting, v.BaseLacks, v.Why, v.Run = true, p.Proven, p.PreExisting, p.BaseLacks, p.Why, p.Head
	}
	return v
}

// findingViews is fs as texts show them.
func findingViews(fs []reviewed) []text.Finding {
	out := make([]text.Finding, len(fs))
	for i, f := range fs {
		out[i] = findingView(f)
	}
	return out
}
