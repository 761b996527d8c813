package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

// What the sandbox leaves in the tree that git cannot or must not record
// is a refusal the model and the user can read, found before git hashes
// anything: never an internal error that gets the task retried.
func TestTreeScanRefusesWhatGitCannotRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{MaxFileSize: 1 << 20, MaxNewFiles: 50})
	e.repo(t, "octo/scan", map[string]string{"a.go": "package a\n", "big.bin": strings.Repeat("x", 2<<20)})
	fifo := func(t *testing.T, dir string) { mustDo(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644)) }
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string
	}{
		{"a FIFO", fifo, "pipe is a named pipe (FIFO); only regular files, directories and symlinks can be committed"},
		{"a socket", func(t *testing.T, dir string) {
			// As a server that ended leaves it; made without bind(2), whose
			// path may not be longer than 107 bytes.
			mustDo(t, syscall.Mknod(filepath.Join(dir, "sock"), syscall.S_IFSOCK|0o644, 0))
		}, "sock is a socket"},
		{"a .GIT directory", func(t *testing.T, dir string) {
			ostest.WriteTree(t, dir, map[string]string{".GIT/x": "x\n", "sub/.Git/config": "x\n"})
		}, ".GIT is named like .git, which git refuses to record; sub/.Git is named like .git"},
		{"a name git refuses", func(t *testing.T, dir string) {
			ostest.WriteTree(t, dir, map[string]string{"git~1": "x\n"})
		}, "git cannot record the work tree: invalid path 'git~1'"},
		{"a 512 MiB file", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "huge.bin"))
			mustDo(t, err)
			mustDo(t, f.Truncate(512<<20)) // sparse: no disk used, but git would hash it all
			mustDo(t, f.Close())
		}, "huge.bin is 536870912 bytes, over the limit of 1048576 bytes per file"},
		{"too many new files", func(t *testing.T, dir string) {
			files := map[string]string{}
			for i := range 51 {
				files[filepath.Join("gen", strings.Repeat("f", 1+i%5)+string(rune('a'+i/5)))] = "x"
			}
			ostest.WriteTree(t, dir, files)
		}, "the work tree holds 51 files more than the base, over the limit of 50"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := e.checkout(t, "octo/scan", "main")
			tc.change(t, w.Dir())
			_, err := w.Diff(t.Context())
			if app.ErrorCode(err) != app.EPolicy || !strings.Contains(app.ErrorMessage(err), tc.want) {
				t.Fatalf("diff: %v, want a policy refusal with %q", err, tc.want)
			}
			if _, err := w.Gate(t.Context(), allowAll); app.ErrorCode(err) != app.EPolicy {
				t.Errorf("gate: %v, want the same refusal", err)
			}
		})
	}
	// A base file over the cap, unchanged, is no problem.
	w := e.checkout(t, "octo/scan", "main")
	mustDo(t, os.WriteFile(filepath.Join(w.Dir(), "a.go"), []byte("package b\n"), 0o644))
	if _, err := w.Gate(t.Context(), allowAll); err != nil {
		t.Errorf("gate with an unchanged large base file: %v", err)
	}
}
