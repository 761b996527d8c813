package policy_test

import (
	"slices"
	"testing"

	"github.com/agentbot/agentbot/internal/depstest"
)

// The policy language is read by the webhook's neighbours and the runner
// alike: it links neither the Docker SDK nor a GitHub client, and the
// domain it speaks in (app) does not link it back.
func TestPolicyLinksNoDockerNorGitHubClient(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, ".", slices.Concat(depstest.DockerSDK, depstest.GitHubClient)...)
}

func TestAppLinksNoPolicy(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, depstest.Module+"/app", depstest.Module+"/app/policy")
}
