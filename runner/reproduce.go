package runner

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
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
// loop (progress.BaseChecks) is the proof: an existing test that failed
// there is reproduced by the change. Either way, that the tests pass with
// the change is the final verification's verdict, which runs before.
type Reproduction struct {
	Mode app.Reproduce `json:"mode"`
	Base string        `json:"base"` // the commit the tests ran on
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

// reproduceMode is the task's reproduction policy: the policy's, or its
// default for a fix of an issue or a follow-up on a pull request.
func reproduceMode(tk *task) app.Reproduce {
	return tk.policy.Policy.ReproduceFor(tk.issue.Pull != nil)
}

// reproduce tries to reproduce a verified change and keeps the result in
// the task's progress. It does nothing when the policy turns it off or the
// final verification did not pass: a change that is no fix has nothing
// to prove.
func (r *Runner) reproduce(ctx context.Context, tk *task, ws *workspace.Workspace, gate workspace.GateReport) error {
	mode := reproduceMode(tk)
	if v := tk.prog.Verified; mode == app.ReproduceOff || v == nil || !v.Passed {
		return nil
	}
	if err := tk.rep.running(ctx, "reproduction", "running the new tests on "+shortSHA(ws.Base())+", without the fix"); err != nil {
		return err
	}
	rp, err := r.reproduction(ctx, tk, tk.rep, ws, gate, tk.ID+"-reproduce")
	if err != nil {
		return err
	}
	if rp.Run != nil && !rp.Existing {
		// A phase only when tests ran: without them it took no time.
		tk.rep.phase(ctx, "reproduction")
	}
	tk.prog.Reproduction = rp
	return tk.rep.save(ctx)
}

// reproduction runs the change's tests on the base commit without the
// rest of the change, in sandboxes named after id, and traces the run
// through rep.
func (r *Runner) reproduction(ctx context.Context, tk *task, rep *reporter, ws *workspace.Workspace, gate workspace.GateReport, id string) (*Reproduction, error) {
	mode := reproduceMode(tk)
	ct, err := ws.ChangedTests(ctx, gate)
	if err != nil {
		return nil, err
	}
	rp := Reproduction{Mode: mode, Base: ws.Base(), Files: ct.Files, Tests: ct.Tests, Unsure: ct.Unsure}
	if b := tk.prog.BaseChecks; len(ct.Files) == 0 && b != nil && !b.Passed && len(b.Checks) > 0 {
		// No test changed, and the checks failed on the base before the
		// agent acted: the tests that failed there pass with the change.
		rp.Run, rp.Reproduced, rp.Existing = b, true, true
		rp.Tests = failedTests(b.Checks[len(b.Checks)-1].Output)
	} else if len(ct.Files) == 0 {
		rp.Why = "the change adds or changes no test, and the checks passed on " + shortSHA(rp.Base) + " before it"
		if b == nil {
			rp.Why = "the change adds or changes no test"
		}
	} else {
		tree, err := ws.Overlay(ctx, gate.Tree, ct.Files)
		if err != nil {
			return nil, err
		}
		checks := narrowChecks(tk.policy.Policy.Checks, ct.GoTests)
		v, err := r.verifyTree(ctx, tk, ws, tree, id, checks)
		if err != nil {
			return nil, err
		}
		rp.Run = &v
		switch {
		case len(v.NotRun) == len(checks):
			rp.Why = "the repository's setup failed on " + shortSHA(rp.Base) + ", so the tests did not run there"
		case v.Passed:
			rp.Why = "the new and changed tests pass on " + shortSHA(rp.Base) + ", without the fix, so they do not show the problem"
		default:
			rp.Reproduced = true
		}
		traceReproduction(ctx, rep, rp)
	}
	tk.log.Info("reproduction", "id", id, "reproduced", rp.Reproduced, "mode", mode, "tests", rp.Tests, "files", rp.Files, "why", rp.Why)
	return &rp, nil
}

// traceReproduction records each check run on the base with the tests.
func traceReproduction(ctx context.Context, rep *reporter, rp Reproduction) {
	end := time.Now().UTC()
	for _, c := range rp.Run.Checks {
		rep.traceCheck(ctx, end, 0, "reproduce "+c.Name, c,
			fmt.Sprintf("%s with the new tests only, fresh sandbox %s: %s", shortSHA(rp.Base), shortID(rp.Run.Container), c.Run))
	}
}

// reproductionRefusal is the refusal of a change the policy requires to be
// reproduced and that is not, or nil.
func reproductionRefusal(tk *task) error {
	return refusalOf(tk.prog.Reproduction)
}

// refusalOf is the refusal of rp, when the policy requires a reproduction
// and rp is none, or nil.
func refusalOf(rp *Reproduction) error {
	if rp == nil || rp.Reproduced || rp.Mode != app.ReproduceRequired {
		return nil
	}
	return app.Errorf(app.EPolicy, "The change is not reproduced: %s. The policy requires a test that fails on the base commit "+
		"and passes with the fix (quality.reproduce: required), so nothing is proposed. Ask again with a hint at how to show the problem in a test, "+
		"or set quality.reproduce to preferred.", rp.Why)
}

// reproductionExcerpt bounds the output of the failing check that a pull
// request quotes; the trace keeps more.
const reproductionExcerpt = 1500

// reproductionSection is the reproduction as a section of the pull
// request's body, or "" when none was tried.
func reproductionSection(tk *task) string {
	rp := tk.prog.Reproduction
	if rp == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n## Reproduction\n\n")
	if !rp.Reproduced {
		fmt.Fprintf(&b, "⚠️ **Not reproduced: the fix is unproven.** %s. The checks pass with the change, "+
			"but no test shows that it fixes the problem; check that by hand before merging.\n", capitalize(rp.Why))
		b.WriteString(unsureText(rp))
		return b.String()
	}
	c := rp.Run.Checks[len(rp.Run.Checks)-1]
	head := "the change"
	if tk.prog.Pushed != "" {
		head = "`" + shortSHA(tk.prog.Pushed) + "`"
	}
	result := strings.TrimPrefix(resultText(c), "❌ ")
	if rp.Existing {
		fmt.Fprintf(&b, "✅ **Reproduced by an existing test:** %s %s on `%s` before any change (check **%s**, %s: %s), and %s on %s in the final verification.\n\n",
			testList(rp), plural(rp, "fails", "fail"), shortSHA(rp.Base), c.Name, app.CodeSpan(c.Run, app.IssueRef{}), result,
			plural(rp, "passes", "pass"), head)
		b.WriteString("The change adds or changes no test. The checks ran on the base commit before the agent started, in a sandbox of its own.\n\n")
	} else {
		fmt.Fprintf(&b, "✅ **Reproduced:** %s %s on `%s` (check **%s**, %s: %s; output below), and %s on %s in the final verification.\n\n",
			testList(rp), plural(rp, "fails", "fail"), shortSHA(rp.Base), c.Name, app.CodeSpan(c.Run, app.IssueRef{}), strings.TrimPrefix(resultText(c), "❌ "),
			plural(rp, "passes", "pass"), head)
		fmt.Fprintf(&b, "The tests ran on the base commit's tree with only the new and changed test files laid over it (%s), in a fresh sandbox.\n\n",
			codeList(rp.Files))
	}
	b.WriteString(unsureText(rp))
	if strings.TrimSpace(c.Output) == "" {
		fmt.Fprintf(&b, "**%s** printed nothing on %s.\n", c.Name, shortSHA(rp.Base))
		return b.String()
	}
	fmt.Fprintf(&b, "<details><summary>%s on %s</summary>\n\n%s\n</details>\n",
		c.Name, shortSHA(rp.Base), app.CodeBlock(tail(c.Output, reproductionExcerpt), "", ownIssue(tk)))
	return b.String()
}

// unsureText says which files leave the changed tests unsure, and why,
// as a paragraph, or "".
func unsureText(rp *Reproduction) string {
	if len(rp.Unsure) == 0 {
		return ""
	}
	return "Which tests the change touches is not certain: " + app.InertPlain(strings.Join(rp.Unsure, "; "), app.IssueRef{}) + ".\n\n"
}

// failedTestRE finds the tests a check's output says failed: Go's
// "--- FAIL: TestX", pytest's "FAILED path::test", TAP's "not ok 1 - name"
// (node --test), Jest's "● suite › name".
var failedTestRE = regexp.MustCompile(`(?m)^\s*(?:--- FAIL: (\S+)|FAILED (\S+)|not ok \d+ - (.+?)$|● (.+?)$)`)

// failedTests names the tests output says failed, top-level ones first
// seen, or none when it names none.
func failedTests(output string) []string {
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

// testList names what reproduces: the tests, or else the test files, or
// else the tests of an existing check whose output names none.
func testList(rp *Reproduction) string {
	switch {
	case len(rp.Tests) > 0:
		return codeList(rp.Tests)
	case len(rp.Files) > 0:
		return "the tests in " + codeList(rp.Files)
	}
	return "the existing tests"
}

// plural picks the verb for testList's subject.
func plural(rp *Reproduction, one, many string) string {
	if len(rp.Tests) == 1 {
		return one
	}
	return many
}

func codeList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = app.CodeSpan(n, app.IssueRef{})
	}
	return strings.Join(quoted, ", ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// shortSHA is a commit id as a pull request shows it.
func shortSHA(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

// narrowChecks returns checks with each plain "go test" line narrowed to
// the named Go tests, so that the base run fails for them and not for an
// unrelated test. A line with shell syntax, quotes or its own -run is left
// as written: rewriting it could change what it means.
func narrowChecks(checks []app.Check, tests []string) []app.Check {
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
