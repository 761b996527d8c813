package workspace_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

// spares lists the repository's spare trees on disk.
func (e *env) spares(t *testing.T, repo string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(e.dataDir, "spares", filepath.FromSlash(repo), "spare-*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if !strings.HasSuffix(d, ".lock") {
			out = append(out, d)
		}
	}
	return out
}

// oneSpare waits for the repository's pool to be filled and returns its
// only spare tree.
func (e *env) oneSpare(t *testing.T, repo string) string {
	t.Helper()
	e.m.WaitSpares()
	s := e.spares(t, repo)
	if len(s) != 1 {
		t.Fatalf("spare trees of %s: %q, want one", repo, s)
	}
	return s[0]
}

// assertTaken fails unless w's tree is the spare's tree, renamed.
func assertTaken(t *testing.T, w *workspace.Workspace, spareTree os.FileInfo) {
	t.Helper()
	fi, err := os.Stat(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(fi, spareTree) {
		t.Fatal("the checkout did not take the spare tree")
	}
}

func statTree(t *testing.T, spare string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(filepath.Join(spare, "tree"))
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// treeFiles describes every entry of a work tree: file contents and
// executable bits, symlink targets, directories.
func treeFiles(t *testing.T, w *workspace.Workspace) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := fs.WalkDir(w.Root().FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		switch {
		case d.IsDir():
			files[p] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := w.Root().Readlink(p)
			if err != nil {
				return err
			}
			files[p] = "-> " + target
		default:
			fi, err := d.Info()
			if err != nil {
				return err
			}
			b, err := w.Root().ReadFile(p)
			if err != nil {
				return err
			}
			files[p] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A spare tree is at the default branch's head; a task at an older commit
// that takes it gets the same tree, base and index as a checkout from
// scratch: every difference in content, mode, symlink and directory undone.
func TestSpareCheckoutMatchesPlain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	old := e.repo(t, "octo/pool", map[string]string{
		"README.md":    "hello\n",
		"src/a.go":     "package src\n",
		"src/gone.go":  "package src // gone later\n",
		"run.sh*":      "#!/bin/sh\n",
		"plain.sh":     "#!/bin/sh\n",
		"link":         "->README.md",
		"dir/only.txt": "only in the old commit\n",
		".gitignore":   "*.log\n",
	})
	head := e.srv.Commit(t, "octo/pool", func(dir string) {
		ostest.WriteTree(t, dir, map[string]string{
			"README.md":     "hello, world\n",
			"src/new.go":    "package src // new\n",
			"new/deep/x.go": "package deep\n",
			"plain.sh*":     "#!/bin/sh\n",
		})
		for _, p := range []string{"src/gone.go", "link", "dir/only.txt"} {
			mustDo(t, os.Remove(filepath.Join(dir, p)))
		}
		mustDo(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o644))
		mustDo(t, os.Symlink("src", filepath.Join(dir, "link")))
	})

	first := e.checkout(t, "octo/pool", "main")
	if first.Base() != head {
		t.Fatalf("base %s, want the head %s", first.Base(), head)
	}
	spare := statTree(t, e.oneSpare(t, "octo/pool"))

	w := e.checkout(t, "octo/pool", old)
	assertTaken(t, w, spare)
	if w.Base() != old || w.Head() != old {
		t.Fatalf("pooled checkout at base %s head %s, want %s", w.Base(), w.Head(), old)
	}

	plainEnv := &env{srv: e.srv, dataDir: t.TempDir()}
	plainEnv.m = workspace.NewManager(plainEnv.dataDir, workspace.Options{})
	plain := plainEnv.checkout(t, "octo/pool", old)
	got, want := treeFiles(t, w), treeFiles(t, plain)
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s: pooled %q, plain %q", p, got[p], v)
		}
	}
	for p, v := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s is only in the pooled tree: %q", p, v)
		}
	}
	if len(plainEnv.spares(t, "octo/pool")) != 0 {
		t.Error("a Manager without spare trees made one")
	}

	// The index is the base's: a change shows as itself, nothing more.
	mustDo(t, w.Root().WriteFile("src/a.go", []byte("package src\n\nvar x = 1\n"), 0o644))
	diff, err := w.Diff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(diff, "diff --git a/src/a.go b/src/a.go\n") || strings.Count(diff, "diff --git") != 1 {
		t.Errorf("diff of one changed file against the old base:\n%s", diff)
	}
	assertNoToken(t, e.dataDir, e.logs.String())
}

// What a task did to its tree never reaches another task: Close removes
// the tree, and the next task gets a fresh spare.
func TestModifiedTreeIsNeverReused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/reuse", map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	e.checkout(t, "octo/reuse", "main")

	w1, err := e.m.Checkout(t.Context(), workspace.CheckoutOptions{Repo: "octo/reuse", Remote: e.remote("octo/reuse"), Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, w1.Root().WriteFile("a.txt", []byte("changed by the task\n"), 0o644))
	mustDo(t, w1.Root().WriteFile("left.txt", []byte("left by the task\n"), 0o644))
	mustDo(t, w1.Root().Remove("b.txt"))
	mustDo(t, w1.Close())

	spare := statTree(t, e.oneSpare(t, "octo/reuse"))
	w2 := e.checkout(t, "octo/reuse", "main")
	assertTaken(t, w2, spare)
	want := map[string]string{"a.txt": "-rw-r--r-- a\n", "b.txt": "-rw-r--r-- b\n"}
	if got := treeFiles(t, w2); len(got) != len(want) || got["a.txt"] != want["a.txt"] || got["b.txt"] != want["b.txt"] {
		t.Fatalf("the next task's tree: %q, want %q", got, want)
	}
}

// A spare tree that is not exactly its commit is discarded, whatever is
// wrong with it, and the task gets a checkout from scratch.
func TestUncleanSpareIsDiscarded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/unclean", map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n", ".gitignore": "*.log\n"})
	e.checkout(t, "octo/unclean", "main")

	tamper := map[string]func(tree string){
		"untracked file": func(tree string) { ostest.WriteTree(t, tree, map[string]string{"sub/extra.go": "package x\n"}) },
		"ignored file":   func(tree string) { ostest.WriteTree(t, tree, map[string]string{"debug.log": "x\n"}) },
		"modified file":  func(tree string) { ostest.WriteTree(t, tree, map[string]string{"a.txt": "b\n"}) },
		"deleted file":   func(tree string) { mustDo(t, os.Remove(filepath.Join(tree, "sub/b.txt"))) },
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			spare := e.oneSpare(t, "octo/unclean")
			f(filepath.Join(spare, "tree"))
			before := strings.Count(e.logs.String(), "spare work tree discarded")
			w := e.checkout(t, "octo/unclean", "main")
			if got := strings.Count(e.logs.String(), "spare work tree discarded"); got != before+1 {
				t.Errorf("the spare was not discarded:\n%s", e.logs.String())
			}
			if _, err := os.Stat(spare); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the discarded spare is still on disk: %v", err)
			}
			got := treeFiles(t, w)
			want := map[string]string{"a.txt": "-rw-r--r-- a\n", "sub": "dir", "sub/b.txt": "-rw-r--r-- b\n", ".gitignore": "-rw-r--r-- *.log\n"}
			if len(got) != len(want) {
				t.Errorf("tree %q, want %q", got, want)
			}
			for p, v := range want {
				if got[p] != v {
					t.Errorf("%s: %q, want %q", p, got[p], v)
				}
			}
		})
	}
}

// Taking a spare starts making another, up to SpareTrees per repository.
func TestSparesRefill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{SpareTrees: 2})
	e.repo(t, "octo/refill", map[string]string{"a.txt": "a\n"})
	e.checkout(t, "octo/refill", "main")
	e.m.WaitSpares()
	before := e.spares(t, "octo/refill")
	if len(before) != 2 {
		t.Fatalf("spares after the first checkout: %q, want two", before)
	}
	for range 3 {
		w := e.checkout(t, "octo/refill", "main")
		mustDo(t, w.Close())
		e.m.WaitSpares()
		after := e.spares(t, "octo/refill")
		if len(after) != 2 {
			t.Fatalf("spares after a take: %q, want two", after)
		}
		if kept := strings.Count(strings.Join(before, " "), after[0]) + strings.Count(strings.Join(before, " "), after[1]); kept != 1 {
			t.Fatalf("spares %q after taking one of %q: want one taken and one new", after, before)
		}
		before = after
	}
}

// Tasks starting at once on the same repository never share a tree.
func TestConcurrentSpareCheckouts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{SpareTrees: 2})
	old := e.repo(t, "octo/rush", map[string]string{"a.txt": "old\n"})
	head := e.srv.Commit(t, "octo/rush", func(dir string) { ostest.WriteTree(t, dir, map[string]string{"a.txt": "new\n"}) })
	e.checkout(t, "octo/rush", "main")
	e.m.WaitSpares()

	const n = 6
	ws := make([]*workspace.Workspace, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			base := []string{old, head}[i%2]
			ws[i], errs[i] = e.m.Checkout(ctx, workspace.CheckoutOptions{Repo: "octo/rush", Remote: e.remote("octo/rush"), Base: base})
		})
	}
	wg.Wait()
	dirs := map[string]bool{}
	for i, w := range ws {
		if errs[i] != nil {
			t.Fatalf("checkout %d: %v", i, errs[i])
		}
		t.Cleanup(func() { w.Close() })
		if dirs[w.Dir()] {
			t.Fatalf("two tasks got %s", w.Dir())
		}
		dirs[w.Dir()] = true
		// Each task writes its own file: a shared tree would show another's.
		mustDo(t, w.Root().WriteFile("mine.txt", []byte(w.Dir()), 0o644))
	}
	for i, w := range ws {
		want := map[bool]string{true: "old\n", false: "new\n"}[i%2 == 0]
		if b, err := w.Root().ReadFile("a.txt"); err != nil || string(b) != want {
			t.Errorf("checkout %d at %s has a.txt %q (%v), want %q", i, w.Base(), b, err, want)
		}
		if b, err := w.Root().ReadFile("mine.txt"); err != nil || string(b) != w.Dir() {
			t.Errorf("checkout %d shares its tree: %q %v", i, b, err)
		}
		diff, err := w.Diff(t.Context())
		if err != nil || strings.Count(diff, "diff --git") != 1 {
			t.Errorf("checkout %d: diff %v\n%s", i, err, diff)
		}
	}
	e.m.WaitSpares()
	if s := e.spares(t, "octo/rush"); len(s) != 2 {
		t.Errorf("spares once the rush is over: %q, want two", s)
	}
}

// Close removes the spare trees; a closed Manager still checks out, and
// makes no more.
func TestCloseRemovesSpares(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/close", map[string]string{"a.txt": "a\n"})
	e.repo(t, "octo/close2", map[string]string{"a.txt": "a\n"})
	w := e.checkout(t, "octo/close", "main")
	e.checkout(t, "octo/close2", "main")
	e.oneSpare(t, "octo/close")
	e.oneSpare(t, "octo/close2")
	mustDo(t, e.m.Close())
	for _, repo := range []string{"octo/close", "octo/close2"} {
		if s := e.spares(t, repo); len(s) != 0 {
			t.Errorf("spares of %s after Close: %q", repo, s)
		}
	}
	if _, err := w.Diff(t.Context()); err != nil {
		t.Errorf("Close harmed a task's workspace: %v", err)
	}
	e.checkout(t, "octo/close", "main")
	e.m.WaitSpares()
	if s := e.spares(t, "octo/close"); len(s) != 0 {
		t.Errorf("a closed Manager made spares: %q", s)
	}
	locks, _ := filepath.Glob(filepath.Join(e.dataDir, "spares", "*", "*", "*.lock"))
	if len(locks) != 0 {
		t.Errorf("locks left behind: %q", locks)
	}
}

// A repository unused for the TTL loses its spare trees.
func TestIdleSparesExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{SpareTTL: time.Millisecond})
	e.repo(t, "octo/idle", map[string]string{"a.txt": "a\n"})
	e.checkout(t, "octo/idle", "main")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		e.m.WaitSpares()
		if len(e.spares(t, "octo/idle")) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("spares of an idle repository still there: %q", e.spares(t, "octo/idle"))
		case <-time.After(10 * time.Millisecond):
		}
	}
}
