package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// localIdentity signs the base commit of a local checkout: nobody pushes
// it, so it names no one.
var localIdentity = []string{
	"GIT_AUTHOR_NAME=agentbot", "GIT_AUTHOR_EMAIL=agentbot@localhost",
	"GIT_COMMITTER_NAME=agentbot", "GIT_COMMITTER_EMAIL=agentbot@localhost",
}

// Local gives a Workspace whose base commit holds the files of src, a
// directory on this machine (agentbot run's checkout), so that the gate,
// Diff, Fresh and Commit judge a local change exactly as they judge a
// task's. The files are those CopyFiles copies; src is only read. The
// base commit lives in the workspace's own git dir, which borrows no
// mirror.
func (m *Manager) Local(ctx context.Context, src string) (_ *Workspace, err error) {
	if err := os.MkdirAll(filepath.Join(m.dataDir, "home"), 0o700); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	lock, dir, err := lockedName(filepath.Join(m.dataDir, "work"), "task")
	if err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
			unlock(lock)
		}
	}()
	gitDir, tree := filepath.Join(dir, "git"), filepath.Join(dir, "tree")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	if err := m.initGitDir(ctx, gitDir, ""); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	if err := os.Mkdir(tree, 0o755); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	if err := CopyFiles(ctx, src, tree); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	// --force: a file the checkout tracks is in the base even where its
	// .gitignore matches it, as in the checkout.
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, args: []string{"add", "--all", "--force", "--", "."}}); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	treeID, err := m.git.runString(ctx, gitCall{gitDir: gitDir, args: []string{"write-tree"}})
	if err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	base, err := m.git.runString(ctx, gitCall{gitDir: gitDir, env: localIdentity, stdin: strings.NewReader("base\n"),
		args: []string{"commit-tree", treeID, "-F", "-"}})
	if err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"update-ref", "--no-deref", "HEAD", base}}); err != nil {
		return nil, fmt.Errorf("local workspace: %w", err)
	}
	return m.openWorkspace(lock, dir, base)
}

// CopyFiles copies the files of src into dst, an existing directory: in a
// git checkout those git tracks plus the untracked ones it does not
// ignore, elsewhere everything but .git. Regular files keep their
// permission bits and symlinks their targets; a tracked file deleted in
// the checkout is skipped.
func CopyFiles(ctx context.Context, src, dst string) error {
	files, err := sourceFiles(ctx, src)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := copyFile(src, dst, f); err != nil {
			return fmt.Errorf("copy %s: %w", f, err)
		}
	}
	return nil
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
