package policy_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

func TestPathsCheck(t *testing.T) {
	defaults, err := policy.BuildPolicy(policy.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d := defaults.Paths
	open := policy.Paths{Allow: []string{"**"}}
	reallow := policy.Paths{Allow: []string{"**", ".github/workflows/**", "docs/CODEOWNERS"}}
	tests := []struct {
		paths policy.Paths
		name  string
		want  string // substring of the refusal; "" when allowed
	}{
		{d, "src/a.go", ""},
		{d, ".github/workflows/ci.yml", `matches the denied path ".github/**"`},
		{d, ".GitHub/Workflows/x.yml", `matches the denied path ".github/**"`},
		{d, ".github/dependabot.yml", `matches the denied path ".github/**"`},
		{d, "CODEOWNERS", `matches the denied path "**/CODEOWNERS"`},
		{d, "docs/codeowners", `matches the denied path "**/CODEOWNERS"`},
		{d, "KEY.PEM", `matches the denied path "**/*.pem"`},
		{d, ".ENV", `matches the denied path "**/.env*"`},
		{open, ".github/workflows/ci.yml", "paths.allow must name it explicitly"},
		{open, "CODEOWNERS", "it decides who must review"},
		{open, ".github/agent.yml", "agentbot's policy"},
		{reallow, ".github/workflows/ci.yml", ""},
		{reallow, "docs/CODEOWNERS", ""},
		{reallow, "CODEOWNERS", "it decides who must review"},
		{reallow, ".github/ISSUE_TEMPLATE/bug.md", "paths.allow must name it explicitly"},
		{policy.Paths{Allow: []string{".github/**"}}, ".github/agent.yml", "agentbot's policy"},
		{policy.Paths{Allow: []string{".github/agent.yml"}}, ".github/agent.yml", ""},
		{policy.Paths{Allow: []string{"src/**"}}, "docs/a.md", "outside the allowed paths"},
	}
	for _, tc := range tests {
		err := tc.paths.Check(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v.Check(%q) = %v, want allowed", tc.paths, tc.name, err)
		case tc.want != "" && (app.ErrorCode(err) != app.EPolicy || !strings.Contains(app.ErrorMessage(err), tc.want)):
			t.Errorf("%v.Check(%q) = %v, want a policy refusal with %q", tc.paths, tc.name, err, tc.want)
		}
	}
}

func TestPathsGuardsBelow(t *testing.T) {
	p := policy.Paths{Allow: []string{"**"}, Deny: []string{"**/*.pem", "secrets/*/key", "conf/{a,b/c}/x", ".github/**"}}
	tests := map[string]bool{
		".github": true, ".GitHub": true, "secrets": true, "secrets/prod": true, "secrets/prod/key": true,
		"secrets/prod/key/more": false, "conf": true, "conf/b": true, "src": false, "docs": false, "a.pem": true,
	}
	for dir, want := range tests {
		if g, got := p.GuardsBelow(dir); got != want {
			t.Errorf("GuardsBelow(%q) = %q, %v; want %v", dir, g, got, want)
		}
	}
	// Naming .github/** leaves the policy file below it protected.
	if _, got := (policy.Paths{Allow: []string{"**", ".github/**"}}).GuardsBelow(".github"); !got {
		t.Error(".github is not guarded, although the policy file below it is protected")
	}
	if g, got := (policy.Paths{Allow: []string{"**", ".github/**", ".github/agent.yml"}}).GuardsBelow(".github"); got {
		t.Errorf(".github is guarded by %q, although paths.allow names everything below it", g)
	}
}
