package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// calcCheckout is a git checkout of a module whose test fails.
func calcCheckout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.26\n",
		"calc.go":      "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b + 1\n}\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Fatalf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n",
		"AGENTS.md":    "Keep functions documented.\n",
		"build.log":    "ignored by git, so not copied\n",
		".gitignore":   "*.log\n",
	}
	ostest.WriteTree(t, dir, files)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

const fixScript = `steps:
  - text: "Reading the failing test first."
    tool_calls:
      - name: read_file
        arguments: {path: calc_test.go}
  - tool_calls:
      - name: run_checks
        arguments: {}
  - tool_calls:
      - name: list_files
        arguments: {glob: "*.log"}
  - tool_calls:
      - name: edit_file
        arguments: {path: calc.go, old_string: "return a + b + 1", new_string: "return a + b"}
  - tool_calls:
      - name: finish
        arguments: {summary: "Add no longer adds one."}
`

// grepCheck stands in for go test, keeping these tests about agentbot run
// rather than the toolchain; the end-to-end loop test in runner/agent runs
// the real one.
const grepCheck = `grep -q 'return a + b$' calc.go || { echo 'calc_test.go:7: Add(2, 2) = 5, want 4'; exit 1; }`

// scriptedModel serves path (a script file, or an eval suite's
// trajectories) as agentbot-demo model does, and returns the environment
// that points agentbot at it, as at a real model.
func scriptedModel(t *testing.T, path string) map[string]string {
	t.Helper()
	models, err := demo.ScriptedModels(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := llmtest.NewEndpoint(models)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return map[string]string{"AGENTBOT_LLM_BASE_URL": srv.URL + "/v1"}
}

// runScripted runs agentbot run with args against the script file's
// scripted model.
func runScripted(t *testing.T, script string, args ...string) (string, error) {
	t.Helper()
	return runCmdEnv(t, scriptedModel(t, script), append(args, "--model", "scripted")...)
}

// runCmd runs agentbot run with args and no model endpoint.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runCmdEnv(t, nil, args...)
}

// runCmdEnv runs agentbot run with args and the environment vars; unless
// args name an environment cache of their own, the tests' shared one,
// never the default data directory's.
func runCmdEnv(t *testing.T, vars map[string]string, args ...string) (string, error) {
	t.Helper()
	if !slices.Contains(args, "--data-dir") && !slices.Contains(args, "--env-cache-dir") {
		envs, err := sharedEnvs()
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--env-cache-dir", envs)
	}
	var out bytes.Buffer
	env := Env{Getenv: func(k string) string { return vars[k] }, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}
	err := run(context.Background(), append([]string{"run"}, args...), env)
	return out.String(), err
}

// runCalc runs agentbot run on dir, a calcCheckout, with the scripted
// model's steps and one check, in the tests' sandbox image, with args
// added.
func runCalc(t *testing.T, dir, steps, check string, args ...string) (string, error) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "model.yaml")
	if err := os.WriteFile(script, []byte(steps), 0o644); err != nil {
		t.Fatal(err)
	}
	return runScripted(t, script, append([]string{"--repo", dir, "--task", "make TestAdd pass", "--check", check,
		"--sandbox-image", sandboxtest.Image(t), "--sandbox-executor", sandboxtest.Executor(t)}, args...)...)
}

// TestRunInSandbox runs the loop on a local checkout in a real sandbox: it
// prints a line per step, the diff and the checks, and leaves the checkout
// alone unless --apply is given. Without setup commands its sandboxes
// still start in the prepared environment, as a worker's: $HOME holds the
// image's seed, the Go build cache of the standard library.
func TestRunInSandbox(t *testing.T) {
	t.Parallel()
	image, executor := sandboxtest.Image(t), sandboxtest.Executor(t)
	dir := calcCheckout(t)
	script := filepath.Join(t.TempDir(), "fix.yaml")
	if err := os.WriteFile(script, []byte(fixScript), 0o644); err != nil {
		t.Fatal(err)
	}
	seeded := `ls "$HOME"/.cache/go-build | grep -q . || exit 3; `
	args := []string{"--repo", dir, "--task", "make TestAdd pass", "--check", seeded + grepCheck, "--image", image, "--executor", executor}

	out, err := runScripted(t, script, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"step   1  read_file    calc_test.go",
		"step   2  run_checks   checks                                   failed",
		"step   4  edit_file    calc.go                                  ok",
		"succeeded after 5 steps: done",
		"-\treturn a + b + 1\n+\treturn a + b\n",
		"check1   FAIL  exit 1",
		"check1   pass  exit 0",
		"verified in a fresh sandbox (",
		"usage: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "setup: built ") && !strings.Contains(out, "setup: cached ") {
		t.Errorf("output names no prepared environment:\n%s", out)
	}
	if strings.Contains(out, "build.log") {
		t.Errorf("an ignored file was copied:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "a + b + 1") {
		t.Fatal("run changed the checkout without --apply")
	}

	if out, err = runScripted(t, script, append(args, "--apply")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "return a + b\n") || !strings.Contains(out, "applied 1 files") {
		t.Errorf("--apply did not write the fix: %s\n%s", b, out)
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir := calcCheckout(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--repo", dir}, "--task is required"},
		{[]string{"--repo", dir, "--task", "fix", "--model", "m"}, "defines no checks"},
		{[]string{"--repo", dir, "--task", "fix", "--model", "m"}, "For this Go module (go.mod):\n\n```yaml\nchecks:\n  - {name: build"},
		{[]string{"--repo", dir, "--task", "fix", "--check", "true"}, "no model"},
		{[]string{"--repo", dir, "--task", "fix", "--check", ""}, "a check may not be empty"},
	}
	for _, c := range cases {
		out, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error()+out, c.want) {
			t.Errorf("%v: %v, want an error with %q\n%s", c.args, err, c.want, out)
		}
	}
}

// TestRunSetupNetwork runs a checkout whose setup needs the network: it is
// refused without --setup-network, reaches the host --allow-host names
// with it, and the other host it tries is refused and printed.
func TestRunSetupNetwork(t *testing.T) {
	t.Parallel()
	image, executor := sandboxtest.Image(t), sandboxtest.Executor(t)
	gw := sandboxtest.BridgeGateway(t)
	allowed, other := sandboxtest.StartGitServer(t), sandboxtest.StartGitServer(t)
	dir := calcCheckout(t)
	policy := fmt.Sprintf(`version: 1
setup:
  network: true
  run:
    - git ls-remote http://%[1]s:%[2]s/deps.git
    - git ls-remote http://%[1]s:%[3]s/deps.git || echo refused as expected
    - echo ready > "$HOME/prepared"
`, gw, allowed.Port, other.Port)
	if err := os.MkdirAll(filepath.Join(dir, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".github", "agent.yml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "fix.yaml")
	if err := os.WriteFile(script, []byte(fixScript), 0o644); err != nil {
		t.Fatal(err)
	}
	// The check needs what setup left in $HOME: the prepared environment.
	check := `test -f "$HOME/prepared" || exit 3; ` + grepCheck
	args := []string{"--repo", dir, "--task", "make TestAdd pass", "--check", check, "--image", image, "--executor", executor,
		"--data-dir", t.TempDir()}

	out, err := runScripted(t, script, args...)
	if err == nil || !strings.Contains(err.Error(), "pass --setup-network") {
		t.Errorf("setup.network without --setup-network: %v; want a refusal naming the flag\n%s", err, out)
	}
	out, err = runScripted(t, script, append(args, "--allow-host", gw+":"+allowed.Port)...)
	if err == nil || !strings.Contains(err.Error(), "--allow-host needs --setup-network") {
		t.Errorf("--allow-host alone: %v\n%s", err, out)
	}

	out, err = runScripted(t, script, append(args, "--setup-network", "--allow-host", gw+":"+allowed.Port)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"setup: network through the egress proxy to " + gw + ":" + allowed.Port,
		fmt.Sprintf("setup tried to reach %s:%s — not in setup.allow_hosts", gw, other.Port),
		fmt.Sprintf("setup reached %s:%s\n", gw, allowed.Port),
		"setup: built ",
		"succeeded after 5 steps",
		"check1   pass  exit 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if allowed.Requests.Load() == 0 || other.Requests.Load() != 0 {
		t.Errorf("the allowed registry served %d requests, the other %d; want some and none", allowed.Requests.Load(), other.Requests.Load())
	}

	// The same lock files and setup: the environment is reused, setup
	// does not run.
	served := allowed.Requests.Load()
	out, err = runScripted(t, script, append(args, "--setup-network", "--allow-host", gw+":"+allowed.Port)...)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "setup: cached ") || strings.Contains(out, "setup: git ls-remote") || allowed.Requests.Load() != served {
		t.Errorf("second run made %d requests; want the environment reused without setup:\n%s", allowed.Requests.Load()-served, out)
	}
}

// TestRunStopsWhenSetupFails: a setup command that fails ends the run
// before the agent starts, saying which command and what it printed.
func TestRunStopsWhenSetupFails(t *testing.T) {
	t.Parallel()
	dir := calcCheckout(t)
	ostest.WriteTree(t, dir, map[string]string{policy.PolicyPath: "version: 1\nsetup:\n  run:\n    - echo preparing\n    - echo no registry >&2; exit 7\n"})
	out, err := runCalc(t, dir, fixScript, grepCheck, "--data-dir", t.TempDir())
	e, ok := errors.AsType[*exitError](err)
	if !ok || e.code != 1 || !strings.Contains(e.Error(), `setup "echo no registry >&2; exit 7" exited 7`) ||
		!strings.Contains(e.Error(), "the agent did not start:\nno registry") {
		t.Fatalf("run = %v; want exit 1 naming the failed command and its output\n%s", err, out)
	}
	if !strings.Contains(out, "setup: echo preparing\n") || strings.Contains(out, "step ") || strings.Contains(out, "setup: built") {
		t.Errorf("output: want the setup commands, no step and no environment kept:\n%s", out)
	}
}

// TestRunUsesThePolicysImage: a policy naming an image of its own gets it
// for the loop and the verification, where --image lacks the image's
// marker. Its limits.attempts gets one attempt, and the run says so.
func TestRunUsesThePolicysImage(t *testing.T) {
	t.Parallel()
	marked := sandboxtest.MarkedImage(t)
	dir := calcCheckout(t)
	ostest.WriteTree(t, dir, map[string]string{policy.PolicyPath: "version: 1\nchecks: [{name: c, run: \"true\"}]\nlimits: {attempts: 2}\nsandbox: {image: " + marked + "}\n"})
	check := "grep -qx " + marked + " " + sandboxtest.MarkerPath + " || exit 2; " + grepCheck
	out, err := runCalc(t, dir, fixScript, check)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"limits.attempts is 2; agentbot run makes one attempt", "check1   FAIL  exit 1", "verified in a fresh sandbox ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRunSetupCAFile: setup reaches a registry whose TLS a re-signing
// egress signed with its own CA only through --setup-ca-file, the
// worker's flag of the same name; without it, setup trusts the host's
// store, which lacks that CA.
func TestRunSetupCAFile(t *testing.T) {
	t.Parallel()
	gw := sandboxtest.BridgeGateway(t)
	caPEM, cert := sandboxtest.PKI(t, gw)
	registry := sandboxtest.StartGitServer(t, cert)
	caFile := filepath.Join(t.TempDir(), "egress-ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := calcCheckout(t)
	ostest.WriteTree(t, dir, map[string]string{policy.PolicyPath: fmt.Sprintf(
		"version: 1\nsetup:\n  network: true\n  run:\n    - timeout 20 git ls-remote https://%s:%s/deps.git\n", gw, registry.Port)})
	network := []string{"--setup-network", "--allow-host", gw + ":" + registry.Port}

	out, err := runCalc(t, dir, fixScript, grepCheck, append(network, "--data-dir", t.TempDir())...)
	if e, ok := errors.AsType[*exitError](err); !ok || !strings.Contains(e.Error(), "the agent did not start") || !strings.Contains(e.Error(), "certificate") {
		t.Errorf("without --setup-ca-file: %v; want setup to fail on the certificate\n%s", err, out)
	}
	out, err = runCalc(t, dir, fixScript, grepCheck, append(network, "--data-dir", t.TempDir(), "--setup-ca-file", caFile)...)
	if err != nil {
		t.Fatalf("with --setup-ca-file: %v\n%s", err, out)
	}
	if !strings.Contains(out, "setup: built ") || !strings.Contains(out, "check1   pass  exit 0") {
		t.Errorf("output lacks the built environment and the passing check:\n%s", out)
	}
}

// TestRunAndEvalShareTheWorkersSandboxFlags: every flag of a worker that
// changes how a change is made is agentbot run's too, by the same name,
// and eval's where it makes its changes the same way.
func TestRunAndEvalShareTheWorkersSandboxFlags(t *testing.T) {
	t.Parallel()
	help := func(cmd string) string {
		var out bytes.Buffer
		env := Env{Getenv: func(string) string { return "" }, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}
		run(context.Background(), []string{cmd, "--help"}, env)
		return out.String()
	}
	runHelp, workerHelp := help("run"), help("worker")
	for _, name := range []string{"sandbox-image", "sandbox-runtime", "sandbox-executor", "setup-ca-file", "config", "data-dir", "env-cache-dir", "env-cache-max", "model", "fast-model"} {
		if !strings.Contains(workerHelp, "-"+name+" ") {
			t.Fatalf("worker has no --%s; is this its help?\n%s", name, workerHelp)
		}
		if !strings.Contains(runHelp, "-"+name+" ") {
			t.Errorf("run has no --%s, which the worker has", name)
		}
	}
	// eval makes its changes in containers as the worker does; its setup
	// reaches no network, so it trusts no CA.
	evalHelp := help("eval")
	for _, name := range []string{"sandbox-image", "sandbox-runtime", "sandbox-executor", "data-dir", "env-cache-dir", "env-cache-max", "model"} {
		if !strings.Contains(evalHelp, "-"+name+" ") {
			t.Errorf("eval has no --%s, which the worker has", name)
		}
	}
}
