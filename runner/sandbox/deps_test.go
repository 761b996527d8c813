package sandbox_test

import (
	"os/exec"
	"strings"
	"testing"
)

// dockerPackages are the import path prefixes of the Docker engine's client
// and what it pulls in. github.com/docker/go-units, a units parser with no
// dependency that the policy uses for sizes such as "4GiB", is not one.
var dockerPackages = []string{
	"github.com/docker/docker",
	"github.com/docker/go-connections",
	"github.com/containerd/",
	"github.com/moby/",
	"github.com/opencontainers/",
	"github.com/agentbot/agentbot/runner/sandbox/docker",
}

// The contract and protocol, the tools, the loop and the egress proxy link
// no Docker, nor do the runner, the environment cache and the evaluation
// written against the contract: only the driver does, and cmd/agentbot
// hands it to them.
func TestNoDockerBehindTheProtocol(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"runner/sandbox", "runner/tools", "runner/agent", "runner/egress",
		"runner", "runner/envcache", "runner/eval", "runner/githubapp"} {
		t.Run(pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "github.com/agentbot/agentbot/"+pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", pkg, err)
			}
			deps := strings.Fields(string(out))
			if len(deps) == 0 {
				t.Fatalf("go list -deps %s listed nothing", pkg)
			}
			for _, dep := range deps {
				for _, prefix := range dockerPackages {
					if strings.HasPrefix(dep, prefix) {
						t.Errorf("%s links %s", pkg, dep)
					}
				}
			}
		})
	}
}
