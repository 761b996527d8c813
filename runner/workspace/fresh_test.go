package workspace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

func TestFreshTreeHoldsOnlyWhatGitRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "acme/fresh", map[string]string{"a.txt": "a\n", "gone.txt": "g\n", ".gitignore": "cache/\n", "run.sh*": "#!/bin/sh\n"})
	w := e.checkout(t, "acme/fresh", "main")
	ctx := t.Context()

	// The agent's change, and what it left beside it: an ignored file and
	// an untracked one that it removes before the gate.
	ostest.WriteTree(t, w.Dir(), map[string]string{"a.txt": "changed\n", "new/b.txt": "b\n", "cache/marker": "planted\n"})
	if err := os.Remove(filepath.Join(w.Dir(), "gone.txt")); err != nil {
		t.Fatal(err)
	}
	rep, err := w.Gate(ctx, allowAll)
	if err != nil {
		t.Fatal(err)
	}

	f, err := w.Fresh(ctx, w.Base())
	if err != nil {
		t.Fatal(err)
	}
	assertFiles(t, f.Dir(), map[string]string{"a.txt": "a\n", "gone.txt": "g\n", ".gitignore": "cache/\n", "run.sh": "#!/bin/sh\n"})
	// What a setup command would produce stays across the switch.
	ostest.WriteTree(t, f.Dir(), map[string]string{"cache/setup-output": "s\n", "a.txt": "edited by setup\n"})
	if err := f.Switch(ctx, rep.Tree); err != nil {
		t.Fatal(err)
	}
	assertFiles(t, f.Dir(), map[string]string{"a.txt": "changed\n", "new/b.txt": "b\n", ".gitignore": "cache/\n",
		"run.sh": "#!/bin/sh\n", "cache/setup-output": "s\n"})
	if fi, err := os.Stat(filepath.Join(f.Dir(), "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("run.sh lost its executable bit: %v %v", fi.Mode(), err)
	}

	if err := f.Switch(ctx, "no-such-tree"); err == nil {
		t.Error("a switch to a tree that does not exist succeeded")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.Dir()); !os.IsNotExist(err) {
		t.Errorf("the fresh tree is still there after Close: %v", err)
	}
	if _, err := w.Fresh(ctx, ""); err == nil {
		t.Error("a fresh tree of nothing was made")
	}
}

// assertFiles fails unless dir holds exactly the regular files of want.
func assertFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("files %q; want %q", got, want)
	}
	for name, content := range want {
		if got[name] != content {
			t.Errorf("%s = %q; want %q", name, got[name], content)
		}
	}
}
