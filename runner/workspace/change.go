package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Change is the last commit Commit made, as the paths it changes on its
// parent: what recreating it elsewhere (through GitHub's Git database API)
// needs.
type Change struct {
	Parent  string
	Tree    string // the commit's tree: the tree the gate passed
	Message string
	Files   []ChangedFile
}

// ChangedFile is one path of a Change.
type ChangedFile struct {
	Path string
	// Mode is the new mode: 100644, 100755 (executable), 120000 (symbolic
	// link) or 160000 (submodule); for a deletion, the mode it had.
	Mode    string
	Object  string // the new blob (or a submodule's commit); "" for a deletion
	Deleted bool
}

// maxBlob bounds a blob read back for upload: GitHub's own limit.
const maxBlob = 100 << 20

// Change describes Head against its parent. It fails when nothing was
// committed.
func (w *Workspace) Change(ctx context.Context) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == w.base {
		return Change{}, errors.New("change: nothing committed")
	}
	raw, err := w.git(ctx, gitCall{args: []string{"cat-file", "commit", w.head}})
	if err != nil {
		return Change{}, fmt.Errorf("change: %w", err)
	}
	header, msg, _ := strings.Cut(string(raw), "\n\n")
	c := Change{Message: msg}
	for line := range strings.SplitSeq(header, "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.Tree = val
		case "parent":
			if c.Parent != "" {
				return Change{}, fmt.Errorf("change: %s has more than one parent", w.head)
			}
			c.Parent = val
		}
	}
	// --no-renames: a rename is a deletion and an addition, which is how
	// a tree is built. -z keeps any byte of a path as it is.
	out, err := w.git(ctx, gitCall{args: []string{"diff-tree", "-r", "-z", "--no-renames", "--raw", c.Parent, w.head}})
	if err != nil {
		return Change{}, fmt.Errorf("change: %w", err)
	}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		// ":oldmode newmode oldsha newsha status"
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return Change{}, fmt.Errorf("change: unexpected diff-tree record %q", fields[i])
		}
		f := ChangedFile{Path: fields[i+1], Mode: meta[1], Object: meta[3]}
		if meta[4] == "D" {
			f = ChangedFile{Path: fields[i+1], Mode: meta[0], Deleted: true}
		}
		c.Files = append(c.Files, f)
	}
	return c, nil
}

// ReadBlob returns the content of blob id from the task's objects.
func (w *Workspace) ReadBlob(ctx context.Context, id string) ([]byte, error) {
	if !isCommitID(id) {
		return nil, fmt.Errorf("read blob: %q is not an object id", id)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out, err := w.git(ctx, gitCall{args: []string{"cat-file", "blob", id}, maxStdout: maxBlob})
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", id, err)
	}
	return out, nil
}
