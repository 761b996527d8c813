// Package githubapp hands agentbot's GitHub App (app/github) to the
// runner as the runner's GitHub. The runner declares what it needs of
// GitHub and imports no client; Go has no covariant results, so the App's
// methods that return its concrete clients, status comments and check
// runs are adapted here, and everything else passes through.
package githubapp

import (
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/runner"
)

// New returns a as the runner's GitHub.
func New(a *github.App) runner.GitHub { return gitHub{a} }

type gitHub struct{ *github.App }

func (g gitHub) Installation(id int64, repo string) (runner.Installation, error) {
	i, err := g.App.Installation(id, repo)
	if err != nil {
		return nil, err
	}
	return installation{i}, nil
}

func (g gitHub) Committer(id int64, repo string) (runner.Committer, error) {
	i, err := g.App.Committer(id, repo)
	if err != nil {
		return nil, err
	}
	return i, nil
}

type installation struct{ *github.Installation }

func (i installation) StatusComment(repo string, number int, taskID string) runner.StatusComment {
	return i.Installation.StatusComment(repo, number, taskID)
}

func (i installation) CheckRun(repo, headSHA, taskID string, id int64) runner.CheckRun {
	return i.Installation.CheckRun(repo, headSHA, taskID, id)
}
