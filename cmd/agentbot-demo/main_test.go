package main

import (
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
