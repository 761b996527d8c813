package worker_test

import (
	"slices"
	"testing"

	"github.com/agentbot/agentbot/internal/depstest"
)

// Supervision is given the sandboxes and work trees it sweeps as
// interfaces: it links neither the Docker SDK nor a GitHub client.
func TestWorkerLinksNoDockerAndNoGitHubClient(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, ".", slices.Concat(depstest.DockerSDK, depstest.GitHubClient)...)
}
