package envcache

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// tryLock opens (creating, unless the directory is gone) the lock file at
// path and flocks it without waiting.
// makingPrefix names a directory of newLockedDir's before its lock is
// held; abandonedAfter is when sweep takes one for its maker's remains.
const (
	makingPrefix   = ".making-"
	abandonedAfter = 10 * time.Minute
)

// newLockedDir makes parent/name with its lock file held exclusively. It is
// made and locked under a name sweep leaves alone, then renamed into place,
// so that no process opening the cache meanwhile finds it unlocked and
// sweeps it away.
func newLockedDir(parent, name string) (string, *os.File, error) {
	tmp, err := os.MkdirTemp(parent, makingPrefix)
	if err != nil {
		return "", nil, err
	}
	lock, err := tryLock(filepath.Join(tmp, "lock"), syscall.LOCK_EX)
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	dir := filepath.Join(parent, name)
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return dir, lock, nil
}

func tryLock(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockWait flocks f exclusively, waiting until ctx ends. On an error f
// is closed: at once, or once the flock it waits for returns, which only
// its holder's unlock ends.
func lockWait(ctx context.Context, f *os.File) error {
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return ctx.Err()
	}
}

func sameFile(f *os.File, fi fs.FileInfo) bool {
	st, err := f.Stat()
	return err == nil && os.SameFile(st, fi)
}

func readEntry(dir string) (Entry, error) {
	var e Entry
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return e, fmt.Errorf("read environment: %w", err)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("read environment %s: %w", filepath.Base(dir), err)
	}
	return e, nil
}

// writeEntry replaces dir's meta.json atomically.
func writeEntry(dir string, e Entry) error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "meta.json."+rand.Text())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write environment %s: %w", e.Key, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "meta.json")); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write environment %s: %w", e.Key, err)
	}
	return nil
}

// shareDir creates dir for the sandbox user: owned by it when the worker
// runs as root, world-writable otherwise.
func shareDir(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Lchown(dir, sandbox.UID, sandbox.GID); err != nil {
		mode = 0o777
	}
	return os.Chmod(dir, mode)
}

// removeAll removes dir, or only its contents when keepDir. Directories
// the sandbox user made read-only (Go's module cache) are made writable
// first, which only the owner or root may do.
func removeAll(dir string, keepDir bool) error {
	if err := os.RemoveAll(dir); err != nil {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if keepDir {
		return os.MkdirAll(dir, 0o755)
	}
	return nil
}

// diskUsage is the bytes the files under dir take on disk.
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += fi.Size()
		}
		return nil
	})
	return total, err
}
