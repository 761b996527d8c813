package policy_test

import (
	"slices"
	"testing"

	"github.com/agentbot/agentbot/internal/depstest"
)

// The policy language is read by the runner and by config init alike: it
// links neither the Docker SDK nor a GitHub client. (app cannot link it
// back: policy imports app, and the compiler refuses the cycle.)
func TestPolicyLinksNoDockerNorGitHubClient(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, ".", slices.Concat(depstest.DockerSDK, depstest.GitHubClient)...)
}
