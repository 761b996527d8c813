package eval

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Tree is a copy of a local directory with its base commit in a git dir
// beside it, never inside: the sandbox mounts only the tree, so what runs
// there cannot plant hooks or config that the host's git would obey. It
// satisfies agent.Workspace.
type Tree struct {
	dir, gitDir, home string
	root              *os.Root
}

// CopyTree copies src's files into a new tree under tmp, an empty
// directory the caller removes, and commits them as the base. In a git
// checkout the files are those git tracks plus the untracked ones it does not
// ignore; elsewhere everything but .git. The tree is made writable by the
// sandbox user.
func CopyTree(ctx context.Context, src, tmp string) (*Tree, error) {
	t := &Tree{dir: filepath.Join(tmp, "tree"), gitDir: filepath.Join(tmp, "git"), home: filepath.Join(tmp, "home")}
	for _, d := range []string{t.dir, t.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := workspace.CopyFiles(ctx, src, t.dir); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=agentbot", "-c", "user.email=agentbot@localhost", "commit", "-q", "--allow-empty", "-m", "base"},
	} {
		if _, err := t.git(ctx, nil, args...); err != nil {
			return nil, err
		}
	}
	if err := sandbox.ShareTree(t.dir); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(t.dir)
	if err != nil {
		return nil, err
	}
	t.root = root
	return t, nil
}

// git runs git with the tree's git dir over the tree.
func (t *Tree) git(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	full := append([]string{"--git-dir=" + t.gitDir, "--work-tree=" + t.dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false", "-c", "safe.directory=*"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = t.dir
	cmd.Env = []string{"HOME=" + t.home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Dir is the tree's path on the host: the directory the sandbox mounts.
func (t *Tree) Dir() string { return t.dir }

// Root returns the tree.
func (t *Tree) Root() *os.Root { return t.root }

// Close releases the tree's root; the caller removes tmp.
func (t *Tree) Close() error { return t.root.Close() }

// Diff returns the tree's change against the base, new files included.
func (t *Tree) Diff(ctx context.Context) (string, error) {
	if _, err := t.git(ctx, nil, "add", "-A"); err != nil {
		return "", err
	}
	return t.git(ctx, nil, "diff", "--cached", "--binary", "HEAD")
}

// Apply applies a saved diff to the tree.
func (t *Tree) Apply(ctx context.Context, diff string) error {
	_, err := t.git(ctx, []byte(diff), "apply", "--binary", "-")
	return err
}

// overlay copies the files under src into the tree through its root, so
// that a symlink the agent left cannot send a write outside it. Files the
// tree already has are replaced.
func (t *Tree) overlay(src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() {
			return t.root.MkdirAll(rel, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// A file, symlink or directory the agent put at this path gives way.
		if err := t.root.RemoveAll(rel); err != nil {
			return err
		}
		return t.root.WriteFile(rel, data, 0o644)
	})
}
