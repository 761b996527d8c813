package app

import (
	"context"
	"strings"
)

// Permissions tells a person's role on a repository, as GitHub's
// collaborator-permission API does (role_name): admin, maintain, write,
// triage, read, or none for someone who is not a collaborator.
// *Installation satisfies it.
type Permissions interface {
	Permission(ctx context.Context, repo, login string) (string, error)
}

// Actor is who wrote a command.
type Actor struct {
	Login string
	Type  string // GitHub's user type: "User", "Bot", "Organization"
}

// IsBot reports whether the actor is a bot: GitHub says so, or the login
// is an App's ("renovate[bot]").
func (a Actor) IsBot() bool {
	return strings.EqualFold(a.Type, "Bot") || strings.HasSuffix(a.Login, "[bot]")
}

// Invocation is a command as trust judges it: what was asked, and where.
type Invocation struct {
	Repo     string // owner/name
	Verb     Verb
	Text     string // the command as written, quoted in the reason
	FromFork bool   // on a pull request whose head is in another repository
}

// Decision is the answer to a command, with its reason: for a refusal, a
// sentence quoting the command, ready to be posted as the reply; for an
// acceptance, what granted it, for the audit log.
type Decision struct {
	Allowed bool
	Reason  string
}
