package docker_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// git runs host git as the design prescribes: its own git dir, outside the
// mount, with hooks and fsmonitor off.
func hostGit(t *testing.T, gitDir, tree string, args ...string) {
	t.Helper()
	base := []string{"--git-dir=" + gitDir, "--work-tree=" + tree,
		"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
		"-c", "user.name=agentbot", "-c", "user.email=agentbot@localhost"}
	cmd := exec.Command("git", append(base, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestGitTrapsDoNotFireOnTheHost(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	tree := sandboxtest.WorkTree(t)
	gitDir := filepath.Join(t.TempDir(), "repo.git")
	if err := os.WriteFile(filepath.Join(tree, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The sandbox user edits what the host checked out.
	if err := os.Chown(filepath.Join(tree, "main.go"), sandbox.UID, sandbox.GID); err != nil {
		t.Fatal(err)
	}
	hostGit(t, gitDir, tree, "init", "-q")
	hostGit(t, gitDir, tree, "add", "-A")
	hostGit(t, gitDir, tree, "commit", "-q", "-m", "base")

	c := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree})
	marker := filepath.Join(t.TempDir(), "fired")
	sandboxtest.PlantGitTraps(t, c, marker)
	if res := sandboxtest.MustRun(t, c, sandbox.Cmd{Shell: "echo changed >> main.go"}); res.ExitCode != 0 {
		t.Fatal(string(res.Stderr))
	}

	// Control: git trusting the tree's own .git runs the planted code, so the
	// traps are live and the marker proves something.
	naive := exec.Command("git", "-c", "safe.directory=*", "-C", tree, "status")
	naive.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("control: git over the tree's own .git did not fire the traps (%v)", err)
	}
	os.Remove(marker)

	hostGit(t, gitDir, tree, "status", "--porcelain")
	hostGit(t, gitDir, tree, "diff")
	hostGit(t, gitDir, tree, "add", "-A")
	hostGit(t, gitDir, tree, "diff", "--cached", "--stat")
	hostGit(t, gitDir, tree, "commit", "-q", "-m", "agent change")
	hostGit(t, gitDir, tree, "log", "-p", "-1")
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("host git ran code planted in the work tree (marker: %v)", err)
	}

	// Host-side file access through os.Root refuses the planted symlinks.
	root, err := os.OpenRoot(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"passwd", "up/etc/passwd"} {
		if f, err := root.Open(name); err == nil {
			f.Close()
			t.Errorf("os.Root followed %s out of the tree", name)
		}
	}
}
