package runner

import "github.com/agentbot/agentbot/runner/change"

// The change's steps and what they find are runner/change's: the worker,
// agentbot run and agentbot eval make a change through them. These are
// the runner's names for what its progress keeps and its reports show.
type (
	Verification = change.Verification
	Reproduction = change.Reproduction
	Prepared     = change.Prepared
	Setup        = change.Setup
	SetupFailure = change.SetupFailure
	CannotRun    = change.CannotRun
)
