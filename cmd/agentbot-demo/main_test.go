package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// TestDemo runs the demo as "make demo" does, against an agentbot binary
// built as "make build" builds it, with no Redis at the URL so that it
// starts its own, and checks what it prints.
func TestDemo(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	rs := redistest.Start(t)
	rs.Stop()
	agentbot := filepath.Join(t.TempDir(), "agentbot")
	build := exec.Command("go", "build", "-trimpath", "-o", agentbot, "../agentbot")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build agentbot: %v\n%s", err, out)
	}
	var out, logs ostest.SyncBuffer
	getenv := func(k string) string { return map[string]string{"AGENTBOT_DEMO_LOGS": "1"}[k] }
	err := run(t.Context(), []string{"--redis-url", rs.URL, "--sample", "../../deploy/demo",
		"--agentbot", agentbot, "--sandbox-image", sandboxtest.Image(t)}, getenv, &out, &logs)
	if err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out.String(), logs.String())
	}
	for _, want := range []string{
		"started a private redis-server", "model: scripted", "running   step 1: read_file",
		"succeeded pull request #2", "pull request #2: http://127.0.0.1:", "agent/1-sum-drops-the-first-sample → main",
		"Fixes #1", "-\tfor i := 1; i < len(xs); i++ {\n+\tfor i := 0; i < len(xs); i++ {", "agentbot: completed success",
		// TestSum fails on the base and passes with the fix, which adds no test.
		"✅ **Reproduced by an existing test:** `TestSum`, `TestMean` fail on", "--- FAIL: TestSum",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// Every step carries the time since the demo began, and the last line
	// says that it passed.
	steps := regexp.MustCompile(`(?m)^\[ *\d+\.\ds\] `).FindAllString(out.String(), -1)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(steps) < 8 || !regexp.MustCompile(`^\[ *\d+\.\ds\] demo passed: /agent fix on acme/\S+#1 became pull request #2, and its checks pass$`).MatchString(lines[len(lines)-1]) {
		t.Errorf("%d timed steps, last line %q", len(steps), lines[len(lines)-1])
	}
}

// agentbot-demo model serves a script as a model endpoint to the command
// it runs, through AGENTBOT_LLM_BASE_URL as agentbot reads it, and exits
// with the command's status: make eval's verdict is eval's.
func TestModelServesTheCommand(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" { // make test-deps installs it: CI must not pass without this test
			t.Fatal("no curl")
		}
		t.Skip("no curl")
	}
	script := filepath.Join(t.TempDir(), "model.yaml")
	if err := os.WriteFile(script, []byte("steps:\n  - text: \"Reading the test first.\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ask := `curl -sS -H 'Content-Type: application/json' -d '{"model":"any","messages":[{"role":"user","content":"fix it"}]}' "$AGENTBOT_LLM_BASE_URL/chat/completions"; exit 3`
	var out, errOut ostest.SyncBuffer
	err := run(t.Context(), []string{"model", script, "--", "sh", "-c", ask}, os.Getenv, &out, &errOut)
	if status, ok := errors.AsType[exitStatus](err); !ok || status != 3 {
		t.Errorf("agentbot-demo model = %v; want the command's exit status 3\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), `"content":"Reading the test first."`) {
		t.Errorf("the command was not answered from the script:\n%s\n%s", out.String(), errOut.String())
	}
}
