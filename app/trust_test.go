package app

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// roleTable answers Permission from a map of login to role, counting calls.
type roleTable struct {
	roles map[string]string
	calls int
	err   error
}

func (r *roleTable) Permission(_ context.Context, repo, login string) (string, error) {
	r.calls++
	if r.err != nil {
		return "", r.err
	}
	if repo != "acme/app" {
		return "none", nil
	}
	if role, ok := r.roles[login]; ok {
		return role, nil
	}
	return "none", nil
}

func TestAuthorize(t *testing.T) {
	base, err := BuildPolicy(openServer())
	if err != nil {
		t.Fatal(err)
	}
	custom := base
	custom.Trigger.Roles = []string{"admin", "triage"}
	custom.Trigger.Users = []string{"Contractor"}
	custom.Trigger.Approvers = []string{"admin", "lead"}
	custom.Trigger.AllowForks = true
	nobody := base
	nobody.Trigger.Approvers = nil

	roles := map[string]string{"ada": "admin", "max": "maintain", "wes": "write", "tri": "triage", "rea": "read", "lead": "write"}
	fix := Invocation{Repo: "acme/app", Verb: VerbFix, Text: "/agent fix the flaky test"}
	approve := Invocation{Repo: "acme/app", Verb: VerbApprove, Text: "/agent approve"}
	fork := fix
	fork.FromFork = true

	tests := []struct {
		name   string
		policy Policy
		actor  Actor
		inv    Invocation
		want   Decision
		lookup bool // whether the role must be asked
	}{
		{"write may fix", base, Actor{Login: "wes"}, fix, Decision{true, "@wes has the write role on acme/app"}, true},
		{"maintain may fix", base, Actor{Login: "max"}, fix, Decision{true, "@max has the maintain role on acme/app"}, true},
		{"admin may fix", base, Actor{Login: "ada", Type: "User"}, fix, Decision{true, "@ada has the admin role on acme/app"}, true},
		{"triage may not fix", base, Actor{Login: "tri"}, fix, Decision{false,
			"`/agent fix the flaky test` was not run: commands need the admin, maintain or write role or a login listed in trigger.users, and @tri has the triage role on acme/app."}, true},
		{"stranger may not fix", base, Actor{Login: "eve"}, fix, Decision{false,
			"`/agent fix the flaky test` was not run: commands need the admin, maintain or write role or a login listed in trigger.users, and @eve is not a collaborator on acme/app."}, true},
		{"bot by type", base, Actor{Login: "ada", Type: "Bot"}, fix, Decision{false,
			"`/agent fix the flaky test` was not run: @ada is a bot, and agentbot takes commands only from people."}, false},
		{"bot by login", base, Actor{Login: "agentbot[bot]", Type: "User"}, fix, Decision{false,
			"`/agent fix the flaky test` was not run: @agentbot[bot] is a bot, and agentbot takes commands only from people."}, false},
		{"no author", base, Actor{}, fix, Decision{false, "`/agent fix the flaky test` was not run: its author is unknown."}, false},
		{"fork refused by default", base, Actor{Login: "ada"}, fork, Decision{false,
			"`/agent fix the flaky test` was not run: this pull request comes from a fork, and this repository's policy does not serve forks (trigger.allow_forks)."}, false},
		{"fork allowed by policy", custom, Actor{Login: "ada"}, fork, Decision{true, "@ada has the admin role on acme/app"}, true},
		{"configured role", custom, Actor{Login: "tri"}, fix, Decision{true, "@tri has the triage role on acme/app"}, true},
		{"role dropped from policy", custom, Actor{Login: "wes"}, fix, Decision{false,
			"`/agent fix the flaky test` was not run: commands need the admin or triage role or a login listed in trigger.users, and @wes has the write role on acme/app."}, true},
		{"extra user, any case, no lookup", custom, Actor{Login: "contractor"}, fix, Decision{true, "@contractor is listed in trigger.users"}, false},
		{"approver by role", base, Actor{Login: "max"}, approve, Decision{true, "@max has the maintain role on acme/app"}, true},
		{"writer is not an approver", base, Actor{Login: "wes"}, approve, Decision{false,
			"`/agent approve` was not run: only approvers may approve or deny (trigger.approvers: admin, maintain), and @wes has the write role on acme/app."}, true},
		{"approver by login", custom, Actor{Login: "lead"}, approve, Decision{true, "@lead is listed in trigger.approvers"}, false},
		{"listed user is not an approver", custom, Actor{Login: "contractor"}, Invocation{Repo: "acme/app", Verb: VerbDeny}, Decision{false,
			"`/agent deny` was not run: only approvers may approve or deny (trigger.approvers: admin, lead), and @contractor is not a collaborator on acme/app."}, true},
		{"no approvers at all", nobody, Actor{Login: "ada"}, approve, Decision{false,
			"`/agent approve` was not run: only approvers may approve or deny (trigger.approvers: nobody), and @ada has the admin role on acme/app."}, true},
		{"other repository", base, Actor{Login: "ada"}, Invocation{Repo: "acme/other", Verb: VerbStop, Text: "/agent stop"}, Decision{false,
			"`/agent stop` was not run: commands need the admin, maintain or write role or a login listed in trigger.users, and @ada is not a collaborator on acme/other."}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perms := &roleTable{roles: roles}
			got, err := NewAuthorizer(perms, tt.policy).Authorize(context.Background(), tt.actor, tt.inv)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if (perms.calls > 0) != tt.lookup {
				t.Errorf("%d permission lookups, want lookup %v", perms.calls, tt.lookup)
			}
		})
	}
}

func TestAuthorizeLookupFailure(t *testing.T) {
	p, err := BuildPolicy(openServer())
	if err != nil {
		t.Fatal(err)
	}
	down := errors.New("503 Service Unavailable")
	_, err = NewAuthorizer(&roleTable{err: down}, p).Authorize(context.Background(), Actor{Login: "wes"}, Invocation{Repo: "acme/app", Verb: VerbFix})
	if !errors.Is(err, down) {
		t.Fatalf("a failed lookup must be an error to retry, not a refusal: %v", err)
	}
}

func TestQuoteCommand(t *testing.T) {
	long := "/agent " + strings.Repeat("é", 100)
	tests := []struct {
		inv  Invocation
		want string
	}{
		{Invocation{Text: "  /agent fix it  \nmore detail"}, "`/agent fix it`"},
		{Invocation{Verb: VerbStatus}, "`/bot status`"},
		{Invocation{Text: "/agent run `make x`"}, "`` /agent run `make x` ``"},
		{Invocation{Text: long}, "`" + string([]rune(long)[:79]) + "…`"},
	}
	for _, tt := range tests {
		if got := quoteCommand("/bot", tt.inv); got != tt.want {
			t.Errorf("quoteCommand(%q) = %q, want %q", tt.inv.Text, got, tt.want)
		}
	}
}
