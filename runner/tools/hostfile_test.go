package tools_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/tools"
)

// A FIFO planted in the tree used to block read_file, edit_file and
// apply_patch in open(2), past cancellation; every host-side read and
// write now refuses a non-regular file at once.
func TestNonRegularFilesAreRefused(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"a.go": "package a\n", "sub/b.go": "package b\n"})
	for _, p := range []string{"pipe", "sub/pipe", ".gitignore", "sub/.gitignore"} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("pipe", filepath.Join(dir, "to-pipe")); err != nil {
		t.Fatal(err)
	}
	// Made without bind(2), whose path may not be longer than 107 bytes.
	if err := syscall.Mknod(filepath.Join(dir, "sock"), syscall.S_IFSOCK|0o644, 0); err != nil {
		t.Fatal(err)
	}
	s := newSet(t, dir, testPolicy(), nil)
	cases := []struct {
		name, tool string
		args       map[string]string
		want       string // in the output; the outcome is a failure
	}{
		{"read a FIFO", "read_file", map[string]string{"path": "pipe"}, "pipe is a named pipe (FIFO), not a regular file"},
		{"read a FIFO through a symlink", "read_file", map[string]string{"path": "to-pipe"}, "named pipe (FIFO)"},
		{"read a socket", "read_file", map[string]string{"path": "sock"}, "sock is a socket"},
		{"edit a FIFO", "edit_file", map[string]string{"path": "sub/pipe", "old_string": "a", "new_string": "b"}, "sub/pipe is a named pipe"},
		{"patch a FIFO", "apply_patch", map[string]string{"patch": "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n"}, "pipe is a named pipe"},
		{"patch creating over a FIFO", "apply_patch", map[string]string{"patch": "--- /dev/null\n+++ b/sub/pipe\n@@ -0,0 +1 @@\n+b\n"}, "sub/pipe, which already exists"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := callWithin(t, s, c.tool, args(t, c.args))
			if r.Outcome == tools.OK || !strings.Contains(r.Output, c.want) {
				t.Errorf("%s %q, want a refusal with %q", r.Outcome, r.Output, c.want)
			}
		})
	}
	// Tree-wide reads skip what they cannot read, .gitignore FIFOs included.
	for _, call := range []struct{ tool, args string }{
		{"search", `{"pattern":"package"}`}, {"list_files", `{}`}, {"find_symbol", `{"name":"a"}`},
	} {
		if r := callWithin(t, s, call.tool, call.args); r.Outcome != tools.OK {
			t.Errorf("%s: %s %q", call.tool, r.Outcome, r.Output)
		}
	}
	if r := callWithin(t, s, "search", `{"pattern":"package"}`); !strings.Contains(r.Output, "a.go") || !strings.Contains(r.Output, "sub/b.go") {
		t.Errorf("search over a tree with FIFOs: %q", r.Output)
	}
}

// callWithin runs a tool call that must not block: a call still running
// after a few seconds fails the test instead of hanging it.
func callWithin(t *testing.T, s *tools.Set, tool, arguments string) tools.Result {
	t.Helper()
	done := make(chan tools.Result, 1)
	go func() { done <- s.Call(t.Context(), tool, arguments) }()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s %s still running after 10s", tool, arguments)
		return tools.Result{}
	}
}

// Host reads end with the task's context.
func TestReadsEndWithTheContext(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"a.go": strings.Repeat("package a\n", 1000)})
	s := newSet(t, dir, testPolicy(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, call := range []struct{ tool, args string }{
		{"read_file", `{"path":"a.go"}`}, {"edit_file", `{"path":"a.go","old_string":"package a\n","new_string":"x"}`},
		{"search", `{"pattern":"package"}`},
	} {
		r := s.Call(ctx, call.tool, call.args)
		if r.Outcome == tools.OK || !strings.Contains(r.Output, context.Canceled.Error()) {
			t.Errorf("%s after cancellation: %s %q", call.tool, r.Outcome, r.Output)
		}
	}
	if got := read(t, dir, "a.go"); got != strings.Repeat("package a\n", 1000) {
		t.Error("a cancelled edit changed the file")
	}
}

// A write through a symlink is judged on where it lands, not on the name
// the model gave.
func TestWritesThroughSymlinksAreJudgedWhereTheyLand(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{".github/workflows/ci.yml": "on: push\n", "src/a.go": "package a\n", "keys/id.txt": "x\n"})
	for link, target := range map[string]string{"docs": ".github", "safe": "src", "src/up": "..", "out": "/etc", "loop": "loop", "idlink": "keys/id.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := newSet(t, dir, testPolicy(), nil)
	blocked := []struct{ tool, args, want string }{
		{"write_file", `{"path":"docs/workflows/x.yml","content":"on: push\n"}`, `docs/workflows/x.yml leads through a symlink to .github/workflows/x.yml, and .github/workflows/x.yml matches the denied path`},
		{"edit_file", `{"path":"src/up/docs/workflows/ci.yml","old_string":"push","new_string":"pull_request_target"}`, "leads through a symlink to .github/workflows/ci.yml"},
		{"apply_patch", "{\"patch\":\"--- /dev/null\\n+++ b/safe/up/.GitHub/workflows/y.yml\\n@@ -0,0 +1 @@\\n+x\\n\"}", "denied path"},
	}
	for _, c := range blocked {
		r := s.Call(t.Context(), c.tool, c.args)
		if r.Outcome != tools.BlockedWrite || !strings.Contains(r.Output, c.want) {
			t.Errorf("%s %s: %s %q, want blocked with %q", c.tool, c.args, r.Outcome, r.Output, c.want)
		}
	}
	for _, c := range []struct{ tool, args, want string }{
		{"write_file", `{"path":"out/x","content":"x"}`, "outside the repository"},
		{"write_file", `{"path":"loop/x","content":"x"}`, "more than 40 symlinks"},
	} {
		if r := s.Call(t.Context(), c.tool, c.args); r.Outcome == tools.OK || !strings.Contains(r.Output, c.want) {
			t.Errorf("%s %s: %s %q, want a failure with %q", c.tool, c.args, r.Outcome, r.Output, c.want)
		}
	}
	if got := read(t, dir, ".github/workflows/ci.yml"); got != "on: push\n" {
		t.Errorf("ci.yml = %q, changed through a symlink", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".github/workflows/x.yml")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a workflow was written through a symlink")
	}
	// An allowed write through a link lands in, and is counted as, the real file.
	r := s.Call(t.Context(), "edit_file", `{"path":"safe/a.go","old_string":"package a","new_string":"package b"}`)
	if r.Outcome != tools.OK || read(t, dir, "src/a.go") != "package b\n" || !slices.Equal(s.Touched(), []string{"src/a.go"}) {
		t.Errorf("edit through safe/: %s %q, src/a.go %q, touched %v", r.Outcome, r.Output, read(t, dir, "src/a.go"), s.Touched())
	}
	// Deleting a symlink removes the link, not its target.
	r = s.Call(t.Context(), "apply_patch", "{\"patch\":\"diff --git a/idlink b/idlink\\ndeleted file mode 100644\\n--- a/idlink\\n+++ /dev/null\\n@@ -1 +0,0 @@\\n-x\\n\"}")
	if _, err := os.Lstat(filepath.Join(dir, "idlink")); r.Outcome != tools.OK || !errors.Is(err, os.ErrNotExist) || read(t, dir, "keys/id.txt") != "x\n" {
		t.Errorf("delete of a symlink: %s %q; the link must go and its target stay", r.Outcome, r.Output)
	}
}
