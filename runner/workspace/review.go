package workspace

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentbot/agentbot/app"
)

// A review reads a pull request checked out at its head (the workspace's
// base): what it changes since it left its base branch, and files as they
// are on that branch. It writes no work tree: a finding's test is laid
// over a commit as a tree object, for a FreshTree to check out.

// MergeBase returns the best common ancestor of the commits a and b, full
// ids both, which the task's git dir reaches through the mirror.
func (w *Workspace) MergeBase(ctx context.Context, a, b string) (string, error) {
	for _, id := range []string{a, b} {
		if !isCommitID(id) {
			return "", app.Errorf(app.EInvalid, "%q is not a commit id", id)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	base, err := w.gitString(ctx, gitCall{args: []string{"merge-base", "--end-of-options", a, b}})
	if err != nil {
		return "", fmt.Errorf("merge base of %s and %s: %w", a, b, err)
	}
	return base, nil
}

// DiffSince returns the diff from the commit from to the workspace's base
// commit, capped as Diff is, with renames found: what a pull request
// whose head is the base changes since from.
func (w *Workspace) DiffSince(ctx context.Context, from string) (string, error) {
	if !isCommitID(from) {
		return "", app.Errorf(app.EInvalid, "%q is not a commit id", from)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out, err := w.git(ctx, gitCall{maxStdout: w.m.maxDiffSize, args: []string{"diff", "--find-renames", "--no-color",
		"--no-textconv", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/", "--end-of-options", from, w.base, "--"}})
	if err != nil {
		return "", fmt.Errorf("diff %s..%s: %w", from, w.base, err)
	}
	return string(out), nil
}

// ChangedPaths returns the paths the workspace's base commit changes
// since the commit from, however large the change: a renamed file under
// both its names.
func (w *Workspace) ChangedPaths(ctx context.Context, from string) ([]string, error) {
	if !isCommitID(from) {
		return nil, app.Errorf(app.EInvalid, "%q is not a commit id", from)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out, err := w.git(ctx, gitCall{args: []string{"diff", "--name-only", "-z", "--no-renames", "--end-of-options", from, w.base, "--"}})
	if err != nil {
		return nil, fmt.Errorf("paths changed in %s..%s: %w", from, w.base, err)
	}
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == 0 }), nil
}

// ReadFiles returns the content of those of paths that are files of the
// commit or tree at; a path it lacks is left out.
func (w *Workspace) ReadFiles(ctx context.Context, at string, paths []string) (map[string]string, error) {
	return w.treeFiles(ctx, at, paths)
}

// WithFiles returns a tree object holding the files of the commit or tree
// at, with files (path to content) added or written over, as regular
// files. It uses an index of its own, as Overlay does.
func (w *Workspace) WithFiles(ctx context.Context, at string, files map[string]string) (string, error) {
	dir, err := os.MkdirTemp(w.dir, "with-")
	if err != nil {
		return "", fmt.Errorf("lay files over %s: %w", at, err)
	}
	defer os.RemoveAll(dir)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index"), "GIT_LITERAL_PATHSPECS=1"}
	w.mu.Lock()
	defer w.mu.Unlock()
	run := func(stdin string, args ...string) (string, error) {
		out, err := w.m.git.run(ctx, gitCall{gitDir: w.gitDir, env: env, stdin: strings.NewReader(stdin), args: args})
		return strings.TrimSpace(string(out)), err
	}
	if _, err := run("", "read-tree", "--end-of-options", at); err != nil {
		return "", fmt.Errorf("lay files over %s: read it: %w", at, err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var info strings.Builder
	for _, p := range paths {
		if !cleanRelative(p) {
			return "", app.Errorf(app.EInvalid, "%q is not a path inside the repository", p)
		}
		oid, err := run(files[p], "hash-object", "-w", "--stdin")
		if err != nil {
			return "", fmt.Errorf("lay files over %s: store %s: %w", at, p, err)
		}
		fmt.Fprintf(&info, "100644 %s\t%s\x00", oid, p)
	}
	if _, err := run(info.String(), "update-index", "-z", "--add", "--index-info"); err != nil {
		return "", fmt.Errorf("lay files over %s: %w", at, err)
	}
	tree, err := run("", "write-tree")
	if err != nil {
		return "", fmt.Errorf("lay files over %s: write tree: %w", at, err)
	}
	return tree, nil
}

// cleanRelative reports whether p names a file inside the tree: relative,
// clean, and never in a .git directory.
func cleanRelative(p string) bool {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
		return false
	}
	for part := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}
