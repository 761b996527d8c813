package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
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

// Authorizer decides who may command agentbot on one repository, by the
// trigger section of its policy.
type Authorizer struct {
	perms   Permissions
	trigger Trigger
}

// NewAuthorizer returns an Authorizer that asks perms for roles and applies
// the policy's trigger rules.
func NewAuthorizer(perms Permissions, p Policy) *Authorizer {
	return &Authorizer{perms: perms, trigger: p.Trigger}
}

// Authorize decides whether actor may run inv. Bots are refused, so that
// agentbot never answers itself or another automation; commands on pull
// requests from forks are refused unless trigger.allow_forks; approve and
// deny need an approver (trigger.approvers); every other command needs a
// login in trigger.users or a role in trigger.roles. The error is only for
// a failed permission lookup, which deserves a retry rather than a refusal.
func (a *Authorizer) Authorize(ctx context.Context, actor Actor, inv Invocation) (Decision, error) {
	cmd := quoteCommand(a.trigger.Command, inv)
	refuse := func(format string, args ...any) (Decision, error) {
		return Decision{Reason: cmd + " was not run: " + fmt.Sprintf(format, args...)}, nil
	}
	who := "@" + actor.Login
	switch {
	case actor.Login == "":
		return refuse("its author is unknown.")
	case actor.IsBot():
		return refuse("%s is a bot, and agentbot takes commands only from people.", who)
	case inv.FromFork && !a.trigger.AllowForks:
		return refuse("this pull request comes from a fork, and this repository's policy does not serve forks (trigger.allow_forks).")
	}

	logins, roles, listedIn := a.trigger.Users, a.trigger.Roles, "trigger.users"
	approval := inv.Verb == VerbApprove || inv.Verb == VerbDeny
	if approval {
		logins, roles = splitApprovers(a.trigger.Approvers)
		listedIn = "trigger.approvers"
	}
	if containsFold(logins, actor.Login) {
		return Decision{Allowed: true, Reason: fmt.Sprintf("%s is listed in %s", who, listedIn)}, nil
	}
	role, err := a.perms.Permission(ctx, inv.Repo, actor.Login)
	if err != nil {
		return Decision{}, fmt.Errorf("authorize %s on %s: %w", actor.Login, inv.Repo, err)
	}
	if slices.Contains(roles, role) {
		return Decision{Allowed: true, Reason: fmt.Sprintf("%s has the %s role on %s", who, role, inv.Repo)}, nil
	}
	has := fmt.Sprintf("%s has the %s role on %s", who, role, inv.Repo)
	if role == "none" || role == "" {
		has = fmt.Sprintf("%s is not a collaborator on %s", who, inv.Repo)
	}
	if approval {
		return refuse("only approvers may approve or deny (%s: %s), and %s.", listedIn, orNobody(a.trigger.Approvers), has)
	}
	return refuse("commands need the %s role or a login listed in %s, and %s.", orList(roles), listedIn, has)
}

// splitApprovers separates trigger.approvers into logins and roles; role
// names are reserved, so an entry that names a role is one.
func splitApprovers(approvers []string) (logins, roles []string) {
	for _, a := range approvers {
		if isRole(a) {
			roles = append(roles, a)
		} else {
			logins = append(logins, a)
		}
	}
	return logins, roles
}

// containsFold reports whether list holds login; GitHub logins are
// case-insensitive.
func containsFold(list []string, login string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, login) })
}

// orList writes ["admin", "maintain", "write"] as "admin, maintain or write".
func orList(items []string) string {
	if len(items) == 0 {
		return "(no role)"
	}
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func orNobody(items []string) string {
	if len(items) == 0 {
		return "nobody"
	}
	return strings.Join(items, ", ")
}

// maxQuotedCommand bounds the command quoted in a reason, in characters.
const maxQuotedCommand = 80

// quoteCommand returns the command as a Markdown code span: its first line
// as written, shortened, or the command word and verb when the text is
// unknown.
func quoteCommand(word string, inv Invocation) string {
	text, _, _ := strings.Cut(strings.TrimSpace(inv.Text), "\n")
	text = strings.TrimSpace(text)
	if text == "" {
		text = strings.TrimSpace(word + " " + string(inv.Verb))
	}
	if utf8.RuneCountInString(text) > maxQuotedCommand {
		text = string([]rune(text)[:maxQuotedCommand-1]) + "…"
	}
	// A code span holding backticks needs a longer fence and spaces.
	fence := "`"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	if fence != "`" {
		return fence + " " + text + " " + fence
	}
	return fence + text + fence
}
