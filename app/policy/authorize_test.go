package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/apptest"
)

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
	fix := app.Invocation{Repo: "acme/app", Verb: app.VerbFix, Text: "/agent fix the flaky test"}
	approve := app.Invocation{Repo: "acme/app", Verb: app.VerbApprove, Text: "/agent approve"}
	fork := fix
	fork.FromFork = true

	tests := []struct {
		name   string
		policy Policy
		actor  app.Actor
		inv    app.Invocation
		want   app.Decision
		lookup bool // whether the role must be asked
	}{
		{"write may fix", base, app.Actor{Login: "wes"}, fix, app.Decision{Allowed: true, Reason: "@wes has the write role on acme/app"}, true},
		{"maintain may fix", base, app.Actor{Login: "max"}, fix, app.Decision{Allowed: true, Reason: "@max has the maintain role on acme/app"}, true},
		{"admin may fix", base, app.Actor{Login: "ada", Type: "User"}, fix, app.Decision{Allowed: true, Reason: "@ada has the admin role on acme/app"}, true},
		{"triage may not fix", base, app.Actor{Login: "tri"}, fix, app.Decision{Allowed: false, Reason: "`/agent fix the flaky test` was not run: commands need the admin, maintain or write role or a login listed in trigger.users, and @tri has the triage role on acme/app."}, true},
		{"stranger may not fix", base, app.Actor{Login: "eve"}, fix, app.Decision{Allowed: false, Reason: "`/agent fix the flaky test` was not run: commands need the admin, maintain or write role or a login listed in trigger.users, and @eve is not a collaborator on acme/app."}, true},
		{"bot by type", base, app.Actor{Login: "ada", Type: "Bot"}, fix, app.Decision{Allowed: false, Reason: "`/agent fix the flaky test` was not run: @ada is a bot, and agentbot takes commands only from people."}, false},
		{"bot by login", base, app.Actor{Login: "agentbot[bot]", Type: "User"}, fix, app.Decision{Allowed: false, Reason: "`/agent fix the flaky test` was not run: @agentbot[bot] is a bot, and agentbot takes commands only from people."}, false},
		{"no author", base, app.Actor{}, fix, app.Decision{Allowed: false, Reason: "`/agent fix the flaky test` was not run: its author is unknown."}, false},
		{"fork refused by default", base, app.Actor{Login: "ada"}, fork, app.Decision{Allowed: false, Reason: "`/agent fix the flaky test` was not run: this pull request comes from a fork, and this repository's policy does not serve forks (trigger.allow_forks)."}, false},
		{"fork allowed by policy", custom, app.Actor{Login: "ada"}, fork, app.Decision{Allowed: true, Reason: "@ada has the admin role on acme/app"}, true},
		{"configured role", custom, app.Actor{Login: "tri"}, fix, app.Decision{Allowed: true, Reason: "@tri has the triage role on acme/app"}, true},
		{"role dropped from policy", custom, app.Actor{Login: "wes"}, fix, app.Decision{Allowed: false, Reason: "`/agent fix the flaky test` was not run: commands need the admin or triage role or a login listed in trigger.users, and @wes has the write role on acme/app."}, true},
		{"extra user, any case, no lookup", custom, app.Actor{Login: "contractor"}, fix, app.Decision{Allowed: true, Reason: "@contractor is listed in trigger.users"}, false},
		{"approver by role", base, app.Actor{Login: "max"}, approve, app.Decision{Allowed: true, Reason: "@max has the maintain role on acme/app"}, true},
		{"writer is not an approver", base, app.Actor{Login: "wes"}, approve, app.Decision{Allowed: false, Reason: "`/agent approve` was not run: only approvers may approve or deny (trigger.approvers: admin, maintain), and @wes has the write role on acme/app."}, true},
		{"approver by login", custom, app.Actor{Login: "lead"}, approve, app.Decision{Allowed: true, Reason: "@lead is listed in trigger.approvers"}, false},
		{"listed user is not an approver", custom, app.Actor{Login: "contractor"}, app.Invocation{Repo: "acme/app", Verb: app.VerbDeny}, app.Decision{Allowed: false, Reason: "`/agent deny` was not run: only approvers may approve or deny (trigger.approvers: admin, lead), and @contractor is not a collaborator on acme/app."}, true},
		{"no approvers at all", nobody, app.Actor{Login: "ada"}, approve, app.Decision{Allowed: false, Reason: "`/agent approve` was not run: only approvers may approve or deny (trigger.approvers: nobody), and @ada has the admin role on acme/app."}, true},
		{"other repository", base, app.Actor{Login: "ada"}, app.Invocation{Repo: "acme/other", Verb: app.VerbStop, Text: "/agent stop"}, app.Decision{Allowed: false, Reason: "`/agent stop` was not run: commands need the admin, maintain or write role or a login listed in trigger.users, and @ada is not a collaborator on acme/other."}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perms := &apptest.Roles{Table: roles}
			got, err := NewAuthorizer(perms, tt.policy).Authorize(context.Background(), tt.actor, tt.inv)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if (perms.Calls > 0) != tt.lookup {
				t.Errorf("%d permission lookups, want lookup %v", perms.Calls, tt.lookup)
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
	_, err = NewAuthorizer(&apptest.Roles{Err: down}, p).Authorize(context.Background(), app.Actor{Login: "wes"}, app.Invocation{Repo: "acme/app", Verb: app.VerbFix})
	if !errors.Is(err, down) {
		t.Fatalf("a failed lookup must be an error to retry, not a refusal: %v", err)
	}
}

func TestQuoteCommand(t *testing.T) {
	long := "/agent " + strings.Repeat("é", 100)
	tests := []struct {
		inv  app.Invocation
		want string
	}{
		{app.Invocation{Text: "  /agent fix it  \nmore detail"}, "`/agent fix it`"},
		{app.Invocation{Verb: app.VerbStatus}, "`/bot status`"},
		{app.Invocation{Text: "/agent run `make x`"}, "`` /agent run `make x` ``"},
		{app.Invocation{Text: long}, "`" + string([]rune(long)[:79]) + "…`"},
	}
	for _, tt := range tests {
		if got := quoteCommand("/bot", tt.inv); got != tt.want {
			t.Errorf("quoteCommand(%q) = %q, want %q", tt.inv.Text, got, tt.want)
		}
	}
}
