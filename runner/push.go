package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/workspace"
)

// push puts the workspace's commit on the task's branch and returns the
// commit the branch now points at. By default the commit is made again
// through GitHub's Git database API, which signs it as the App's, so the
// pull request shows it verified; the policy's
// pull_request.signed_commits: false pushes the local commit over git
// instead. lease is the commit the branch is expected at, "" for a new
// branch; either way a branch that moved is never overwritten.
func (r *Runner) push(ctx context.Context, tk *task, ws *workspace.Workspace, remote workspace.Remote, lease string) (string, error) {
	if !tk.policy.Policy.PullRequest.SignedCommits {
		if err := ws.Push(ctx, remote, tk.prog.Branch, lease); err != nil {
			return "", err
		}
		return ws.Head(), nil
	}
	inst, err := r.cfg.GitHub.Committer(tk.InstallationID, tk.Repo)
	if err != nil {
		return "", err
	}
	return pushThroughAPI(ctx, inst, ws, tk.Repo, tk.prog.Branch, lease)
}

// pushThroughAPI recreates the workspace's last commit on GitHub, on the
// same parent and with exactly its tree, and moves branch to it from
// lease. A branch already at such a commit (a retry after the move) is
// left as it is.
func pushThroughAPI(ctx context.Context, inst Committer, ws *workspace.Workspace, repo, branch, lease string) (string, error) {
	ch, err := ws.Change(ctx)
	if err != nil {
		return "", err
	}
	current, err := inst.BranchHead(ctx, repo, branch)
	if err != nil {
		return "", err
	}
	if current != lease {
		if current != "" {
			// Made by an earlier attempt that died before saving it?
			c, err := inst.GetCommit(ctx, repo, current)
			if err != nil {
				return "", err
			}
			if c.Tree == ch.Tree && len(c.Parents) == 1 && c.Parents[0] == ch.Parent {
				return current, nil
			}
		}
		return "", app.Errorf(app.EConflict, "branch %s moved (expected %s, found %s): it was not overwritten, and nothing was pushed",
			branch, orNoBranch(lease), orNoBranch(current))
	}
	changes := make([]app.TreeChange, 0, len(ch.Files))
	for _, f := range ch.Files {
		tc := app.TreeChange{Path: f.Path, Mode: f.Mode, Deleted: f.Deleted}
		switch {
		case f.Deleted:
		case f.Mode == "160000":
			tc.Commit = f.Object
		default:
			if tc.Content, err = ws.ReadBlob(ctx, f.Object); err != nil {
				return "", err
			}
		}
		changes = append(changes, tc)
	}
	c, err := inst.CreateCommit(ctx, repo, app.NewCommit{Parent: ch.Parent, Message: ch.Message, Changes: changes})
	if err != nil {
		return "", err
	}
	// Blobs are content-addressed: the same bytes give the same tree. A
	// different one means the upload changed something, and the gate
	// passed only the workspace's.
	if c.Tree != ch.Tree {
		return "", fmt.Errorf("push %s: GitHub built tree %s, but the gated tree is %s; the branch was not moved", branch, c.Tree, ch.Tree)
	}
	if err := inst.MoveBranch(ctx, repo, branch, lease, c.SHA); err != nil {
		return "", err
	}
	return c.SHA, nil
}

// coAuthors are whom a commit of tk credits: the requester, or for a
// follow-up that failing CI started, the person who asked for the task
// that opened the pull request, as kept with it. An App is credited by no
// trailer: its bot is the commits' author already, and GitHub attributes
// no address to it. A pull request whose record is not its
// installation's and repository's credits nobody.
func (r *Runner) coAuthors(ctx context.Context, tk *task) ([]workspace.Signature, error) {
	login, id := tk.Requester, tk.RequesterID
	if tk.CI != nil {
		p, ok, err := r.cfg.Pulls.Pull(ctx, tk.Repo, tk.Number)
		if err != nil {
			return nil, err
		}
		if !ok || !p.Owner.Owns(recordOwner(tk)) {
			tk.log.Warn("no record of who asked for the pull request; its CI follow-up credits nobody", "kept", ok)
			return nil, nil
		}
		login, id = p.Requester, p.RequesterID
	}
	if login == "" || strings.HasSuffix(login, "[bot]") || strings.EqualFold(login, r.cfg.Bot.Name) {
		return nil, nil
	}
	return []workspace.Signature{coAuthor(login, id)}, nil
}

// coAuthor is a person as a commit trailer names them: the address
// GitHub attributes to their account by id, and by login for a task that
// was queued without the id.
func coAuthor(login string, id int64) workspace.Signature {
	if id > 0 {
		return workspace.Signature{Name: login, Email: fmt.Sprintf("%d+%s@users.noreply.github.com", id, login)}
	}
	return workspace.Signature{Name: login, Email: login + "@users.noreply.github.com"}
}

func orNoBranch(sha string) string {
	if sha == "" {
		return "no branch"
	}
	return sha
}
