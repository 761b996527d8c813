package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// FreshTree is a second work tree of a task, made by the host from tree
// objects only: nothing the sandbox left in the task's own work tree (an
// ignored file, a cache, a file outside what git records) is in it. The
// final verification runs the checks over it, so that they judge exactly
// the tree that is committed. It lives in the task's directory, so that
// Workspace.Close and Manager.RemoveOrphans remove it with the rest.
type FreshTree struct {
	w     *Workspace
	dir   string
	index string // its own index, apart from the one Diff and Gate use
}

// Fresh makes a new FreshTree holding the files of treeish, a tree or a
// commit of the task's git dir, such as Base or GateReport.Tree.
func (w *Workspace) Fresh(ctx context.Context, treeish string) (_ *FreshTree, err error) {
	parent, err := os.MkdirTemp(w.dir, "fresh-")
	if err != nil {
		return nil, fmt.Errorf("make a fresh tree: %w", err)
	}
	f := &FreshTree{w: w, dir: filepath.Join(parent, "tree"), index: filepath.Join(parent, "index")}
	defer func() {
		if err != nil {
			os.RemoveAll(parent)
		}
	}()
	if err := os.Mkdir(f.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a fresh tree: %w", err)
	}
	if err := f.Switch(ctx, treeish); err != nil {
		return nil, err
	}
	return f, nil
}

// Dir is the fresh tree's path on the host: the directory to mount.
func (f *FreshTree) Dir() string { return f.dir }

// Switch makes the tracked files of the fresh tree those of treeish: files
// it lacks are removed, others written over, whatever their state; files
// git never tracked here (what setup commands produced) stay.
func (f *FreshTree) Switch(ctx context.Context, treeish string) error {
	if treeish == "" {
		return errors.New("switch a fresh tree: no tree given")
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	_, err := f.w.m.git.run(ctx, gitCall{gitDir: f.w.gitDir, workTree: f.dir, env: []string{"GIT_INDEX_FILE=" + f.index},
		args: []string{"read-tree", "--reset", "-u", "--end-of-options", treeish}})
	if err != nil {
		return fmt.Errorf("check %s out into a fresh tree: %w", treeish, err)
	}
	return nil
}

// Close removes the fresh tree.
func (f *FreshTree) Close() error {
	if err := os.RemoveAll(filepath.Dir(f.dir)); err != nil {
		return fmt.Errorf("remove a fresh tree: %w", err)
	}
	return nil
}
