package github_test

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app/github"
)

// TestAppManifest holds app.yml to the issue: the five permissions and no
// more, never workflows, the eight events, a private App.
func TestAppManifest(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../app.yml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := github.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	wantPerms := map[string]string{
		"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read",
		"actions": "read",
	}
	if !maps.Equal(m.DefaultPermissions, wantPerms) {
		t.Errorf("permissions %v, want %v", m.DefaultPermissions, wantPerms)
	}
	wantEvents := []string{"check_suite", "installation", "installation_repositories", "issue_comment", "issues",
		"pull_request", "pull_request_review", "pull_request_review_comment", "push", "workflow_run"}
	if got := slices.Sorted(slices.Values(m.DefaultEvents)); !slices.Equal(got, wantEvents) {
		t.Errorf("events %v, want %v", got, wantEvents)
	}
	if m.Public || !m.HookAttributes.Active || m.Name == "" || m.RedirectURL == "" {
		t.Errorf("manifest %+v", m)
	}
}

func TestParseManifestRefusesUnknownKeys(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"name: a\nurl: https://x\ndefault_permission: {contents: write}\n", // typo of default_permissions
		"name: a\nurl: https://x\npublic: maybe\n",
		"url: https://x\n",
		"name: [",
	} {
		if _, err := github.ParseManifest([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "app manifest: ") {
			t.Errorf("ParseManifest(%q) = %v, want an app manifest error", bad, err)
		}
	}
}
