package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentbot/agentbot/app"
)

// Authorizer decides who may command agentbot on one repository, by the
// trigger section of its policy.
type Authorizer struct {
	perms   app.Permissions
	trigger Trigger
}

// NewAuthorizer returns an Authorizer that asks perms for roles and applies
// the policy's trigger rules.
func NewAuthorizer(perms app.Permissions, p Policy) *Authorizer {
	return &Authorizer{perms: perms, trigger: p.Trigger}
}

// Authorize decides whether actor may run inv. Bots are refused, so that
// agentbot never answers itself or another automation; commands on pull
// requests from forks are refused unless trigger.allow_forks; approve and
// deny need an approver (trigger.approvers); every other command needs a
// login in trigger.users or a role in trigger.roles. The error is only for
// a failed permission lookup, which deserves a retry rather than a refusal.
func (a *Authorizer) Authorize(ctx context.Context, actor app.Actor, inv app.Invocation) (app.Decision, error) {
	cmd := quoteCommand(a.trigger.Command, inv)
	refuse := func(format string, args ...any) (app.Decision, error) {
		return app.Decision{Reason: cmd + " was not run: " + fmt.Sprintf(format, args...)}, nil
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
	approval := inv.Verb == app.VerbApprove || inv.Verb == app.VerbDeny
	if approval {
		logins, roles = splitApprovers(a.trigger.Approvers)
		listedIn = "trigger.approvers"
	}
	if containsFold(logins, actor.Login) {
		return app.Decision{Allowed: true, Reason: fmt.Sprintf("%s is listed in %s", who, listedIn)}, nil
	}
	role, err := a.perms.Permission(ctx, inv.Repo, actor.Login)
	if err != nil {
		return app.Decision{}, fmt.Errorf("authorize %s on %s: %w", actor.Login, inv.Repo, err)
	}
	if slices.Contains(roles, role) {
		return app.Decision{Allowed: true, Reason: fmt.Sprintf("%s has the %s role on %s", who, role, inv.Repo)}, nil
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
func quoteCommand(word string, inv app.Invocation) string {
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

// MayCommand reports whether who may command agentbot on repo, by the
// rule Authorize applies to a fix: the conversation shown to the model is
// the text of those whose commands it would run.
func (a *Authorizer) MayCommand(ctx context.Context, repo string, who app.Actor) (bool, error) {
	d, err := a.Authorize(ctx, who, app.Invocation{Repo: repo, Verb: app.VerbFix})
	return d.Allowed, err
}
