package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
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
	files, err := sourceFiles(ctx, src)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := copyFile(src, t.dir, f); err != nil {
			return nil, fmt.Errorf("copy %s: %w", f, err)
		}
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
	if t.root, err = os.OpenRoot(t.dir); err != nil {
		return nil, err
	}
	return t, nil
}

func sourceFiles(ctx context.Context, src string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(src, ".git")); err == nil {
		out, err := exec.CommandContext(ctx, "git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
		if err != nil {
			return nil, fmt.Errorf("list the files of %s: %w", src, err)
		}
		return strings.FieldsFunc(string(out), func(r rune) bool { return r == 0 }), nil
	}
	var files []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(src, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// copyFile copies a regular file or a symlink; a tracked file deleted in the
// checkout is skipped.
func copyFile(src, dst, rel string) error {
	from, to := filepath.Join(src, rel), filepath.Join(dst, rel)
	fi, err := os.Lstat(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, fi.Mode().Perm())
	}
	return nil
}

func (t *Tree) git(ctx context.Context, stdin []byte, args ...string) (string, error) {
	return t.gitIn(ctx, t.dir, nil, stdin, args...)
}

// gitIn runs git with the tree's git dir over the work tree dir, with env
// added to its environment.
func (t *Tree) gitIn(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	full := append([]string{"--git-dir=" + t.gitDir, "--work-tree=" + dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false", "-c", "safe.directory=*"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + t.home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}, env...)
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

// Changed lists the paths the diff touches, both sides of a rename.
func (t *Tree) Changed(ctx context.Context) ([]string, error) {
	if _, err := t.git(ctx, nil, "add", "-A"); err != nil {
		return nil, err
	}
	out, err := t.git(ctx, nil, "diff", "--cached", "--name-only", "--no-renames", "-z", "HEAD")
	if err != nil {
		return nil, err
	}
	return strings.FieldsFunc(out, func(r rune) bool { return r == 0 }), nil
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
