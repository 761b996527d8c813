package github

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
)

// React puts r on the comment that carried t's command: an issue comment,
// or an inline review comment. GitHub answers an existing reaction with the
// existing one, so reacting twice is harmless. A task without a comment (a
// label trigger) has nothing to react to.
func (i *Installation) React(ctx context.Context, t *app.Task, r app.Reaction) error {
	owner, name, err := splitOwnerRepo(t.Repo)
	if err != nil {
		return err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	switch {
	case t.ReviewComment != nil:
		_, _, err = i.api.Reactions.CreatePullRequestCommentReaction(ctx, owner, name, t.ReviewComment.ID, string(r))
	case t.CommentID != 0:
		_, _, err = i.api.Reactions.CreateIssueCommentReaction(ctx, owner, name, t.CommentID, string(r))
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("react %s on %s#%d: %w", r, t.Repo, t.Number, err)
	}
	return nil
}

// createOnce makes a create step idempotent: it looks for what it would
// create, creates it only when absent, and after a failure that may or may
// not have created it (a 5xx or a lost answer) looks again before another
// try. The retrying transport never replays such a POST by itself.
func (i *Installation) createOnce(ctx context.Context, find func(context.Context) (bool, error), create func(context.Context) error) error {
	p := i.parent.cfg.Retry
	for attempt := 1; ; attempt++ {
		found, err := find(ctx)
		if err != nil || found {
			return err
		}
		err = create(ctx)
		if err == nil || !maybeCreated(err) || attempt >= p.Attempts {
			return err
		}
		if p.Sleep(ctx, p.backoff(attempt)) != nil {
			return err
		}
	}
}

// maybeCreated reports whether a failed POST may still have taken effect.
func maybeCreated(err error) bool {
	if e, ok := errors.AsType[*gh.ErrorResponse](err); ok && e.Response != nil {
		return e.Response.StatusCode >= 500
	}
	if _, ok := errors.AsType[*gh.RateLimitError](err); ok {
		return false
	}
	_, ok := errors.AsType[*gh.AbuseRateLimitError](err)
	return !ok
}

// taskMarker is the hidden line that ties a status comment to its task.
func taskMarker(taskID string) string { return "<!-- agentbot:task=" + taskID + " -->" }

// StatusComment is a task's one status comment on its issue or pull
// request: created on the first Set, edited on every later one, and found
// again by its hidden task marker by a worker that picks the task up after
// a restart. It belongs to the one goroutine that runs the task.
type StatusComment struct {
	inst   *Installation
	repo   string
	number int
	taskID string
	id     int64
}

// StatusComment returns the status comment of task on repo#number. Nothing
// is sent until Set.
func (i *Installation) StatusComment(repo string, number int, taskID string) *StatusComment {
	return &StatusComment{inst: i, repo: repo, number: number, taskID: taskID}
}

// ID is the comment's id, zero before the first Set.
func (s *StatusComment) ID() int64 { return s.id }

// Set makes the status comment say body (Markdown).
func (s *StatusComment) Set(ctx context.Context, body string) error {
	owner, name, err := splitOwnerRepo(s.repo)
	if err != nil {
		return err
	}
	ctx, cancel := s.inst.parent.withTimeout(ctx)
	defer cancel()
	marker := taskMarker(s.taskID)
	text := marker + "\n" + app.FitText(body, app.MaxTextLength-len(marker)-1)
	if s.id == 0 {
		created := false
		create := func(ctx context.Context) error {
			c, _, err := s.inst.api.Issues.CreateComment(ctx, owner, name, s.number, &gh.IssueComment{Body: &text})
			if err == nil {
				s.id, created = c.GetID(), true
			}
			return err
		}
		if err := s.inst.createOnce(ctx, s.find, create); err != nil {
			return fmt.Errorf("create status comment on %s#%d: %w", s.repo, s.number, err)
		}
		if created {
			return nil
		}
	}
	if _, _, err := s.inst.api.Issues.EditComment(ctx, owner, name, s.id, &gh.IssueComment{Body: &text}); err != nil {
		return fmt.Errorf("edit status comment %d on %s#%d: %w", s.id, s.repo, s.number, err)
	}
	return nil
}

// find looks through the thread for the comment carrying the task marker.
func (s *StatusComment) find(ctx context.Context) (bool, error) {
	owner, name, _ := splitOwnerRepo(s.repo)
	marker := taskMarker(s.taskID)
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := s.inst.api.Issues.ListComments(ctx, owner, name, s.number, opts)
		if err != nil {
			return false, fmt.Errorf("list comments of %s#%d: %w", s.repo, s.number, err)
		}
		for _, c := range cs {
			if strings.HasPrefix(c.GetBody(), marker) && c.GetUser().GetType() == "Bot" {
				s.id = c.GetID()
				return true, nil
			}
		}
		if resp.NextPage == 0 {
			return false, nil
		}
		opts.Page = resp.NextPage
	}
}

// checkOutput is out as the API takes it, each text trimmed to fit.
func checkOutput(o app.CheckOutput) *gh.CheckRunOutput {
	// A check run's summary and text take one character less than a comment.
	const limit = app.MaxTextLength - 1
	out := &gh.CheckRunOutput{Title: &o.Title}
	summary := app.FitText(o.Summary, limit)
	out.Summary = &summary
	if o.Text != "" {
		text := app.FitText(o.Text, limit)
		out.Text = &text
	}
	return out
}

// CheckRun is a task's "agentbot" check run on a head commit.
type CheckRun struct {
	inst *Installation
	repo string
	sha  string
	task string
	id   int64
}

// CheckRun returns the check run of task on headSHA. id is the run's id
// when the task kept it from an earlier Complete (keep it with the task's
// state, so that a worker resuming the task updates the same run), zero
// otherwise.
func (i *Installation) CheckRun(repo, headSHA, taskID string, id int64) *CheckRun {
	return &CheckRun{inst: i, repo: repo, sha: headSHA, task: taskID, id: id}
}

// ID is the check run's id, zero before it is created.
func (c *CheckRun) ID() int64 { return c.id }

// Complete ends the check run with conclusion and out, creating it
// completed unless its id is known: a task whose commit exists only at its
// end reports its run there, in one call.
func (c *CheckRun) Complete(ctx context.Context, conclusion app.Conclusion, out app.CheckOutput) error {
	owner, name, err := splitOwnerRepo(c.repo)
	if err != nil {
		return err
	}
	ctx, cancel := c.inst.parent.withTimeout(ctx)
	defer cancel()
	status, concl, done := "completed", string(conclusion), &gh.Timestamp{Time: time.Now()}
	if c.id != 0 {
		return c.update(ctx, owner, name, gh.UpdateCheckRunOptions{
			Name: cmp.Or(out.Name, app.CheckName), Status: &status, Conclusion: &concl, CompletedAt: done, Output: checkOutput(out),
		})
	}
	create := func(ctx context.Context) error {
		run, _, err := c.inst.api.Checks.CreateCheckRun(ctx, owner, name, gh.CreateCheckRunOptions{
			Name: cmp.Or(out.Name, app.CheckName), HeadSHA: c.sha, ExternalID: &c.task,
			Status: &status, Conclusion: &concl, CompletedAt: done, Output: checkOutput(out),
		})
		if err == nil {
			c.id = run.GetID()
		}
		return err
	}
	// GitHub has no lookup of a check run by its external id in the API
	// agentbot uses, so a run is found again only by the id its creator
	// kept (see Installation.CheckRun). A create that failed with a 5xx is
	// tried again; should GitHub have created it nonetheless, the newer run
	// of the same name is the one GitHub shows on the commit.
	known := func(context.Context) (bool, error) { return c.id != 0, nil }
	if err := c.inst.createOnce(ctx, known, create); err != nil {
		return fmt.Errorf("create check run on %s@%s: %w", c.repo, c.sha, err)
	}
	return nil
}

func (c *CheckRun) update(ctx context.Context, owner, name string, opts gh.UpdateCheckRunOptions) error {
	if _, _, err := c.inst.api.Checks.UpdateCheckRun(ctx, owner, name, c.id, opts); err != nil {
		return fmt.Errorf("update check run %d on %s: %w", c.id, c.repo, err)
	}
	return nil
}

// EnsurePullRequest returns the open pull request from d.Head into repo,
// opening it with d's title, body and draft flag when there is none, and
// makes sure it carries d's labels and reviewers. A follow-up push to the
// agent's branch thus never opens a second pull request.
func (i *Installation) EnsurePullRequest(ctx context.Context, repo string, d app.PullRequestDraft) (app.PullRequest, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.PullRequest{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	var pr app.PullRequest
	find := func(ctx context.Context) (bool, error) {
		prs, _, err := i.api.PullRequests.List(ctx, owner, name, &gh.PullRequestListOptions{
			State: "open", Head: owner + ":" + d.Head,
		})
		if err != nil {
			return false, fmt.Errorf("list pull requests for %s:%s: %w", repo, d.Head, err)
		}
		if len(prs) == 0 {
			return false, nil
		}
		pr.Number, pr.HTMLURL = prs[0].GetNumber(), prs[0].GetHTMLURL()
		return true, nil
	}
	body := app.FitText(d.Body, app.MaxTextLength)
	create := func(ctx context.Context) error {
		p, _, err := i.api.PullRequests.Create(ctx, owner, name, &gh.NewPullRequest{
			Title: &d.Title, Head: &d.Head, Base: &d.Base, Body: &body, Draft: &d.Spec.Draft,
		})
		if err != nil {
			return err
		}
		pr = app.PullRequest{Number: p.GetNumber(), HTMLURL: p.GetHTMLURL(), Created: true}
		return nil
	}
	if err := i.createOnce(ctx, find, create); err != nil {
		return app.PullRequest{}, fmt.Errorf("open pull request %s from %s: %w", repo, d.Head, err)
	}
	// Labels and reviewers are applied to a found pull request too, so that
	// a step retried after failing here completes; both calls are idempotent.
	if len(d.Spec.Labels) > 0 {
		if _, _, err := i.api.Issues.AddLabelsToIssue(ctx, owner, name, pr.Number, d.Spec.Labels); err != nil {
			return pr, fmt.Errorf("label pull request %s#%d: %w", repo, pr.Number, err)
		}
	}
	if len(d.Spec.Reviewers) > 0 {
		if _, _, err := i.api.PullRequests.RequestReviewers(ctx, owner, name, pr.Number,
			gh.ReviewersRequest{Reviewers: d.Spec.Reviewers}); err != nil {
			return pr, fmt.Errorf("request reviewers on %s#%d: %w", repo, pr.Number, err)
		}
	}
	return pr, nil
}

// replyMarker is the hidden line that ties a thread reply to its task.
func replyMarker(taskID string) string { return "<!-- agentbot:reply=" + taskID + " -->" }

// ReplyInThread answers task taskID in the thread of the inline review
// comment commentID on pull request repo#pull, once: a reply carrying the
// task's marker is looked for before another is posted.
func (i *Installation) ReplyInThread(ctx context.Context, repo string, pull int, commentID int64, taskID, body string) error {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	marker := replyMarker(taskID)
	text := marker + "\n" + app.FitText(body, app.MaxTextLength-len(marker)-1)
	find := func(ctx context.Context) (bool, error) {
		opts := &gh.PullRequestListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
		for {
			cs, resp, err := i.api.PullRequests.ListComments(ctx, owner, name, pull, opts)
			if err != nil {
				return false, fmt.Errorf("list review comments of %s#%d: %w", repo, pull, err)
			}
			for _, c := range cs {
				if c.GetInReplyTo() == commentID && strings.HasPrefix(c.GetBody(), marker) {
					return true, nil
				}
			}
			if resp.NextPage == 0 {
				return false, nil
			}
			opts.Page = resp.NextPage
		}
	}
	create := func(ctx context.Context) error {
		u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", owner, name, pull, commentID)
		req, err := i.api.NewRequest("POST", u, map[string]string{"body": text})
		if err != nil {
			return err
		}
		_, err = i.api.Do(ctx, req, nil)
		return err
	}
	if err := i.createOnce(ctx, find, create); err != nil {
		return fmt.Errorf("reply to review comment %d on %s#%d: %w", commentID, repo, pull, err)
	}
	return nil
}
