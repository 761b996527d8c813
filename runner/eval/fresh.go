package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Fresh writes into dir, a new directory, the files of the tree as git
// records them (what Diff compares: nothing git ignores), made from the
// tree objects alone, so that checks run over dir judge the change and
// nothing else the sandbox left in the tree. The caller removes dir.
func (t *Tree) Fresh(ctx context.Context, dir string) error {
	if _, err := t.git(ctx, nil, "add", "-A"); err != nil {
		return fmt.Errorf("fresh tree: %w", err)
	}
	tree, err := t.git(ctx, nil, "write-tree")
	if err != nil {
		return fmt.Errorf("fresh tree: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("fresh tree: %w", err)
	}
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(t.gitDir, "index-fresh-"+filepath.Base(dir))}
	if _, err := t.gitIn(ctx, dir, index, nil, "read-tree", "--reset", "-u", strings.TrimSpace(tree)); err != nil {
		return fmt.Errorf("fresh tree: %w", err)
	}
	return nil
}
