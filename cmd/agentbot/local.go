package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// localCheckout is what agentbot run and config init --verify work in: the
// worker's workspace over a copy of a local checkout, with the worker's
// caps, so that the gate judges a change as it would on GitHub, and the
// setup's trust bundle.
type localCheckout struct {
	ws       *workspace.Workspace
	caBundle string // "" when setup trusts the image's own store
	close    func()
}

// openLocal copies the checkout at src into a temporary workspace shared
// with the sandbox user and writes setup's CA bundle beside it: the CA file
// of --setup-ca-file (caFlag) or of server's setup.ca_file, followed by the
// host's trust store. close removes both.
func openLocal(ctx context.Context, src, caFlag string, server policy.ServerConfig) (*localCheckout, error) {
	tmp, err := os.MkdirTemp("", "agentbot-local-")
	if err != nil {
		return nil, err
	}
	trees := workspace.NewManager(tmp, workspace.Options{})
	l := &localCheckout{close: func() {
		trees.Close()
		os.RemoveAll(tmp)
	}}
	fail := func(err error) (*localCheckout, error) {
		l.close()
		return nil, err
	}
	source, caFile, err := setupCAFile(caFlag, server)
	if err != nil {
		return fail(err)
	}
	if l.caBundle, err = setupCABundle(source, caFile, tmp); err != nil {
		return fail(err)
	}
	if l.ws, err = trees.Local(ctx, src); err != nil {
		return fail(fmt.Errorf("copy %s: %w", src, err))
	}
	closeTrees := l.close
	l.close = func() {
		l.ws.Close()
		closeTrees()
	}
	if err := sandbox.ShareTree(l.ws.Dir()); err != nil {
		return fail(fmt.Errorf("share the work tree with the sandbox: %w", err))
	}
	return l, nil
}
