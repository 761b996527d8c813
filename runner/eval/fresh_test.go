package eval

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFreshHoldsTheChangeAndNothingGitIgnores(t *testing.T) {
	t.Parallel()
	src, tmp := t.TempDir(), t.TempDir()
	for name, content := range map[string]string{"a.txt": "a\n", "gone.txt": "g\n", ".gitignore": "*.log\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := CopyTree(t.Context(), src, tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	// The change, and what a sandbox could leave beside it.
	root := tree.Root()
	for name, content := range map[string]string{"a.txt": "changed\n", "new.txt": "n\n", "planted.log": "x\n"} {
		if err := root.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := root.Remove("gone.txt"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "fresh")
	if err := tree.Fresh(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{".gitignore", "a.txt", "new.txt"}; !slices.Equal(names, want) {
		t.Errorf("fresh tree holds %q; want %q", names, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "changed\n" {
		t.Errorf("a.txt = %q; want the change", b)
	}
	if err := tree.Fresh(t.Context(), dir); err == nil {
		t.Error("Fresh wrote into a directory that exists")
	}
}
