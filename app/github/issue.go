package github

import (
	"context"
	"fmt"

	"github.com/agentbot/agentbot/app"
)

// Issue reads issue (or pull request) number of repo.
func (i *Installation) Issue(ctx context.Context, repo string, number int) (app.IssueInfo, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.IssueInfo{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	is, _, err := i.api.Issues.Get(ctx, owner, name, number)
	if err != nil {
		if notFound(err) {
			return app.IssueInfo{}, app.Errorf(app.ENotFound, "%s#%d was not found.", repo, number)
		}
		return app.IssueInfo{}, fmt.Errorf("get issue %s#%d: %w", repo, number, err)
	}
	info := app.IssueInfo{Title: is.GetTitle(), Body: is.GetBody(), Author: is.GetUser().GetLogin(),
		AuthorType: is.GetUser().GetType(), CreatedAt: is.GetCreatedAt().Time}
	if !is.IsPullRequest() {
		return info, nil
	}
	pr, _, err := i.api.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return app.IssueInfo{}, fmt.Errorf("get pull request %s#%d: %w", repo, number, err)
	}
	info.Pull = &app.PullInfo{
		Head:     pr.GetHead().GetRef(),
		HeadRepo: pr.GetHead().GetRepo().GetFullName(),
		HeadSHA:  pr.GetHead().GetSHA(),
		Base:     pr.GetBase().GetRef(),
		BaseSHA:  pr.GetBase().GetSHA(),
	}
	return info, nil
}
