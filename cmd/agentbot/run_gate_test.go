package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/internal/ostest"
)

// plantScript fixes Add with the patch tools and, through the shell,
// plants a workflow and a key, which the write tools would refuse.
const plantScript = `steps:
  - tool_calls:
      - name: run_command
        arguments: {command: "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/pwn2.yml && echo key > DEPLOY.PEM"}
  - tool_calls:
      - name: edit_file
        arguments: {path: calc.go, old_string: "return a + b + 1", new_string: "return a + b"}
  - tool_calls:
      - name: finish
        arguments: {summary: "Add no longer adds one."}
`

// TestRunApplyRefusesWhatTheGateRefuses: the worker's gate judges the
// tree's change before --apply, and refuses it whole: the checkout gets
// neither the planted files nor the fix, and the run fails with the
// gate's reasons.
func TestRunApplyRefusesWhatTheGateRefuses(t *testing.T) {
	t.Parallel()
	dir := calcCheckout(t)
	ostest.WriteTree(t, dir, map[string]string{policy.PolicyPath: "version: 1\ntools: {shell: {policy: auto}}\n"})
	out, err := runCalc(t, dir, plantScript, grepCheck, "--apply")
	e, ok := errors.AsType[*exitError](err)
	if !ok || e.code != 1 || !strings.Contains(e.Error(), "the gate refuses the change") ||
		!strings.Contains(e.Error(), ".github/workflows/pwn2.yml") || !strings.Contains(e.Error(), "DEPLOY.PEM") {
		t.Fatalf("run = %v; want exit 1 with the gate's reasons naming both files\n%s", err, out)
	}
	if strings.Contains(out, "applied") || strings.Contains(out, "verified in a fresh sandbox") {
		t.Errorf("a refused change went on to verification or was applied:\n%s", out)
	}
	for _, name := range []string{".github/workflows/pwn2.yml", "DEPLOY.PEM"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written into the checkout", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "a + b + 1") {
		t.Errorf("part of a refused change was applied: calc.go is\n%s", b)
	}
}

// TestRunPrintsTheTreesDiff: a check that writes a file (as a code
// generator or a snapshot test does) changes the tree after the loop's
// last record of the diff; the diff printed, and the one applied, is the
// tree's, as the host computes it.
func TestRunPrintsTheTreesDiff(t *testing.T) {
	t.Parallel()
	dir := calcCheckout(t)
	out, err := runCalc(t, dir, fixScript, grepCheck+"; echo generated > zz_generated.txt", "--apply")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The checkout with the change applied, staged, is the tree: its
	// diff is what the run must have printed.
	if out, err := exec.Command("git", "-C", dir, "add", "-A").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	real, err := exec.Command("git", "-C", dir, "diff", "--cached", "--full-index", "--binary").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(real), "+++ b/zz_generated.txt") || !strings.Contains(string(real), "+\treturn a + b\n") {
		t.Fatalf("the applied change lacks the fix or the generated file:\n%s", real)
	}
	if !strings.Contains(out, "\n"+string(real)) {
		t.Errorf("the printed diff is not the tree's:\n--- printed\n%s\n--- the tree's\n%s", out, real)
	}
}
