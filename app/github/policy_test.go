package github_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

const mainPolicy = `version: 1
checks:
  - {name: test, run: "go test ./...", timeout: 15m}
limits: {iterations: 10}
`

func TestPolicyComesFromTheDefaultBranchNeverThePRHead(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{policy.PolicyPath: mainPolicy})
	// A pull request that tries to widen its own policy.
	w.push(t, "acme/a", "widen", map[string]string{policy.PolicyPath: `version: 1
checks:
  - {name: nothing, run: "true"}
limits: {iterations: 30}
paths: {allow: ["**"], deny: []}
`})
	if _, err := w.sim.AddPullRequest("acme/a", githubsim.PullOptions{Author: "mallory", Title: "widen", Head: "widen"}); err != nil {
		t.Fatal(err)
	}
	mainSHA, err := w.sim.BranchSHA("acme/a", "main")
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.installation(t, "acme/a").LoadPolicy(t.Context(), "acme/a", policy.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got.Commit != mainSHA {
		t.Errorf("read at %s, want main's %s", got.Commit, mainSHA)
	}
	if len(got.Policy.Checks) != 1 || got.Policy.Checks[0].Run != "go test ./..." || got.Policy.Limits.Iterations != 10 {
		t.Errorf("policy checks %+v, iterations %d: not main's", got.Policy.Checks, got.Policy.Limits.Iterations)
	}
	if !strings.Contains(got.Policy.Source, "acme/a@"+mainSHA[:12]) {
		t.Errorf("source %q does not name the commit", got.Policy.Source)
	}
	if got.Repo.DefaultBranch != "main" || got.Repo.CloneURL == "" {
		t.Errorf("repo %+v", got.Repo)
	}
}

func TestPolicyLayersTheOrganisationsDefaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/.github", map[string]string{policy.PolicyPath: `version: 1
checks:
  - {name: org-test, run: "make test"}
limits: {iterations: 12}
`})
	w.addRepo(t, "acme/plain", map[string]string{"README.md": "no policy here"})
	w.addRepo(t, "acme/own", map[string]string{policy.PolicyPath: mainPolicy})
	ctx := t.Context()

	plain, err := w.installation(t, "acme/plain").LoadPolicy(ctx, "acme/plain", policy.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Policy.Checks) != 1 || plain.Policy.Checks[0].Name != "org-test" || plain.Policy.Limits.Iterations != 12 {
		t.Errorf("acme/plain: checks %+v, iterations %d; want the organisation's", plain.Policy.Checks, plain.Policy.Limits.Iterations)
	}
	own, err := w.installation(t, "acme/own").LoadPolicy(ctx, "acme/own", policy.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	if own.Policy.Checks[0].Name != "test" || own.Policy.Limits.Iterations != 10 {
		t.Errorf("acme/own: checks %+v, iterations %d; want its own", own.Policy.Checks, own.Policy.Limits.Iterations)
	}
	if !strings.Contains(own.Policy.Source, "acme/.github@") || !strings.Contains(own.Policy.Source, "acme/own@") {
		t.Errorf("source %q does not name both files", own.Policy.Source)
	}
}

func TestNoPolicyMeansNoChecks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{"README.md": "hi"})
	got, err := w.installation(t, "acme/a").LoadPolicy(t.Context(), "acme/a", policy.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Policy.RequireChecks(); app.ErrorCode(err) != app.EPolicy {
		t.Errorf("RequireChecks = %v, want a policy refusal", err)
	}
}

func TestBrokenPolicyIsAnErrorToPost(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{policy.PolicyPath: "version: 1\nchecks:\n  - {name: test, run: make test, timout: 5m}\n"})
	_, err := w.installation(t, "acme/a").LoadPolicy(t.Context(), "acme/a", policy.DefaultServerConfig())
	if app.ErrorCode(err) != app.EInvalid {
		t.Fatalf("err = %v, want an invalid *Error", err)
	}
	msg := app.ErrorMessage(err)
	for _, want := range []string{"acme/a@", policy.PolicyPath, ":3:", "timout"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestPolicyOfAMissingRepository(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, err := w.installation(t, "acme/gone").LoadPolicy(t.Context(), "acme/gone", policy.DefaultServerConfig())
	if app.ErrorCode(err) != app.ENotFound {
		t.Errorf("err = %v, want not_found", err)
	}
}
