package change

import (
	"context"
	"fmt"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/tools"
)

// ProvedCheck is one check of a policy being proved, as it ran over the
// prepared environment: it passed, it failed (a test failing today, a
// task's work), or it cannot run (CannotRun: the policy's fault, with the
// line to change).
type ProvedCheck struct {
	tools.CheckRun
	CannotRun *CannotRun
}

// ProveChecks runs every check of p over the tree at dir, as the final
// verification does (VerifyChecks), each container on its own view of the
// prepared environment, going on in a new sandbox after each that fails,
// so that each is seen to run or not; own says whether a path is the
// repository's (CannotRunOf). "agentbot config init --verify" and
// "/agent setup" prove the policy they propose with it.
func ProveChecks(ctx context.Context, boxes sandbox.Sandboxes, prepared *Prepared, p policy.Policy, dir, id string, own func(path string) bool) ([]ProvedCheck, error) {
	s := p.Sandbox
	var proved []ProvedCheck
	for rest := p.Checks; len(rest) > 0; {
		spec, err := prepared.Spec(sandbox.Spec{TaskID: fmt.Sprintf("%s-check%d", id, len(proved)), WorkTree: dir,
			CPUs: s.CPUs, Memory: s.Memory, Pids: s.Pids, MaxTreeGrowth: s.Disk})
		if err != nil {
			return proved, err
		}
		v, err := VerifyChecks(ctx, boxes, spec, rest)
		if err != nil {
			return proved, err
		}
		for _, c := range v.Checks {
			proved = append(proved, ProvedCheck{CheckRun: c, CannotRun: CannotRunOf(c, own)})
		}
		rest = v.NotRun
	}
	return proved, nil
}
