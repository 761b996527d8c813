package runner

import (
	"context"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// Sandboxes starts the containers a task runs in: setup's, the agent's
// and the verification's; DockerSandboxes adapts the Docker driver.
type Sandboxes interface {
	Start(ctx context.Context, spec docker.Spec) (Sandbox, error)
	// StartEgress starts the proxy through which setup reaches its
	// allowed hosts.
	StartEgress(ctx context.Context, spec docker.EgressSpec) (*docker.Egress, error)
	// ImageID is the id of the image ref names, and Image the image a
	// policy that names none runs in.
	ImageID(ctx context.Context, ref string) (string, error)
	Image() string
}

// Sandbox is one started container.
type Sandbox interface {
	Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error)
	Close(ctx context.Context) error
	// Name is the container's id, which a verification names.
	Name() string
}

// DockerSandboxes is d as the runner's Sandboxes.
func DockerSandboxes(d *docker.Driver) Sandboxes { return dockerSandboxes{d} }

type dockerSandboxes struct{ *docker.Driver }

func (d dockerSandboxes) Start(ctx context.Context, spec docker.Spec) (Sandbox, error) {
	c, err := d.Driver.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return dockerSandbox{c}, nil
}

type dockerSandbox struct{ *docker.Container }

func (c dockerSandbox) Name() string { return c.ID }
