package github

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
)

// reviewMarker is the hidden line that ties a submitted review to its
// task.
func reviewMarker(taskID string) string { return "<!-- agentbot:review=" + taskID + " -->" }

// SubmitReview submits task taskID's review of pull request repo#pull,
// once: a review whose body carries the task's marker is looked for
// before another is submitted. It returns the review's id.
func (i *Installation) SubmitReview(ctx context.Context, repo string, pull int, taskID string, d app.ReviewDraft) (int64, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return 0, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	marker := reviewMarker(taskID)
	body := marker + "\n" + app.FitText(d.Body, app.MaxTextLength-len(marker)-1)
	var id int64
	find := func(ctx context.Context) (bool, error) {
		err := i.eachReview(ctx, repo, pull, func(r *gh.PullRequestReview) bool {
			if strings.HasPrefix(r.GetBody(), marker) {
				id = r.GetID()
				return false
			}
			return true
		})
		return id != 0, err
	}
	create := func(ctx context.Context) error {
		req := &gh.PullRequestReviewRequest{CommitID: gh.String(d.CommitID), Body: gh.String(body), Event: gh.String(d.Event)}
		for _, c := range d.Comments {
			req.Comments = append(req.Comments, &gh.DraftReviewComment{Path: gh.String(c.Path), Line: gh.Int(c.Line), Side: gh.String("RIGHT"),
				Body: gh.String(app.FitText(c.Body, app.MaxTextLength))})
		}
		r, _, err := i.api.PullRequests.CreateReview(ctx, owner, name, pull, req)
		if err == nil {
			id = r.GetID()
		}
		return err
	}
	if err := i.createOnce(ctx, find, create); err != nil {
		return 0, fmt.Errorf("submit the review of %s#%d: %w", repo, pull, err)
	}
	return id, nil
}

// eachReview calls each with every review of repo#pull, oldest first,
// until it returns false.
func (i *Installation) eachReview(ctx context.Context, repo string, pull int, each func(*gh.PullRequestReview) bool) error {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return err
	}
	opts := &gh.ListOptions{PerPage: 100}
	for {
		rs, resp, err := i.api.PullRequests.ListReviews(ctx, owner, name, pull, opts)
		if err != nil {
			return fmt.Errorf("list reviews of %s#%d: %w", repo, pull, err)
		}
		for _, r := range rs {
			if !each(r) {
				return nil
			}
		}
		if resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
}

// DismissedReviews are the ids of the reviews of repo#pull that were
// dismissed.
func (i *Installation) DismissedReviews(ctx context.Context, repo string, pull int) ([]int64, error) {
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	var out []int64
	err := i.eachReview(ctx, repo, pull, func(r *gh.PullRequestReview) bool {
		if r.GetState() == "DISMISSED" {
			out = append(out, r.GetID())
		}
		return true
	})
	return out, err
}
