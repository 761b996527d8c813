package runner_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The runner declares what it needs of GitHub (github.go) and links no
// GitHub client: runner/githubapp hands it the App.
func TestRunnerLinksNoGitHubClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agentbot/agentbot/runner").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/agentbot/agentbot/runner/agent") {
		t.Fatalf("go list does not name runner/agent; is it the runner's dependency list?\n%s", out)
	}
	for _, dep := range deps {
		lower := strings.ToLower(dep)
		if strings.Contains(lower, "go-github") || strings.Contains(lower, "ghinstallation") || strings.Contains(lower, "jwt") ||
			strings.HasPrefix(dep, "github.com/agentbot/agentbot/app/github") {
			t.Errorf("runner depends on %s", dep)
		}
	}
}
