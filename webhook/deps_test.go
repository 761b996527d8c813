package webhook_test

import (
	"slices"
	"testing"

	"github.com/agentbot/agentbot/internal/depstest"
)

// The internet-facing intake links neither the Docker SDK nor a GitHub
// client: it makes no GitHub call and starts no sandbox.
func TestWebhookLinksNoDockerAndNoGitHubClient(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, ".", slices.Concat(depstest.DockerSDK, depstest.GitHubClient)...)
}
