// Package app is agentbot's core: the domain types (Task, Verb, State), the
// command grammar, the repository policy read from .github/agent.yml, trust
// decisions, user-facing errors, and the GitHub App itself (installation
// clients, policy loading from the default branch, reporting).
//
// Every other package imports app; app imports none of them.
package app
