package runner_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The runner declares what it needs of GitHub (github.go) and links no
// GitHub client: runner/githubapp hands it the App. Neither it nor the
// change it makes (runner/change) links a container engine: they speak to
// sandboxes through runner/sandbox's contract, which the Docker driver
// implements.
func TestRunnerLinksNoGitHubClientNorDocker(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"runner", "runner/change"} {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("go", "list", "-deps", "github.com/agentbot/agentbot/"+pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			deps := strings.Fields(string(out))
			if !slices.Contains(deps, "github.com/agentbot/agentbot/runner/agent") {
				t.Fatalf("go list does not name runner/agent; is it %s's dependency list?\n%s", pkg, out)
			}
			for _, dep := range deps {
				if linksGitHub(dep) || linksDocker(dep) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		})
	}
}

// linksGitHub reports whether dep is a GitHub client, or agentbot's App.
func linksGitHub(dep string) bool {
	lower := strings.ToLower(dep)
	return strings.Contains(lower, "go-github") || strings.Contains(lower, "ghinstallation") || strings.Contains(lower, "jwt") ||
		strings.HasPrefix(dep, "github.com/agentbot/agentbot/app/github")
}

// linksDocker reports whether dep is the Docker SDK or agentbot's driver
// over it. (github.com/docker/go-units only parses sizes.)
func linksDocker(dep string) bool {
	return strings.HasPrefix(dep, "github.com/docker/docker") || strings.HasPrefix(dep, "github.com/moby/") ||
		strings.HasPrefix(dep, "github.com/agentbot/agentbot/runner/sandbox/docker")
}
