package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// DefaultCheckTimeout bounds each check given as a bare command.
const DefaultCheckTimeout = 15 * time.Minute

// LoadPolicy is the policy of the local checkout at dir: its
// .github/agent.yml over the defaults when it has one, with checks, when
// given, replacing the file's checks (named check1, check2, …). A policy
// without checks is refused: nothing would say when the task is done.
func LoadPolicy(dir string, checks []string) (policy.Policy, error) {
	return LoadPolicyFor(dir, policy.DefaultServerConfig(), checks)
}

// LoadPolicyFor is LoadPolicy under server's bounds and policy layer, as
// "agentbot run --config" reads them.
func LoadPolicyFor(dir string, server policy.ServerConfig, checks []string) (policy.Policy, error) {
	var layers []*policy.RawPolicy
	file := filepath.Join(dir, filepath.FromSlash(policy.PolicyPath))
	data, err := os.ReadFile(file)
	switch {
	case err == nil:
		raw, err := policy.ParsePolicy(file, data)
		if err != nil {
			return policy.Policy{}, errors.New(app.ErrorMessage(err))
		}
		layers = append(layers, raw)
	case !errors.Is(err, fs.ErrNotExist):
		return policy.Policy{}, err
	}
	p, err := policy.BuildPolicy(server, layers...)
	if err != nil {
		return policy.Policy{}, errors.New(app.ErrorMessage(err))
	}
	if len(checks) > 0 {
		p.Checks = nil
		for i, c := range checks {
			p.Checks = append(p.Checks, policy.Check{Name: fmt.Sprintf("check%d", i+1), Run: c, Timeout: DefaultCheckTimeout})
		}
	}
	// The refusal suggests the checks of the checkout's kind (go.mod…).
	has := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	if err := p.RequireChecksIn(has); err != nil {
		return policy.Policy{}, &NoChecksError{Message: app.ErrorMessage(err)}
	}
	return p, nil
}

// NoChecksError is LoadPolicy's error for a policy without checks, so that
// a caller can add how it takes checks of its own.
type NoChecksError struct{ Message string }

func (e *NoChecksError) Error() string { return e.Message }
