package workspace_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

func TestChangedTestsOf(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "acme/tests", map[string]string{
		"sum.go":      "package sum\n\nfunc Sum(xs []int) int { return 0 }\n",
		"sum_test.go": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(nil) != 0 {\n\t\tt.Fatal(\"nil\")\n\t}\n}\n\nfunc TestOld(t *testing.T) {}\n",
		"old_test.go": "package sum\n",
		"tests/a.sh":  "exit 0\n",
	})
	w := e.checkout(t, "acme/tests", "main")
	ostest.WriteTree(t, w.Dir(), map[string]string{
		// An edit inside TestSum, and a new test after it.
		"sum_test.go":           "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(nil) != 0 {\n\t\tt.Fatal(\"nil\")\n\t}\n\tif Sum([]int{1}) != 1 {\n\t\tt.Fatal(\"one\")\n\t}\n}\n\nfunc TestOld(t *testing.T) {}\n\nfunc TestNew(t *testing.T) {}\n",
		"sum.go":                "package sum\n\nfunc Sum(xs []int) int { return len(xs) }\n",
		"testdata/in.txt":       "fixture\n",
		"tests/a.sh":            "exit 1\n",
		"pkg/helper_test.go":    "package pkg\n",
		"web/app.test.ts":       "test('x', () => {})\n",
		"docs/testing-notes.md": "not a test\n",
	})
	if err := os.Remove(filepath.Join(w.Dir(), "old_test.go")); err != nil {
		t.Fatal(err)
	}
	rep, err := w.Gate(t.Context(), allowAll)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := w.ChangedTests(t.Context(), rep)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ct.Files)
	if want := []string{"pkg/helper_test.go", "sum_test.go", "testdata/in.txt", "tests/a.sh", "web/app.test.ts"}; !slices.Equal(ct.Files, want) {
		t.Errorf("files %q; want %q", ct.Files, want)
	}
	slices.Sort(ct.GoTests)
	if want := []string{"TestNew", "TestSum"}; !slices.Equal(ct.GoTests, want) {
		t.Errorf("Go tests %q; want %q", ct.GoTests, want)
	}
	if want := []string{"TestSum", "TestNew", "x"}; !slices.Equal(ct.Tests, want) {
		t.Errorf("tests %q; want %q", ct.Tests, want)
	}
	if _, err := workspace.ChangedTestsOf("diff --git a/x b/x\n@@ -1 +1 @@\n", nil); err == nil {
		t.Error("a broken diff was read")
	}
}

func TestOverlayIsTheBaseWithOnlyTheTests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "acme/overlay", map[string]string{"sum.go": "buggy\n", "sum_test.go": "old test\n", "a*_test.go": "star\n"})
	w := e.checkout(t, "acme/overlay", "main")
	ctx := t.Context()
	ostest.WriteTree(t, w.Dir(), map[string]string{"sum.go": "fixed\n", "sum_test.go": "new test\n", "new_test.go": "added\n",
		"ab_test.go": "not named\n"})
	rep, err := w.Gate(ctx, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := w.Overlay(ctx, rep.Tree, []string{"sum_test.go", "new_test.go", "a*_test.go"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.Fresh(ctx, tree)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// "a*_test.go" names that file only, not ab_test.go.
	assertFiles(t, f.Dir(), map[string]string{"sum.go": "buggy\n", "sum_test.go": "new test\n", "new_test.go": "added\n", "a*_test.go": "star\n"})

	// The task's own index is untouched: the gate still sees the change.
	again, err := w.Gate(ctx, allowAll)
	if err != nil || again.Tree != rep.Tree {
		t.Errorf("gate after the overlay: tree %s, %v; want %s", again.Tree, err, rep.Tree)
	}
	if _, err := w.Overlay(ctx, "no-such-tree", []string{"sum_test.go"}); err == nil {
		t.Error("an overlay from a tree that does not exist was made")
	}
}
