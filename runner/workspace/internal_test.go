package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/agentbot/agentbot/runner/workspace/workspacetest"
)

func testWorkspace(t *testing.T, files map[string]string) *Workspace {
	t.Helper()
	srv := workspacetest.NewServer(t, "tok")
	srv.CreateRepo(t, "o/r", func(dir string) {
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	m := NewManager(t.TempDir(), Options{})
	t.Cleanup(func() { m.Close() })
	w, err := m.Checkout(t.Context(), CheckoutOptions{Repo: "o/r", Remote: Remote{URL: srv.RepoURL("o/r"), Token: "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// core.attributesFile cannot stop a .gitattributes in the tree; the
// info/attributes of the host's git dir does. Proved here with the drivers
// defined in the host's own configuration, the worst case: even then no
// filter, textconv or end-of-line conversion runs.
func TestInTreeAttributesAreNeutral(t *testing.T) {
	t.Parallel()
	w := testWorkspace(t, map[string]string{"a.txt": "a\n"})
	marker := filepath.Join(t.TempDir(), "MARKER")
	drivers := map[string]string{
		"filter.x.clean":    "touch " + marker + "; cat",
		"filter.x.smudge":   "touch " + marker + "; cat",
		"filter.x.required": "true",
		"diff.x.textconv":   "touch " + marker + "; cat",
		"diff.x.command":    "touch " + marker,
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(drivers))}
	i := 0
	for k, v := range drivers {
		env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(i)+"="+k, "GIT_CONFIG_VALUE_"+strconv.Itoa(i)+"="+v)
		i++
	}
	attrs := "* filter=x diff=x text eol=crlf ident working-tree-encoding=UTF-16\n"
	content := "$Id$\nline\n"
	for name, body := range map[string]string{".gitattributes": attrs, "a.txt": content, "b.txt": content} {
		if err := w.root.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	out, err := w.git(t.Context(), gitCall{env: env, args: []string{"check-attr", "--all", "--", "a.txt", "b.txt"}})
	if err != nil || len(out) != 0 {
		t.Fatalf("attributes in effect despite info/attributes: %q %v", out, err)
	}
	if _, err := w.git(t.Context(), gitCall{env: env, args: []string{"add", "--all"}}); err != nil {
		t.Fatal(err)
	}
	blob, err := w.git(t.Context(), gitCall{args: []string{"cat-file", "blob", ":b.txt"}})
	if err != nil || string(blob) != content {
		t.Errorf("b.txt staged as %q, want its bytes unchanged (%v)", blob, err)
	}
	// A plain diff, without --no-textconv and --no-ext-diff.
	if _, err := w.git(t.Context(), gitCall{env: env, args: []string{"diff", "--cached", w.base}}); err != nil {
		t.Fatal(err)
	}
	// Checking the base out again rewrites a.txt through the smudge side.
	if _, err := w.git(t.Context(), gitCall{env: env, args: []string{"read-tree", "--reset", "-u", w.base}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a driver selected by the tree's .gitattributes ran: %v", err)
	}
}

func TestResolveLink(t *testing.T) {
	t.Parallel()
	links := map[string]string{
		"top":      ".",
		"src/up":   "..",
		"out":      "../x",
		"loop1":    "loop2",
		"loop2":    "loop1",
		"a/b/deep": "../../src",
	}
	tests := []struct {
		name, target string
		want         string // "" = refused
	}{
		{"l", "src/a.go", "src/a.go"},
		{"src/l", "../README.md", "README.md"},
		{"src/l", "./a/./b/", "src/a/b"},
		{"l", "/etc/passwd", ""},
		{"l", "..", ""},
		{"src/l", "../../x", ""},
		{"l", "top/src", "src"},
		{"l", "top/../x", ""},
		{"l", "src/up/src/up/x", "x"},
		{"l", "src/up/..", ""},
		{"l", "out", ""},
		{"l", "loop1", ""},
		{"l", "a/b/deep/../README", "README"},
		{"l", "", ""},
	}
	for _, tc := range tests {
		hops := 0
		got, ok := resolveLink(parent(tc.name), tc.target, links, &hops)
		if !ok {
			got = ""
		}
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s -> %q resolves to %q (%v), want %q", tc.name, tc.target, got, ok, tc.want)
		}
	}
}

// A gitlink can only come from a nested repository, which snapshot refuses
// first; the gate's own rule is checked on the diff it would produce.
func TestGateRefusesGitlinks(t *testing.T) {
	t.Parallel()
	w := &Workspace{m: NewManager(t.TempDir(), Options{})}
	diff := "diff --git a/mod b/mod\nnew file mode 160000\nindex 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\n--- /dev/null\n+++ b/mod\n@@ -0,0 +1 @@\n+Subproject commit 1111111111111111111111111111111111111111\n" +
		"diff --git a/old b/old\ndeleted file mode 160000\nindex 2222222222222222222222222222222222222222..0000000000000000000000000000000000000000\n--- a/old\n+++ /dev/null\n@@ -1 +0,0 @@\n-Subproject commit 2222222222222222222222222222222222222222\n"
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]treeEntry{"mod": {mode: modeGitlink, oid: strings.Repeat("1", 40)}}
	for _, f := range files {
		v := w.checkContent(f, entries, nil, nil)
		if len(v) != 1 || !strings.Contains(v[0], "is a submodule") {
			t.Errorf("%s%s: %q", f.OldName, f.NewName, v)
		}
	}
}

// A worker sweeping orphans (every worker does, periodically, over a data
// dir other workers share) never takes a work tree being made for a dead
// worker's: before lockedName renamed locked files into place, a sweep
// that found a lock file just created, not yet locked, took it, and the
// maker failed with EWOULDBLOCK.
func TestRemoveOrphansWhileWorkTreesAreMade(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir(), Options{})
	t.Cleanup(func() { m.Close() })
	const makers, each = 4, 500
	errs := make(chan error, makers)
	for range makers {
		go func() {
			for range each {
				lock, dir, err := lockedName(filepath.Join(m.dataDir, "work"), "task")
				if err != nil {
					errs <- err
					return
				}
				if err := os.Mkdir(dir, 0o700); err != nil {
					errs <- err
					return
				}
				if err := os.RemoveAll(dir); err != nil {
					errs <- err
					return
				}
				unlock(lock)
			}
			errs <- nil
		}()
	}
	swept := 0
	for done := 0; done < makers; {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("making a work tree during a sweep: %v", err)
			}
			done++
		default:
			n, err := m.RemoveOrphans()
			if err != nil {
				t.Fatal(err)
			}
			swept += n
		}
	}
	if swept != 0 {
		t.Errorf("the sweeps removed %d live work trees", swept)
	}
	if left, _ := filepath.Glob(filepath.Join(m.dataDir, "work", "*")); len(left) != 0 {
		t.Errorf("left behind: %q", left)
	}
}
