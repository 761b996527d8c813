package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
)

// readPermissions are what reading a repository's history needs: its
// contents, pull requests and issues, and nothing it could change.
var readPermissions = app.TokenPermissions{Contents: "read", Issues: "read", PullRequests: "read"}

// RepoInstallation returns the id of the App's installation that covers
// repo (owner/name), or an *app.Error with code app.ENotFound.
func (g *App) RepoInstallation(ctx context.Context, repo string) (int64, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return 0, err
	}
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	in, _, err := g.appAPI.Apps.FindRepositoryInstallation(ctx, owner, name)
	if err != nil {
		if notFound(err) {
			return 0, app.Errorf(app.ENotFound, "The App is not installed on %s.", repo)
		}
		return 0, fmt.Errorf("find the installation on %s: %w", repo, err)
	}
	return in.GetID(), nil
}

// Reader returns a client of installation id on repo alone whose token
// may only read: for commands that study a repository's history.
func (g *App) Reader(id int64, repo string) (*Installation, error) {
	return g.client(id, repo, readPermissions)
}

// PullRequest reads pull request number of repo.
func (i *Installation) PullRequest(ctx context.Context, repo string, number int) (app.MergedPull, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.MergedPull{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	pr, _, err := i.api.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		if notFound(err) {
			return app.MergedPull{}, app.Errorf(app.ENotFound, "Pull request %s#%d was not found.", repo, number)
		}
		return app.MergedPull{}, fmt.Errorf("get pull request %s#%d: %w", repo, number, err)
	}
	return app.MergedPull{
		Number: pr.GetNumber(), Title: pr.GetTitle(), Body: pr.GetBody(), HTMLURL: pr.GetHTMLURL(),
		Merged: pr.GetMerged(), MergeCommit: pr.GetMergeCommitSHA(), HeadSHA: pr.GetHead().GetSHA(), Commits: pr.GetCommits(),
	}, nil
}

// Commit reads the commit ref (a SHA, branch or tag) of repo.
func (i *Installation) Commit(ctx context.Context, repo, ref string) (app.CommitInfo, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.CommitInfo{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	c, _, err := i.api.Repositories.GetCommit(ctx, owner, name, ref, nil)
	if err != nil {
		if notFound(err) || isStatus(err, 422) {
			return app.CommitInfo{}, app.Errorf(app.ENotFound, "Commit %s of %s was not found.", ref, repo)
		}
		return app.CommitInfo{}, fmt.Errorf("get commit %s of %s: %w", ref, repo, err)
	}
	info := app.CommitInfo{SHA: c.GetSHA(), Message: c.GetCommit().GetMessage()}
	for _, p := range c.Parents {
		info.Parents = append(info.Parents, p.GetSHA())
	}
	return info, nil
}

// Tree lists every entry of repo's tree at ref (a commit SHA), depth
// first, through the contents API: one request a directory.
func (i *Installation) Tree(ctx context.Context, repo, ref string) ([]app.RepoFile, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return nil, err
	}
	var files []app.RepoFile
	var walk func(dir string) error
	walk = func(dir string) error {
		list, err := i.contents(ctx, owner, name, dir, ref)
		if err != nil {
			return err
		}
		for _, e := range list {
			if e.GetType() == "dir" {
				if err := walk(e.GetPath()); err != nil {
					return err
				}
				continue
			}
			files = append(files, app.RepoFile{Path: e.GetPath(), SHA: e.GetSHA(), Type: e.GetType(), Size: e.GetSize()})
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, fmt.Errorf("list the tree of %s at %s: %w", repo, ref, err)
	}
	return files, nil
}

func (i *Installation) contents(ctx context.Context, owner, name, dir, ref string) ([]*gh.RepositoryContent, error) {
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	_, list, _, err := i.api.Repositories.GetContents(ctx, owner, name, dir, &gh.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, fmt.Errorf("directory %q: %w", dir, err)
	}
	return list, nil
}

// File reads the file path of repo at ref. The contents API serves files
// up to 1 MB; a larger one is an error that says so.
func (i *Installation) File(ctx context.Context, repo, path, ref string) ([]byte, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return nil, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	f, _, _, err := i.api.Repositories.GetContents(ctx, owner, name, path, &gh.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		if notFound(err) {
			return nil, app.Errorf(app.ENotFound, "%s was not found in %s at %s.", path, repo, ref)
		}
		return nil, fmt.Errorf("read %s of %s at %s: %w", path, repo, ref, err)
	}
	if f == nil || f.GetType() != "file" {
		return nil, fmt.Errorf("read %s of %s at %s: not a file", path, repo, ref)
	}
	if f.GetEncoding() == "none" {
		return nil, fmt.Errorf("read %s of %s at %s: %d bytes, more than the contents API serves", path, repo, ref, f.GetSize())
	}
	s, err := f.GetContent()
	if err != nil {
		return nil, fmt.Errorf("decode %s of %s at %s: %w", path, repo, ref, err)
	}
	return []byte(s), nil
}
