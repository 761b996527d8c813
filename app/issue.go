package app

import (
	"context"
	"fmt"
	"net/http"
)

// IssueInfo is what a task reads of the issue or pull request it was asked
// on: the words of the request's context, and for a pull request where its
// branch lives.
type IssueInfo struct {
	Title  string
	Body   string
	Author string
	Pull   *PullInfo // set for a pull request
}

// PullInfo locates a pull request's branches.
type PullInfo struct {
	Head     string // the head branch
	HeadRepo string // owner/name of the repository holding Head: the base repository or a fork
	HeadSHA  string
	Base     string
}

// Issue reads issue (or pull request) number of repo.
func (i *Installation) Issue(ctx context.Context, repo string, number int) (IssueInfo, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return IssueInfo{}, err
	}
	ctx, cancel := i.app.withTimeout(ctx)
	defer cancel()
	is, _, err := i.gh.Issues.Get(ctx, owner, name, number)
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return IssueInfo{}, Errorf(ENotFound, "%s#%d was not found.", repo, number)
		}
		return IssueInfo{}, fmt.Errorf("get issue %s#%d: %w", repo, number, err)
	}
	info := IssueInfo{Title: is.GetTitle(), Body: is.GetBody(), Author: is.GetUser().GetLogin()}
	if !is.IsPullRequest() {
		return info, nil
	}
	pr, _, err := i.gh.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return IssueInfo{}, fmt.Errorf("get pull request %s#%d: %w", repo, number, err)
	}
	info.Pull = &PullInfo{
		Head:     pr.GetHead().GetRef(),
		HeadRepo: pr.GetHead().GetRepo().GetFullName(),
		HeadSHA:  pr.GetHead().GetSHA(),
		Base:     pr.GetBase().GetRef(),
	}
	return info, nil
}
