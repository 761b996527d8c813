package workspace_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

// A repository may itself contain symlinks that lead out; host-side access
// through Root refuses to follow them.
func TestRootRefusesSymlinksOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/links", map[string]string{
		"ok.txt":   "fine\n",
		"passwd":   "->/etc/passwd",
		"up":       "->../../",
		"ok-link":  "->ok.txt",
		"dir/deep": "->../../../../../../etc",
	})
	w := e.checkout(t, "octo/links", "main")
	r := w.Root()
	if b, err := r.ReadFile("ok-link"); err != nil || string(b) != "fine\n" {
		t.Fatalf("a link inside the tree: %q %v", b, err)
	}
	for _, name := range []string{"passwd", "up/etc/passwd", "up", "dir/deep/passwd"} {
		if b, err := r.ReadFile(name); err == nil {
			t.Errorf("read %s through Root: %.40q", name, b)
		}
		if err := r.WriteFile(name, []byte("x"), 0o644); err == nil {
			t.Errorf("wrote %s through Root", name)
		}
	}
	// Unchanged links that lead out are the repository's own business; the
	// gate judges only what the change adds.
	if _, err := w.Gate(t.Context(), allowAll); err != nil {
		t.Errorf("gate on an unchanged tree: %v", err)
	}
}

// hostile fills dir the way a malicious sandbox could: a .git with config,
// hooks and drivers that would touch marker if git ran any of them, and a
// .gitattributes that selects those drivers for every file.
func hostile(t *testing.T, dir, marker string) {
	t.Helper()
	touch := "touch " + marker
	hook := "#!/bin/sh\n" + touch + "\n"
	files := map[string]string{
		".git/HEAD":        "ref: refs/heads/main\n",
		".git/objects/.k":  "",
		".git/refs/.k":     "",
		".git/config":      "[core]\n\tfsmonitor = " + touch + "\n\thooksPath = .git/hooks\n\tsshCommand = " + touch + "\n[filter \"x\"]\n\tclean = " + touch + "\n\tsmudge = " + touch + "\n\tprocess = " + touch + "\n\trequired\n[diff \"x\"]\n\ttextconv = " + touch + "\n\tcommand = " + touch + "\n[merge \"x\"]\n\tdriver = " + touch + "\n",
		".gitattributes":   "* filter=x diff=x merge=x\n",
		".gitconfig":       "[core]\n\tfsmonitor = " + touch + "\n",
		"hooks/pre-commit": hook,
		"code.go":          "package code\n",
	}
	for _, h := range []string{"pre-commit", "post-commit", "commit-msg", "pre-push", "reference-transaction", "post-index-change", "fsmonitor-watchman", "pre-auto-gc"} {
		files[".git/hooks/"+h+"*"] = hook
	}
	ostest.WriteTree(t, dir, files)
}

// What the sandbox writes into the tree never makes the host run anything:
// diff, gate, commit and push all succeed and the marker never appears.
func TestHostileTreeRunsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/hostile", map[string]string{"README.md": "hi\n"})
	marker := filepath.Join(t.TempDir(), "MARKER")
	w := e.checkout(t, "octo/hostile", "main")
	hostile(t, w.Dir(), marker)

	diff, err := w.Diff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(diff, "a/.git/") {
		t.Errorf("the tree's .git is part of the diff:\n%s", diff)
	}
	if _, err := w.Gate(t.Context(), allowAll); err != nil {
		t.Fatal(err)
	}
	sha, err := w.Commit(t.Context(), workspace.CommitOptions{Message: "m", Author: author})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(t.Context(), e.remote("octo/hostile"), "agent/4-x", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("host git ran something from the tree: %v", err)
	}
	// The files were committed as bytes, not through a filter.
	if got, _ := e.srv.File(t, "octo/hostile", sha, "code.go"); got != "package code\n" {
		t.Errorf("code.go pushed as %q", got)
	}
	if _, ok := e.srv.File(t, "octo/hostile", sha, ".git/config"); ok {
		t.Error("the tree's .git was pushed")
	}

	// A resumed task applies the saved diff to a fresh checkout, which
	// writes the hostile .gitattributes: the apply runs nothing either.
	w2 := e.checkout(t, "octo/hostile", "main")
	if err := w2.Apply(t.Context(), diff); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("apply ran something from the diff: %v", err)
	}
}

// A nested repository is refused by name before git looks at it.
func TestNestedRepositoryRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/nested", map[string]string{"README.md": "hi\n"})
	marker := filepath.Join(t.TempDir(), "MARKER")
	w := e.checkout(t, "octo/nested", "main")
	hostile(t, filepath.Join(w.Dir(), "sub"), marker)
	ostest.WriteTree(t, w.Dir(), map[string]string{"gitfile/.git": "gitdir: " + w.Dir() + "/sub/.git\n"})

	_, err := w.Diff(t.Context())
	if app.ErrorCode(err) != app.EPolicy || !strings.Contains(err.Error(), "nested git repository") {
		t.Fatalf("diff of a tree with nested repositories: %v", err)
	}
	if _, err := w.Gate(t.Context(), allowAll); app.ErrorCode(err) != app.EPolicy {
		t.Fatalf("gate: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("host git ran something from the nested repository: %v", err)
	}
	// Removing them makes the tree acceptable again.
	mustDo(t, w.Root().RemoveAll("sub/.git"))
	mustDo(t, w.Root().RemoveAll("gitfile"))
	if _, err := w.Gate(t.Context(), allowAll); err != nil {
		t.Fatal(err)
	}
}
