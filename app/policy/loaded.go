package policy

import (
	"github.com/agentbot/agentbot/app"
)

// LoadedPolicy is the policy that governs a task, with where it was read.
type LoadedPolicy struct {
	Policy Policy
	Repo   app.RepoInfo
	// Commit is the default branch's commit the repository's policy was
	// read at, to be recorded in the task: never the pull request's head.
	Commit string
}
