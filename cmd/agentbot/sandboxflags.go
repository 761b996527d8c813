package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// sandboxFlags say how a change's containers are made. A worker (serve,
// worker), agentbot run and agentbot eval register them under the same
// names, so that a change made locally is made as on the worker.
type sandboxFlags struct {
	image    string
	runtime  string
	executor string
	setupCA  string
}

func (s *sandboxFlags) register(fs *flag.FlagSet) {
	s.registerContainers(fs)
	fs.StringVar(&s.setupCA, "setup-ca-file", "", "a PEM bundle of CA certificates setup containers trust besides the public roots, for networks whose egress re-signs TLS")
}

// registerContainers registers the flags of the containers alone, for
// eval, whose setup reaches no network and so trusts no CA.
func (s *sandboxFlags) registerContainers(fs *flag.FlagSet) {
	fs.StringVar(&s.image, "sandbox-image", "agentbot-sandbox:dev", "the sandbox image of a policy whose sandbox.image names none")
	fs.StringVar(&s.runtime, "sandbox-runtime", "", "the OCI runtime of sandboxes, such as runsc (default: the engine's)")
	fs.StringVar(&s.executor, "sandbox-executor", "", "the static agentbot binary mounted into sandboxes (default: this binary)")
}

// registerOlderNames registers the names run and eval had for
// --sandbox-image and --sandbox-executor, which scripts may still pass.
func (s *sandboxFlags) registerOlderNames(fs *flag.FlagSet) {
	fs.StringVar(&s.image, "image", s.image, "the older name of --sandbox-image")
	fs.StringVar(&s.executor, "executor", s.executor, "the older name of --sandbox-executor")
}

// driver connects to the Docker engine for sandboxes labelled as
// workerID's.
func (s *sandboxFlags) driver(ctx context.Context, workerID string, log *slog.Logger) (*docker.Driver, error) {
	executor := s.executor
	if executor == "" {
		var err error
		if executor, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find this binary for the sandbox: %w", err)
		}
	}
	drv, err := docker.New(ctx, docker.Options{Image: s.image, Runtime: s.runtime, WorkerID: workerID, ExecutorPath: executor, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("connect to Docker: %w", err)
	}
	return drv, nil
}
