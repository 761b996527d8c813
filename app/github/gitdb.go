package github

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
)

// Commits through the Git database API. A commit GitHub creates for an App
// that names neither an author nor a committer is the App's, and GitHub
// signs it, so it shows as verified; a git push cannot get that. The
// commit's tree is built on its parent's (base_tree) from only the paths
// that changed, so the upload is the change, not the repository.

// commitPermissions are what creating a commit and moving a branch need.
var commitPermissions = app.TokenPermissions{Contents: "write"}

// Committer returns the client acting as installation id on repo alone
// with contents: write, for creating commits and moving branches.
func (g *App) Committer(id int64, repo string) (*Installation, error) {
	return g.client(id, repo, commitPermissions)
}

// CreateCommit uploads c's changed files as blobs, builds the tree on the
// parent's, creates the commit and returns it. Nothing moves a branch:
// see MoveBranch.
func (i *Installation) CreateCommit(ctx context.Context, repo string, c app.NewCommit) (app.GitCommit, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.GitCommit{}, err
	}
	parent, err := i.GetCommit(ctx, repo, c.Parent)
	if err != nil {
		return app.GitCommit{}, err
	}
	// Deletions go first, so that a file replaced by a directory of the
	// same name is gone before its new entries arrive.
	var entries []*gh.TreeEntry
	for _, ch := range c.Changes {
		if ch.Deleted {
			entries = append(entries, &gh.TreeEntry{Path: gh.String(ch.Path), Mode: gh.String(ch.Mode), Type: gh.String(entryType(ch.Mode))})
		}
	}
	for _, ch := range c.Changes {
		if ch.Deleted {
			continue
		}
		e := &gh.TreeEntry{Path: gh.String(ch.Path), Mode: gh.String(ch.Mode), Type: gh.String(entryType(ch.Mode))}
		if ch.Mode == "160000" {
			e.SHA = gh.String(ch.Commit)
		} else {
			sha, err := i.createBlob(ctx, owner, name, ch.Content)
			if err != nil {
				return app.GitCommit{}, fmt.Errorf("upload %s to %s: %w", ch.Path, repo, err)
			}
			e.SHA = gh.String(sha)
		}
		entries = append(entries, e)
	}
	tctx, cancel := i.parent.withTimeout(ctx)
	tree, _, err := i.api.Git.CreateTree(tctx, owner, name, parent.Tree, entries)
	cancel()
	if isStatus(err, http.StatusNotFound) && touchesWorkflows(c.Changes) {
		return app.GitCommit{}, app.Errorf(app.EPolicy, "GitHub refuses to let agentbot change files in .github/workflows: the App has no `workflows` permission, on purpose.")
	}
	if err != nil {
		return app.GitCommit{}, fmt.Errorf("create tree on %s in %s: %w", parent.Tree, repo, err)
	}
	cctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	// Neither author nor committer: the commit is the App's, which is
	// what GitHub signs.
	made, _, err := i.api.Git.CreateCommit(cctx, owner, name, &gh.Commit{
		Message: gh.String(c.Message), Tree: &gh.Tree{SHA: tree.SHA}, Parents: []*gh.Commit{{SHA: gh.String(c.Parent)}},
	}, nil)
	if err != nil {
		return app.GitCommit{}, fmt.Errorf("create commit on %s in %s: %w", c.Parent, repo, err)
	}
	return gitCommit(made), nil
}

// touchesWorkflows reports whether changes reach .github/workflows, which
// GitHub lets an App change only with the workflows permission.
func touchesWorkflows(changes []app.TreeChange) bool {
	for _, c := range changes {
		if strings.HasPrefix(c.Path, ".github/workflows/") {
			return true
		}
	}
	return false
}

// entryType is the tree-entry type a mode names.
func entryType(mode string) string {
	switch mode {
	case "160000":
		return "commit"
	case "040000":
		return "tree"
	}
	return "blob"
}

// createBlob uploads content base64-encoded, which carries any bytes.
func (i *Installation) createBlob(ctx context.Context, owner, name string, content []byte) (string, error) {
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	b, _, err := i.api.Git.CreateBlob(ctx, owner, name, &gh.Blob{
		Content: gh.String(base64.StdEncoding.EncodeToString(content)), Encoding: gh.String("base64"),
	})
	if err != nil {
		return "", err
	}
	return b.GetSHA(), nil
}

// GetCommit reads commit sha of repo.
func (i *Installation) GetCommit(ctx context.Context, repo, sha string) (app.GitCommit, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.GitCommit{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	c, _, err := i.api.Git.GetCommit(ctx, owner, name, sha)
	if err != nil {
		return app.GitCommit{}, fmt.Errorf("read commit %s of %s: %w", sha, repo, err)
	}
	return gitCommit(c), nil
}

func gitCommit(c *gh.Commit) app.GitCommit {
	out := app.GitCommit{
		SHA: c.GetSHA(), Tree: c.GetTree().GetSHA(), Message: c.GetMessage(),
		Author:   fmt.Sprintf("%s <%s>", c.GetAuthor().GetName(), c.GetAuthor().GetEmail()),
		Verified: c.GetVerification().GetVerified(), Reason: c.GetVerification().GetReason(),
	}
	for _, p := range c.Parents {
		out.Parents = append(out.Parents, p.GetSHA())
	}
	return out
}

// BranchHead returns the commit branch of repo points at, "" when there
// is no such branch.
func (i *Installation) BranchHead(ctx context.Context, repo, branch string) (string, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return "", err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	ref, _, err := i.api.Git.GetRef(ctx, owner, name, "heads/"+branch)
	if isStatus(err, http.StatusNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read branch %s of %s: %w", branch, repo, err)
	}
	return ref.GetObject().GetSHA(), nil
}

// MoveBranch points branch of repo at sha. old is the commit the branch is
// expected at, "" for a branch that must not exist yet. GitHub refuses to
// create a branch that exists and, the update being no force, to move one
// to a commit that does not descend from its head: either way, with code
// app.EConflict, nothing moved.
func (i *Installation) MoveBranch(ctx context.Context, repo, branch, old, sha string) error {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	ref := &gh.Reference{Ref: gh.String("refs/heads/" + branch), Object: &gh.GitObject{SHA: gh.String(sha)}}
	if old == "" {
		_, _, err = i.api.Git.CreateRef(ctx, owner, name, ref)
	} else {
		_, _, err = i.api.Git.UpdateRef(ctx, owner, name, ref, false)
	}
	if isStatus(err, http.StatusUnprocessableEntity) {
		return app.Errorf(app.EConflict, "branch %s of %s moved while the change was made (expected %s): it was not overwritten, and nothing was pushed",
			branch, repo, orNoBranch(old))
	}
	if err != nil {
		return fmt.Errorf("move branch %s of %s to %s: %w", branch, repo, sha, err)
	}
	return nil
}

func orNoBranch(sha string) string {
	if sha == "" {
		return "no branch"
	}
	return sha
}
