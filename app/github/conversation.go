package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
)

// conversationPages bounds the pages of 100 read of each list (comments,
// reviews, review comments); of a longer list the first headPages and the
// last pages are read. A thread that long is cut from the middle by the
// token budget anyway, and the newest posts, the command among them, must
// be read.
const (
	conversationPages = 10
	headPages         = 3
)

// Conversation reads what was written on issue (or pull request) number of
// repo: its description (from info, already read), its comments and, on a
// pull request, its submitted reviews and inline review comments. Who may
// be shown of it is the caller's decision (app.BuildThread).
func (i *Installation) Conversation(ctx context.Context, repo string, number int, info app.IssueInfo) (app.Conversation, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.Conversation{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	c := app.Conversation{Posts: []app.Post{{Kind: app.PostBody, Author: app.Actor{Login: info.Author, Type: info.AuthorType},
		At: info.CreatedAt, Body: info.Body}}}
	more, err := pages(func(page int) (int, error) {
		list, resp, err := i.api.Issues.ListComments(ctx, owner, name, number, &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{Page: page, PerPage: 100}})
		for _, x := range list {
			c.Posts = append(c.Posts, app.Post{Kind: app.PostComment, ID: x.GetID(), Author: actor(x.GetUser()), At: x.GetCreatedAt().Time, Body: x.GetBody()})
		}
		return lastPage(resp), err
	})
	if err != nil {
		return app.Conversation{}, fmt.Errorf("list comments of %s#%d: %w", repo, number, err)
	}
	c.Truncated = more
	if info.Pull == nil {
		return c, nil
	}
	more, err = pages(func(page int) (int, error) {
		list, resp, err := i.api.PullRequests.ListReviews(ctx, owner, name, number, &gh.ListOptions{Page: page, PerPage: 100})
		for _, x := range list {
			if x.GetState() == "PENDING" || x.GetState() == "DISMISSED" {
				continue
			}
			c.Posts = append(c.Posts, app.Post{Kind: app.PostReview, ID: x.GetID(), Author: actor(x.GetUser()), At: x.GetSubmittedAt().Time,
				Body: x.GetBody(), State: x.GetState()})
		}
		return lastPage(resp), err
	})
	if err != nil {
		return app.Conversation{}, fmt.Errorf("list reviews of %s#%d: %w", repo, number, err)
	}
	c.Truncated = c.Truncated || more
	more, err = pages(func(page int) (int, error) {
		list, resp, err := i.api.PullRequests.ListComments(ctx, owner, name, number, &gh.PullRequestListCommentsOptions{ListOptions: gh.ListOptions{Page: page, PerPage: 100}})
		for _, x := range list {
			c.Posts = append(c.Posts, app.Post{Kind: app.PostReviewComment, ID: x.GetID(), Author: actor(x.GetUser()), At: x.GetCreatedAt().Time,
				Body: x.GetBody(), Path: x.GetPath(), Line: x.GetLine(), InReplyTo: x.GetInReplyTo()})
		}
		return lastPage(resp), err
	})
	if err != nil {
		return app.Conversation{}, fmt.Errorf("list review comments of %s#%d: %w", repo, number, err)
	}
	c.Truncated = c.Truncated || more
	return c, nil
}

// pages reads a list: page 1, which tells the last page, then the others
// pagesToRead names; more reports that pages were left unread.
func pages(read func(page int) (last int, err error)) (more bool, err error) {
	last, err := read(1)
	if err != nil {
		return false, err
	}
	for _, p := range pagesToRead(last) {
		if _, err := read(p); err != nil {
			return false, err
		}
	}
	return last > conversationPages, nil
}

// pagesToRead are the pages after the first to read of a list whose last
// page is last: all of them, or the first headPages and the newest.
func pagesToRead(last int) []int {
	var out []int
	for p := 2; p <= last; p++ {
		if last <= conversationPages || p <= headPages || p > last-(conversationPages-headPages) {
			out = append(out, p)
		}
	}
	return out
}

// lastPage is the list's last page, as the first page's Link header says;
// 0 when there is one page.
func lastPage(resp *gh.Response) int {
	if resp == nil {
		return 0
	}
	return resp.LastPage
}

func actor(u *gh.User) app.Actor { return app.Actor{Login: u.GetLogin(), Type: u.GetType()} }
