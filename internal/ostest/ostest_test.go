package ostest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	WriteTree(t, dir, map[string]string{"a/b.txt": "b\n", "run.sh*": "#!/bin/sh\n", "link": "->a/b.txt"})
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b.txt")); err != nil || string(b) != "b\n" {
		t.Errorf("a/b.txt = %q, %v; want b", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: %v, %v; want mode 0755", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "a/b.txt" {
		t.Errorf("link -> %q, %v; want a/b.txt", target, err)
	}
}

func TestSyncBuffer(t *testing.T) {
	t.Parallel()
	var b SyncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			b.Write([]byte("x"))
		}
	}()
	_ = b.String() // read while written: the race detector would see it
	<-done
	if n := len(b.String()); n != 100 {
		t.Errorf("%d bytes; want 100", n)
	}
}

// The module's root is found from a package's directory, not from the
// source path a -trimpath build leaves relative.
func TestModuleRoot(t *testing.T) {
	t.Parallel()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module github.com/agentbot/agentbot\n") {
		t.Fatalf("ModuleRoot() = %s, whose go.mod is %.40q (%v); want agentbot's", root, mod, err)
	}
	if wd, _ := os.Getwd(); wd != filepath.Join(root, "internal", "ostest") {
		t.Errorf("the test runs in %s; want it under the root %s", wd, root)
	}
}
