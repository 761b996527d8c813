package workspace_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
	"github.com/agentbot/agentbot/runner/workspace/workspacetest"
)

// A local checkout becomes a workspace whose base is the checkout's files
// (tracked, and untracked but not ignored), with nothing to diff, and
// whose gate refuses a change as a task's does.
func TestLocalIsACheckoutTheGateJudges(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	ostest.WriteTree(t, src, map[string]string{
		"main.go": "package main\n", ".gitignore": "*.log\n", "vendor.log": "tracked though ignored\n",
	})
	workspacetest.Git(t, src, "init", "-q")
	workspacetest.Git(t, src, "add", "-A")
	workspacetest.Git(t, src, "add", "-f", "vendor.log")
	workspacetest.Git(t, src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
	ostest.WriteTree(t, src, map[string]string{"new.go": "package main\n", "build.log": "ignored\n"})

	m := workspace.NewManager(t.TempDir(), workspace.Options{})
	defer m.Close()
	ws, err := m.Local(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var got []string
	entries, _ := os.ReadDir(ws.Dir())
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want := []string{".gitignore", "main.go", "new.go", "vendor.log"}; !slices.Equal(got, want) {
		t.Errorf("tree holds %q; want %q", got, want)
	}
	if diff, err := ws.Diff(t.Context()); err != nil || diff != "" {
		t.Errorf("Diff of the fresh copy = %q, %v; want none", diff, err)
	}

	root := ws.Root()
	if err := root.MkdirAll(".github/workflows", 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{".github/workflows/pwn2.yml": "on: push\n", "DEPLOY.PEM": "key\n", "main.go": "package main // changed\n"} {
		if err := root.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := policy.BuildPolicy(policy.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ws.Gate(t.Context(), p)
	if err == nil || !strings.Contains(err.Error(), ".github/workflows/pwn2.yml") || !strings.Contains(err.Error(), "DEPLOY.PEM") {
		t.Errorf("Gate = %v; want a refusal naming both planted files", err)
	}
	if !strings.Contains(rep.Diff, "+package main // changed") {
		t.Errorf("the gate's diff lacks the change:\n%s", rep.Diff)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "main.go")); string(b) != "package main\n" {
		t.Errorf("the checkout changed: %q", b)
	}
}
