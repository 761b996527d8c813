package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestShareTreeNeverFollowsSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg", "a.go"), []byte("package pkg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}

	if err := ShareTree(dir); err != nil {
		t.Fatal(err)
	}

	after, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != before.Mode() || owner(after) != owner(before) {
		t.Errorf("the symlink's target changed: %v %d → %v %d", before.Mode(), owner(before), after.Mode(), owner(after))
	}
	for _, p := range []string{dir, filepath.Join(dir, "pkg"), filepath.Join(dir, "pkg", "a.go")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if owner(fi) != UID && fi.Mode().Perm() != 0o777 {
			t.Errorf("%s is neither the sandbox user's (owner %d) nor world-writable (%v)", p, owner(fi), fi.Mode())
		}
	}
}

func owner(fi os.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }
