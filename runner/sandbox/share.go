package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
)

// ShareTree lets the sandbox user (UID) write the work tree at dir before it
// is mounted: owned by it when the worker runs as root, world-writable
// otherwise. Symlinks are changed, never followed.
func ShareTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, UID, GID); err == nil || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chmod(p, 0o777)
	})
}
