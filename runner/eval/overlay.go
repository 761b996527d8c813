package eval

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// overlay copies the files under src into the tree through its root, so
// that a symlink the agent left cannot send a write outside it. Files the
// tree already has are replaced.
func overlay(root *os.Root, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() {
			return root.MkdirAll(rel, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// A file, symlink or directory the agent put at this path gives way.
		if err := root.RemoveAll(rel); err != nil {
			return err
		}
		return root.WriteFile(rel, data, 0o644)
	})
}
