package change

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Reproduction is the host's proof that a change fixes something: a test
// fails on the base commit without the change, and passes with it.
//
// When the change adds or changes tests (the change's test files and
// fixtures, found by the naming conventions the tampering report uses),
// they are laid over the base commit's tree alone (workspace.Overlay), and
// the policy's checks run over that tree as the final verification runs
// them: in a fresh sandbox, after the policy's setup, in order, stopping
// at the first failure. A check that is a plain "go test" line is narrowed
// to the Go tests the changed lines lie in (-run '^(TestA|TestB)$', found
// by parsing, see workspace.ChangedTests); any other check runs whole. The
// change is reproduced when a check fails there.
//
// When the change touches no test, the checks' run on the base before the
// loop is the proof: an existing test that failed there is reproduced by
// the change. Either way, that the tests pass with the change is the final
// verification's verdict, which runs before.
type Reproduction struct {
	Mode policy.Reproduce `json:"mode"`
	Base string           `json:"base"` // the commit the tests ran on
	// Files are the new and changed test files laid over the base.
	Files []string `json:"files,omitempty"`
	// Tests are the tests the change's lines lie in, or, for an existing
	// test, those that failed on the base.
	Tests []string `json:"tests,omitempty"`
	// Unsure says, per file, why Tests may not be all the change touches.
	Unsure []string `json:"unsure,omitempty"`
	// Existing is set when the change touches no test and the proof is
	// an existing test that failed on the base before the loop.
	Existing bool `json:"existing,omitempty"`
	// Run is the checks' run on the base with the tests; nil when there
	// was nothing to run.
	Run        *Verification `json:"run,omitempty"`
	Reproduced bool          `json:"reproduced"`
	// Why the change is not reproduced, as a sentence's end.
	Why string `json:"why,omitempty"`
}

// Reproduce is the reproduction step: it runs the change the gate passed
// (gate) with its tests alone on ws's base, in fresh sandboxes named after
// id, or takes base, the checks' run on the base before the loop (nil when
// there was none), as the proof when the change touches no test. mode is
// the policy's for this change (policy.Policy.ReproduceFor).
func (f Fresh) Reproduce(ctx context.Context, ws *workspace.Workspace, gate workspace.GateReport, base *Verification, mode policy.Reproduce, id string) (*Reproduction, error) {
	ct, err := ws.ChangedTests(ctx, gate)
	if err != nil {
		return nil, err
	}
	rp := Reproduction{Mode: mode, Base: ws.Base(), Files: ct.Files, Tests: ct.Tests, Unsure: ct.Unsure}
	switch {
	case len(ct.Files) == 0 && base != nil && !base.Passed && len(base.Checks) > 0:
		// No test changed, and the checks failed on the base before the
		// agent acted: the tests that failed there pass with the change.
		rp.Run, rp.Reproduced, rp.Existing = base, true, true
		rp.Tests = FailedTests(base.Checks[len(base.Checks)-1].Output)
	case len(ct.Files) == 0 && base == nil:
		rp.Why = "the change adds or changes no test"
	case len(ct.Files) == 0:
		rp.Why = "the change adds or changes no test, and the checks passed on " + ShortSHA(rp.Base) + " before it"
	default:
		tree, err := ws.Overlay(ctx, gate.Tree, ct.Files)
		if err != nil {
			return nil, err
		}
		checks := NarrowChecks(f.Policy.Checks, ct.GoTests)
		v, err := f.Run(ctx, ws, tree, id, checks)
		if err != nil {
			return nil, err
		}
		rp.Run = &v
		switch {
		case len(v.NotRun) == len(checks):
			rp.Why = "the repository's setup failed on " + ShortSHA(rp.Base) + ", so the tests did not run there"
		case v.Passed:
			rp.Why = "the new and changed tests pass on " + ShortSHA(rp.Base) + ", without the fix, so they do not show the problem"
		default:
			rp.Reproduced = true
		}
	}
	return &rp, nil
}

// Refusal is the refusal of a change the policy requires to be reproduced
// (quality.reproduce: required) and that rp does not reproduce, or nil.
func (rp *Reproduction) Refusal() error {
	if rp == nil || rp.Reproduced || rp.Mode != policy.ReproduceRequired {
		return nil
	}
	return app.Errorf(app.EPolicy, "The change is not reproduced: %s. The policy requires a test that fails on the base commit "+
		"and passes with the fix (quality.reproduce: required), so nothing is proposed. Ask again with a hint at how to show the problem in a test, "+
		"or set quality.reproduce to preferred.", rp.Why)
}

// failedTestRE finds the tests a check's output says failed: Go's
// "--- FAIL: TestX", pytest's "FAILED path::test", TAP's "not ok 1 - name"
// (node --test), Jest's "● suite › name".
var failedTestRE = regexp.MustCompile(`(?m)^\s*(?:--- FAIL: (\S+)|FAILED (\S+)|not ok \d+ - (.+?)$|● (.+?)$)`)

// FailedTests names the tests output says failed, top-level ones first
// seen, or none when it names none.
func FailedTests(output string) []string {
	var names []string
	for _, m := range failedTestRE.FindAllStringSubmatch(output, -1) {
		name := strings.TrimSpace(m[1] + m[2] + m[3] + m[4])
		if m[1] != "" {
			name, _, _ = strings.Cut(name, "/") // a subtest fails its test
		}
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// NarrowChecks returns checks with each plain "go test" line narrowed to
// the named Go tests, so that the base run fails for them and not for an
// unrelated test. A line with shell syntax, quotes or its own -run is left
// as written: rewriting it could change what it means.
func NarrowChecks(checks []policy.Check, tests []string) []policy.Check {
	out := slices.Clone(checks)
	if len(tests) == 0 {
		return out
	}
	for i, c := range out {
		f := strings.Fields(c.Run)
		if len(f) < 2 || f[0] != "go" || f[1] != "test" || strings.ContainsAny(c.Run, ";&|<>()$`'\"\\\n") ||
			strings.Contains(c.Run, "-run") || strings.Contains(c.Run, "-test.run") {
			continue
		}
		out[i].Run = strings.Join(append([]string{"go", "test", "-run", "'^(" + strings.Join(tests, "|") + ")$'"}, f[2:]...), " ")
	}
	return out
}

// ShortSHA is a commit id as a pull request shows it.
func ShortSHA(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}
