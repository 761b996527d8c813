package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// TestDemo runs "agentbot demo" as "make demo" does, with no Redis at the
// URL so that it starts its own, and checks what it prints.
func TestDemo(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	rs := redistest.Start(t)
	rs.Stop()
	env, out, logs := testEnv(nil)
	err := run(t.Context(), []string{"demo", "--redis-url", rs.URL, "--sample", sampleDir,
		"--sandbox-executor", sandboxtest.Executor(t), "--sandbox-image", sandboxtest.Image(t)}, env)
	if err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out, logs)
	}
	for _, want := range []string{
		"started a private redis-server", "model: scripted", "running   step 1: read_file",
		"succeeded pull request #2", "pull request #2: http://127.0.0.1:", "agent/1-sum-drops-the-first-sample → main",
		"Fixes #1", "-\tfor i := 1; i < len(xs); i++ {\n+\tfor i := 0; i < len(xs); i++ {", "agentbot: completed success",
		// TestSum fails on the base and passes with the fix, which adds no test.
		"✅ **Reproduced by an existing test:** `TestSum`, `TestMean` fail on", "--- FAIL: TestSum",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
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
