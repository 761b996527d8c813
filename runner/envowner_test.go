package runner_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// ownerPolicy is the policy of both repositories of
// TestAnotherRepositoryCannotServeItsEnvironment but for its checks: the
// same setup line, which runs what the tree's go:generate lines say.
const ownerPolicy = `version: 1
checks:
  - {name: test, run: "%s"}
setup: {run: ["go generate ./..."]}
paths: {allow: ["**/*.go"]}
`

// A hostile repository B on the same worker copies A's setup line and lock
// files, and its setup plants a GOFLAGS=-run=NONE in $HOME's go env (every
// test of A would then pass without running) and a top-level internal/
// over A's own. A's tasks never see B's environment: their key is A's own,
// and an entry planted under A's key (forged, or colliding) is refused.
func TestAnotherRepositoryCannotServeItsEnvironment(t *testing.T) {
	t.Parallel()
	demo := demoScript(t)
	var script llmtest.Script
	for range 3 { // B's task, then A's two
		for _, s := range demo.Steps {
			if len(s.ToolCalls) == 1 && s.ToolCalls[0].Name == "run_checks" {
				continue
			}
			script.Steps = append(script.Steps, s)
		}
	}
	files := demoFiles(t)
	files["internal/stats/stats.go"] = "package stats\n\n// Real is the repository's own.\nconst Real = true\n"
	files[app.PolicyPath] = strings.Replace(ownerPolicy, "%s", "go test ./...", 1)
	envDir := t.TempDir()
	w := newEnvWorldIn(t, script, files, sandboxtest.Image(t), envDir)

	// B: another installation's repository, with A's go.mod and policy's
	// setup line, whose go:generate plants what it wants A to run with.
	const evil = "mallory/stats"
	mallory := w.sim.AddInstallation("mallory")
	evilFiles := demoFiles(t)
	evilFiles["plant.go"] = "package stats\n\n//go:generate sh plant.sh\n"
	evilFiles["plant.sh"] = `mkdir -p "$HOME/.config/go" && printf 'GOFLAGS=-run=NONE\n' >"$HOME/.config/go/env"
mkdir -p internal/stats && printf 'package stats\n\nconst Planted = true\n' >internal/stats/stats.go
`
	evilFiles[app.PolicyPath] = strings.Replace(ownerPolicy, "%s", "true", 1)
	if err := w.sim.AddRepo(mallory, evil, evilFiles); err != nil {
		t.Fatal(err)
	}
	w.sim.SetPermission(evil, "mallory", "write")
	planted := w.fixIssueIn(t, mallory, evil, "mallory", "B1")
	evilKey, ok := strings.CutPrefix(planted, "setup: built ")
	if !ok {
		t.Fatalf("B's setup: %q, want it built", planted)
	}
	if _, err := os.Stat(filepath.Join(envDir, "entries", evilKey, "home", ".config", "go", "env")); err != nil {
		t.Fatalf("B's setup planted nothing: %v", err)
	}

	first := w.fixIssue(t, "A1")
	key, ok := strings.CutPrefix(first, "setup: built ")
	if !ok || key == evilKey {
		t.Fatalf("A's setup: %q; want its own environment, not B's %s", first, evilKey)
	}
	ours := filepath.Join(envDir, "entries", key)
	if _, err := os.Stat(filepath.Join(ours, "home", ".config", "go", "env")); err == nil {
		t.Error("A's environment holds B's go env")
	}
	if _, err := os.Stat(filepath.Join(ours, "tree", "internal")); err == nil {
		t.Error("A's environment keeps an internal/ of its own")
	}

	// B's environment, copied under A's key, as a forged meta.json or a
	// colliding key would leave it: refused, and A builds again.
	if err := os.RemoveAll(ours); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(envDir, "entries", evilKey), ours).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	meta, err := os.ReadFile(filepath.Join(ours, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ours, "meta.json"), []byte(strings.Replace(string(meta), evilKey, key, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if again := w.fixIssue(t, "A2"); again != first {
		t.Errorf("A's setup over B's entry under its key: %q, want %q", again, first)
	}
}

// A setup that writes past the server's setup.max_env_bytes is stopped
// while it writes, the task ends saying why, and nothing is kept for the
// next task. The image's seed of $HOME (174 MiB for the Go image) is part
// of every environment, so the cap leaves room for it.
func TestSetupPastTheEnvironmentCapIsNotKept(t *testing.T) {
	t.Parallel()
	files := demoFiles(t)
	// 24 files of 32 MiB, each under RLIMIT_FSIZE: 768 MiB in all.
	files[app.PolicyPath] = `version: 1
checks:
  - {name: test, run: "go test ./..."}
setup: {run: ['i=0; while [ $i -lt 24 ]; do dd if=/dev/zero of="$HOME/fill$i.bin" bs=1M count=32 2>/dev/null || exit 3; i=$((i+1)); done; echo wrote all']}
paths: {allow: ["**/*.go"]}
`
	envDir := t.TempDir()
	w := newEnvWorldIn(t, llmtest.Script{}, files, sandboxtest.Image(t), envDir)
	cfg := w.cfg
	cfg.Server.SetupMaxEnvBytes = 320 << 20
	var err error
	if w.runner, err = runner.New(cfg); err != nil {
		t.Fatal(err)
	}
	issue, err := w.sim.AddIssue(repo, "grace", "Sum drops the first sample", "Sum([1 2 3]) is 5.")
	if err != nil {
		t.Fatal(err)
	}
	rec := w.fix(t, "S1", issue)
	if rec.State != app.StateFailed || !strings.Contains(rec.Step, "setup") {
		t.Fatalf("task ended %s (%s); want failed in setup", rec.State, rec.Step)
	}
	var status string
	for _, c := range w.sim.Comments(repo, issue) {
		if strings.Contains(c.Body, "agentbot:task=S1") {
			status = c.Body
		}
	}
	if !strings.Contains(status, "the work tree and $HOME grew to") || !strings.Contains(status, "past its limit of 320.0 MiB") || strings.Contains(status, "wrote all") {
		t.Errorf("the status comment does not say the setup was stopped at its cap:\n%s", status)
	}
	if list, err := w.envs.List(); err != nil || len(list) != 0 {
		t.Errorf("environments kept: %+v, %v", list, err)
	}
	for _, sub := range []string{"entries", "build"} {
		if left, _ := os.ReadDir(filepath.Join(envDir, sub)); len(left) != 0 {
			t.Errorf("%s/ holds %v after the refused setup", sub, left)
		}
	}
}
