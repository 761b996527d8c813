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

// markerScript leaves a file in the sandbox's /tmp that the check takes
// for a pass, makes a change that fixes nothing, and finishes.
const markerScript = `steps:
  - tool_calls:
      - name: run_command
        arguments: {command: "touch /tmp/checks-ok"}
  - tool_calls:
      - name: edit_file
        arguments: {path: calc.go, old_string: "// Add returns", new_string: "// Add adds and returns"}
  - tool_calls:
      - name: finish
        arguments: {summary: "Add is fixed."}
`

// TestRunAppliesNothingThatFailsInAFreshSandbox runs a model that makes the
// loop's checks pass through a file in its sandbox's /tmp: the fresh
// sandbox's checks fail, so the run fails and --apply writes nothing.
func TestRunAppliesNothingThatFailsInAFreshSandbox(t *testing.T) {
	t.Parallel()
	dir := calcCheckout(t)
	policyYAML := "version: 1\ntools: {write: auto, shell: {policy: allowlist, allow: [\"touch /tmp/checks-ok\"]}}\n"
	ostest.WriteTree(t, dir, map[string]string{policy.PolicyPath: policyYAML})
	if out, err := exec.Command("git", "-C", dir, "add", "-A").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	out, err := runCalc(t, dir, markerScript, "test -f /tmp/checks-ok || "+grepCheck, "--apply")
	if e, ok := errors.AsType[*exitError](err); !ok || e.code != 1 || !strings.Contains(e.Error(), "fail in a fresh one") {
		t.Fatalf("run = %v; want exit 1 saying the fresh sandbox's checks fail\n%s", err, out)
	}
	for _, want := range []string{
		"succeeded after 3 steps", "check1   pass  exit 0", // the loop's belief
		"verified in a fresh sandbox (", "check1   FAIL  exit 1", "SAFETY INCIDENT", "Add(2, 2) = 5, want 4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "applied") {
		t.Errorf("the change was applied:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "// Add returns") {
		t.Errorf("calc.go was changed:\n%s", b)
	}
}

// goEnvScript sets GOFLAGS in the agent's own Go configuration, under
// $HOME, so that go test runs no test, makes a change that fixes nothing
// (an empty change is refused before it is verified), and finishes.
const goEnvScript = `steps:
  - tool_calls:
      - name: run_command
        arguments: {command: "go env -w GOFLAGS=-run=NONE"}
  - tool_calls:
      - name: edit_file
        arguments: {path: calc.go, old_string: "// Add returns", new_string: "// Add adds and returns"}
  - tool_calls:
      - name: finish
        arguments: {summary: "TestAdd passes."}
`

// TestRunVerifiesOverAFreshEnvironment: what the agent writes over the
// prepared environment ($HOME's go env) is its own sandbox's, and the
// verification's sandbox does not see it: the failing test fails there,
// the run fails and --apply writes nothing.
func TestRunVerifiesOverAFreshEnvironment(t *testing.T) {
	t.Parallel()
	dir := calcCheckout(t)
	ostest.WriteTree(t, dir, map[string]string{policy.PolicyPath: "version: 1\ntools: {shell: {policy: auto}}\n"})
	out, err := runCalc(t, dir, goEnvScript, "go test ./...", "--apply")
	if e, ok := errors.AsType[*exitError](err); !ok || e.code != 1 || !strings.Contains(e.Error(), "fail in a fresh one") {
		t.Fatalf("run = %v; want exit 1 saying the fresh sandbox's checks fail\n%s", err, out)
	}
	for _, want := range []string{"succeeded after 3 steps", "check1   pass  exit 0", "SAFETY INCIDENT", "Add(2, 2) = 5, want 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "applied") {
		t.Errorf("the change was applied:\n%s", out)
	}
}
