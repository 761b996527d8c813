package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"
)

// Reaction is an emoji reaction agentbot puts on the command's comment.
type Reaction string

// The reactions that tell a commenter where their command is.
const (
	ReactionReceived Reaction = "eyes"     // 👀 the command was received
	ReactionDone     Reaction = "rocket"   // 🚀 the task succeeded
	ReactionFailed   Reaction = "confused" // 😕 the task failed or was refused
)

// React puts r on the comment that carried t's command: an issue comment,
// or an inline review comment. GitHub answers an existing reaction with the
// existing one, so reacting twice is harmless. A task without a comment (a
// label trigger) has nothing to react to.
func (i *Installation) React(ctx context.Context, t *Task, r Reaction) error {
	owner, name, err := splitOwnerRepo(t.Repo)
	if err != nil {
		return err
	}
	ctx, cancel := i.app.withTimeout(ctx)
	defer cancel()
	switch {
	case t.ReviewComment != nil:
		_, _, err = i.gh.Reactions.CreatePullRequestCommentReaction(ctx, owner, name, t.ReviewComment.ID, string(r))
	case t.CommentID != 0:
		_, _, err = i.gh.Reactions.CreateIssueCommentReaction(ctx, owner, name, t.CommentID, string(r))
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("react %s on %s#%d: %w", r, t.Repo, t.Number, err)
	}
	return nil
}

// MaxTextLength is the longest body GitHub accepts for a comment, a pull
// request body or a check run's summary and text.
const MaxTextLength = 65536

// FitText returns s unchanged when it fits in limit bytes, or else its head
// and tail cut at line ends with a note saying how much was left out.
// GitHub counts characters; counting bytes never undercounts them.
//
// Trimming, not splitting into continuation comments, because every text
// agentbot posts is either edited in place (the status comment, the check
// run) or has a full copy elsewhere (the trace behind the check run's
// link): one place per text keeps "created once, edited after" true. The
// head keeps the summary and the task marker; the tail keeps the last
// output, where failures are.
func FitText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := func(n int) string {
		return fmt.Sprintf("\n\n… %d characters cut here to fit GitHub's limit …\n\n", n)
	}
	// The note for len(s) is at least as long as the one written: a cut
	// has no more characters than bytes.
	room := limit - len(note(len(s)))
	if room <= 0 {
		return validPrefix(s, limit)
	}
	head := lineCut(validPrefix(s, room*2/3), false)
	tail := lineCut(validSuffix(s, room-len(head)), true)
	cut := s[len(head) : len(s)-len(tail)]
	return head + note(utf8.RuneCountInString(cut)) + tail
}

// validPrefix returns at most n bytes of s's head without splitting a rune.
func validPrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// validSuffix returns at most n bytes of s's tail without splitting a rune.
func validSuffix(s string, n int) string {
	i := max(len(s)-n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// lineCut drops the partial line at the cut: the last one of a head, the
// first one of a tail. A text without line breaks is kept as is.
func lineCut(s string, tail bool) string {
	if tail {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return s[i+1:]
		}
		return s
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[:i+1]
	}
	return s
}

// createOnce makes a create step idempotent: it looks for what it would
// create, creates it only when absent, and after a failure that may or may
// not have created it (a 5xx or a lost answer) looks again before another
// try. The retrying transport never replays such a POST by itself.
func (i *Installation) createOnce(ctx context.Context, find func(context.Context) (bool, error), create func(context.Context) error) error {
	p := i.app.cfg.Retry
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
	if e, ok := errors.AsType[*github.ErrorResponse](err); ok && e.Response != nil {
		return e.Response.StatusCode >= 500
	}
	if _, ok := errors.AsType[*github.RateLimitError](err); ok {
		return false
	}
	_, ok := errors.AsType[*github.AbuseRateLimitError](err)
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
	ctx, cancel := s.inst.app.withTimeout(ctx)
	defer cancel()
	marker := taskMarker(s.taskID)
	text := marker + "\n" + FitText(body, MaxTextLength-len(marker)-1)
	if s.id == 0 {
		created := false
		create := func(ctx context.Context) error {
			c, _, err := s.inst.gh.Issues.CreateComment(ctx, owner, name, s.number, &github.IssueComment{Body: &text})
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
	if _, _, err := s.inst.gh.Issues.EditComment(ctx, owner, name, s.id, &github.IssueComment{Body: &text}); err != nil {
		return fmt.Errorf("edit status comment %d on %s#%d: %w", s.id, s.repo, s.number, err)
	}
	return nil
}

// find looks through the thread for the comment carrying the task marker.
func (s *StatusComment) find(ctx context.Context) (bool, error) {
	owner, name, _ := splitOwnerRepo(s.repo)
	marker := taskMarker(s.taskID)
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := s.inst.gh.Issues.ListComments(ctx, owner, name, s.number, opts)
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

// Conclusion is how a check run ended.
type Conclusion string

// Check run conclusions agentbot uses.
const (
	ConclusionSuccess   Conclusion = "success"
	ConclusionFailure   Conclusion = "failure"
	ConclusionCancelled Conclusion = "cancelled"
	ConclusionNeutral   Conclusion = "neutral" // refused: nothing was tried
)

// CheckName is the name of agentbot's check run.
const CheckName = "agentbot"

// CheckOutput is what a check run shows: a title, a Markdown summary, and
// the trace as text. Each is trimmed to what GitHub accepts.
type CheckOutput struct {
	Title   string
	Summary string
	Text    string
}

func (o CheckOutput) github() *github.CheckRunOutput {
	// A check run's summary and text take one character less than a comment.
	const limit = MaxTextLength - 1
	out := &github.CheckRunOutput{Title: &o.Title}
	summary := FitText(o.Summary, limit)
	out.Summary = &summary
	if o.Text != "" {
		text := FitText(o.Text, limit)
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
func (c *CheckRun) Complete(ctx context.Context, conclusion Conclusion, out CheckOutput) error {
	owner, name, err := splitOwnerRepo(c.repo)
	if err != nil {
		return err
	}
	ctx, cancel := c.inst.app.withTimeout(ctx)
	defer cancel()
	status, concl, done := "completed", string(conclusion), &github.Timestamp{Time: time.Now()}
	if c.id != 0 {
		return c.update(ctx, owner, name, github.UpdateCheckRunOptions{
			Name: CheckName, Status: &status, Conclusion: &concl, CompletedAt: done, Output: out.github(),
		})
	}
	create := func(ctx context.Context) error {
		run, _, err := c.inst.gh.Checks.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{
			Name: CheckName, HeadSHA: c.sha, ExternalID: &c.task,
			Status: &status, Conclusion: &concl, CompletedAt: done, Output: out.github(),
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

func (c *CheckRun) update(ctx context.Context, owner, name string, opts github.UpdateCheckRunOptions) error {
	if _, _, err := c.inst.gh.Checks.UpdateCheckRun(ctx, owner, name, c.id, opts); err != nil {
		return fmt.Errorf("update check run %d on %s: %w", c.id, c.repo, err)
	}
	return nil
}

// PullRequestDraft is the pull request a task wants to exist.
type PullRequestDraft struct {
	Head  string // the agent's branch, already pushed
	Base  string // usually the default branch
	Title string
	Body  string
	Spec  PullRequestSpec // draft, labels and reviewers, from the policy
}

// PullRequest is an open pull request agentbot opened or found.
type PullRequest struct {
	Number  int
	HTMLURL string
	Created bool // false when it was found open rather than opened by this call
}

// EnsurePullRequest returns the open pull request from d.Head into repo,
// opening it with d's title, body and draft flag when there is none, and
// makes sure it carries d's labels and reviewers. A follow-up push to the
// agent's branch thus never opens a second pull request.
func (i *Installation) EnsurePullRequest(ctx context.Context, repo string, d PullRequestDraft) (PullRequest, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return PullRequest{}, err
	}
	ctx, cancel := i.app.withTimeout(ctx)
	defer cancel()
	var pr PullRequest
	find := func(ctx context.Context) (bool, error) {
		prs, _, err := i.gh.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{
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
	body := FitText(d.Body, MaxTextLength)
	create := func(ctx context.Context) error {
		p, _, err := i.gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{
			Title: &d.Title, Head: &d.Head, Base: &d.Base, Body: &body, Draft: &d.Spec.Draft,
		})
		if err != nil {
			return err
		}
		pr = PullRequest{Number: p.GetNumber(), HTMLURL: p.GetHTMLURL(), Created: true}
		return nil
	}
	if err := i.createOnce(ctx, find, create); err != nil {
		return PullRequest{}, fmt.Errorf("open pull request %s from %s: %w", repo, d.Head, err)
	}
	// Labels and reviewers are applied to a found pull request too, so that
	// a step retried after failing here completes; both calls are idempotent.
	if len(d.Spec.Labels) > 0 {
		if _, _, err := i.gh.Issues.AddLabelsToIssue(ctx, owner, name, pr.Number, d.Spec.Labels); err != nil {
			return pr, fmt.Errorf("label pull request %s#%d: %w", repo, pr.Number, err)
		}
	}
	if len(d.Spec.Reviewers) > 0 {
		if _, _, err := i.gh.PullRequests.RequestReviewers(ctx, owner, name, pr.Number,
			github.ReviewersRequest{Reviewers: d.Spec.Reviewers}); err != nil {
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
	ctx, cancel := i.app.withTimeout(ctx)
	defer cancel()
	marker := replyMarker(taskID)
	text := marker + "\n" + FitText(body, MaxTextLength-len(marker)-1)
	find := func(ctx context.Context) (bool, error) {
		opts := &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
		for {
			cs, resp, err := i.gh.PullRequests.ListComments(ctx, owner, name, pull, opts)
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
		req, err := i.gh.NewRequest("POST", u, map[string]string{"body": text})
		if err != nil {
			return err
		}
		_, err = i.gh.Do(ctx, req, nil)
		return err
	}
	if err := i.createOnce(ctx, find, create); err != nil {
		return fmt.Errorf("reply to review comment %d on %s#%d: %w", commentID, repo, pull, err)
	}
	return nil
}
