// Package github is agentbot's GitHub App: installation clients and the
// tokens behind them, retries, policy loading from the default branch,
// issue reading, reporting (reactions, one status comment, check runs, pull
// requests, thread replies) and the manifest flow that registers the App.
//
// Every client a task gets is scoped to the task's one repository and to
// the permissions its calls need (App.Installation); clone and push
// tokens are scoped the same way (App.Token). What a task does through
// them cannot reach another repository of the same installation.
//
// go-github is imported as gh, since this package's name is github. The
// simulator the tests and the demo run against is sim/github.
package github
