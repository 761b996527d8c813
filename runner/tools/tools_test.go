package tools_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/tools"
	"github.com/agentbot/agentbot/runner/tools/toolstest"
)

// tree writes files (path -> content) into a temp dir and returns it.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	ostest.WriteTree(t, dir, files)
	return dir
}

func testPolicy() policy.Policy {
	return policy.Policy{
		Checks: []policy.Check{{Name: "test", Run: "test -f ok"}},
		Paths:  policy.Paths{Allow: []string{"**"}, Deny: []string{".github/workflows/**", "**/*.pem"}},
		Limits: policy.Limits{DiffLines: 20, FilesChanged: 3},
		Tools: policy.Tools{
			Write: policy.ToolRule{Policy: policy.ApprovalAuto},
			Shell: policy.ToolRule{Policy: policy.ApprovalAllowlist, Allow: []string{"echo hello", "ls *"}},
		},
	}
}

// commands records what reached the runner.
type commands struct{ ran []string }

func newSet(t testing.TB, dir string, p policy.Policy, log *commands) *tools.Set {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	r := toolstest.HostRunner{Dir: dir}
	if log != nil {
		r.OnRun = func(c sandbox.Cmd) { log.ran = append(log.ran, c.Shell) }
	}
	s, err := tools.New(tools.Config{Root: root, Policy: p, Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func args(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func read(t testing.TB, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

var base = map[string]string{
	".gitignore":      "build/\n*.log\n",
	"go.mod":          "module example.com/m\n",
	"main.go":         "package main\n\nfunc main() {\n\tprintln(Greeting())\n}\n",
	"greet.go":        "package main\n\n// Greeting says hello.\nfunc Greeting() string { return \"hello\" }\n\ntype Server struct{}\n\nfunc (s *Server) Handle() {}\n",
	"dup.txt":         "x\nsame\nsame\n",
	"build/out.txt":   "ignored\n",
	"debug.log":       "ignored\n",
	"web/app.ts":      "export function render(x: number) {\n  return x\n}\nexport const limit = 3\n",
	"py/tool.py":      "class Loader:\n    def load(self):\n        pass\n",
	"docs/README.md":  "# docs\n",
	"secrets/key.pem": "-----\n",
}

func TestReadTools(t *testing.T) {
	dir := tree(t, base)
	s := newSet(t, dir, testPolicy(), nil)
	cases := []struct {
		tool, args string
		outcome    tools.Outcome
		want       []string
		notWant    []string
	}{
		{"list_files", `{}`, tools.OK, []string{"main.go", "web/app.ts", "docs/"}, []string{"build", "debug.log", ".git/"}},
		{"list_files", `{"glob":"**/*.ts"}`, tools.OK, []string{"web/app.ts"}, []string{"main.go"}},
		{"list_files", `{"path":"../"}`, tools.Failed, []string{"leaves the repository"}, nil},
		{"read_file", `{"path":"main.go","start_line":3,"end_line":4}`, tools.OK, []string{"     3\tfunc main() {", "     4\t\tprintln"}, []string{"package main"}},
		{"read_file", `{"path":"nope.go"}`, tools.Failed, []string{"nope.go does not exist"}, nil},
		{"read_file", `{"path":".git/config"}`, tools.Failed, []string{"inside .git"}, nil},
		{"search", `{"pattern":"Greet\\w+\\(","glob":"**/*.go"}`, tools.OK, []string{"main.go:4: \tprintln(Greeting())", "greet.go:4: func Greeting()"}, nil},
		{"search", `{"pattern":"ignored"}`, tools.OK, []string{"no matches"}, nil},
		{"search", `{"pattern":"(","literal":false}`, tools.Invalid, []string{"not a valid Go regular expression"}, nil},
		{"search", `{"pattern":"func main","context":1}`, tools.OK, []string{"main.go-2- ", "main.go:3: func main() {", "main.go-4- "}, nil},
		{"find_symbol", `{"name":"Greeting"}`, tools.OK, []string{"greet.go:4: func Greeting()"}, []string{"main.go"}},
		{"find_symbol", `{"name":"Server.Handle"}`, tools.OK, []string{"greet.go:8: func (s *Server) Handle() {}"}, nil},
		{"find_symbol", `{"name":"Server"}`, tools.OK, []string{"greet.go:6: type Server struct{}"}, nil},
		{"find_symbol", `{"name":"render"}`, tools.OK, []string{"web/app.ts:1: export function render"}, nil},
		{"find_symbol", `{"name":"limit"}`, tools.OK, []string{"web/app.ts:4: export const limit = 3"}, nil},
		{"find_symbol", `{"name":"Loader.load"}`, tools.OK, []string{"py/tool.py:2: def load(self):"}, nil},
		{"find_symbol", `{"name":"no such"}`, tools.Invalid, []string{"not an identifier"}, nil},
	}
	for _, c := range cases {
		t.Run(c.tool+c.args, func(t *testing.T) {
			r := s.Call(context.Background(), c.tool, c.args)
			if r.Outcome != c.outcome {
				t.Fatalf("outcome %s, want %s; output:\n%s", r.Outcome, c.outcome, r.Output)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, r.Output)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(r.Output, w) {
					t.Errorf("output has %q:\n%s", w, r.Output)
				}
			}
		})
	}
}

// TestBadCallsAreResults: malformed JSON, unknown tools and invalid
// arguments are errors the model reads, and change nothing.
func TestBadCallsAreResults(t *testing.T) {
	dir := tree(t, base)
	s := newSet(t, dir, testPolicy(), nil)
	cases := []struct{ tool, args, want string }{
		{"read_file", `{"path": "main.go"`, "not valid JSON"},
		{"delete_everything", `{}`, `unknown tool "delete_everything"`},
		{"read_file", `{"path":"main.go","lines":3}`, `unknown field "lines"`},
		{"read_file", `{"path":7}`, "cannot unmarshal number"},
		{"read_file", `{}`, "path is required"},
		{"edit_file", `{"path":"main.go","old_string":"main"}`, "new_string is required"},
		{"read_file", `{"path":"main.go"} {}`, "not valid JSON"},
		{"finish", `{"summary":"  "}`, "summary is required"},
		{"finish", `{"summary":"done","title":"` + strings.Repeat("t", tools.MaxTitle+1) + `"}`, "at most 72"},
		{"finish", `{"summary":"done","title":"Fix it\nand more"}`, "one line"},
	}
	for _, c := range cases {
		r := s.Call(context.Background(), c.tool, c.args)
		if r.Outcome != tools.Invalid || !strings.Contains(r.Output, c.want) {
			t.Errorf("%s %s: %s %q, want invalid with %q", c.tool, c.args, r.Outcome, r.Output, c.want)
		}
	}
	if got := read(t, dir, "main.go"); got != base["main.go"] {
		t.Errorf("main.go changed: %q", got)
	}
}

func TestEditFile(t *testing.T) {
	dir := tree(t, base)
	s := newSet(t, dir, testPolicy(), nil)
	ctx := context.Background()

	r := s.Call(ctx, "edit_file", args(t, map[string]string{"path": "dup.txt", "old_string": "same", "new_string": "other"}))
	if r.Outcome != tools.Failed || !strings.Contains(r.Output, "occurs 2 times in dup.txt, at lines 2, 3") {
		t.Errorf("several matches: %s %q", r.Outcome, r.Output)
	}
	r = s.Call(ctx, "edit_file", args(t, map[string]string{"path": "main.go", "old_string": "absent", "new_string": "x"}))
	if r.Outcome != tools.Failed || !strings.Contains(r.Output, "not found in main.go") {
		t.Errorf("no match: %s %q", r.Outcome, r.Output)
	}
	r = s.Call(ctx, "edit_file", args(t, map[string]string{"path": "greet.go", "old_string": `"hello"`, "new_string": `"hi"`}))
	if r.Outcome != tools.OK || !r.Changed {
		t.Fatalf("edit: %s %q", r.Outcome, r.Output)
	}
	if got := read(t, dir, "greet.go"); !strings.Contains(got, `return "hi"`) {
		t.Errorf("greet.go = %q", got)
	}
	if got := s.Touched(); len(got) != 1 || got[0] != "greet.go" {
		t.Errorf("Touched = %v", got)
	}
	// Reverting the edit empties the diff: the budget measures against the base.
	r = s.Call(ctx, "edit_file", args(t, map[string]string{"path": "greet.go", "old_string": `"hi"`, "new_string": `"hello"`}))
	if r.Outcome != tools.OK || len(s.Touched()) != 0 || !strings.Contains(r.Output, "0 changed lines in 0 files") {
		t.Errorf("revert: %s %q, touched %v", r.Outcome, r.Output, s.Touched())
	}
}

// TestWritePolicy: writes outside the allowed paths or over the diff budget
// are refused whole, counted as blocked, and leave the tree as it was.
func TestWritePolicy(t *testing.T) {
	big := strings.Repeat("line\n", 25)
	cases := []struct {
		name, tool string
		args       map[string]string
		want       string
	}{
		{"denied path", "write_file", map[string]string{"path": ".github/workflows/ci.yml", "content": "on: push\n"}, `matches the denied path ".github/workflows/**"`},
		{"denied glob", "edit_file", map[string]string{"path": "secrets/key.pem", "old_string": "-----", "new_string": "x"}, "denied path"},
		{"oversized file", "write_file", map[string]string{"path": "big.txt", "content": big}, "25 changed lines in 1 files, over the limit of 20 lines"},
		{"oversized patch", "apply_patch", map[string]string{"patch": "--- a/main.go\n+++ b/main.go\n@@ -1,1 +1,1 @@\n-package main\n+package app\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,25 @@\n" + strings.Repeat("+line\n", 25)}, "over the limit of 20 lines"},
		{"too many files", "apply_patch", map[string]string{"patch": "--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+a\n--- /dev/null\n+++ b/b\n@@ -0,0 +1 @@\n+b\n--- /dev/null\n+++ b/c\n@@ -0,0 +1 @@\n+c\n--- /dev/null\n+++ b/d\n@@ -0,0 +1 @@\n+d\n"}, "in 4 files, over the limit of 20 lines and 3 files"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tree(t, base)
			s := newSet(t, dir, testPolicy(), nil)
			r := s.Call(context.Background(), c.tool, args(t, c.args))
			if r.Outcome != tools.BlockedWrite || !strings.Contains(r.Output, c.want) || !strings.Contains(r.Output, "nothing was written") {
				t.Fatalf("%s %q, want blocked with %q", r.Outcome, r.Output, c.want)
			}
			for p, want := range base {
				if got := read(t, dir, p); got != want {
					t.Errorf("%s changed to %q", p, got)
				}
			}
			for _, p := range []string{"big.txt", "a", ".github/workflows/ci.yml"} {
				if got := read(t, dir, p); got != "<missing>" {
					t.Errorf("%s was written", p)
				}
			}
		})
	}
}

func TestApplyPatch(t *testing.T) {
	dir := tree(t, base)
	p := testPolicy()
	p.Limits.FilesChanged = 10
	s := newSet(t, dir, p, nil)
	patch := `diff --git a/greet.go b/greet.go
--- a/greet.go
+++ b/greet.go
@@ -3,2 +3,2 @@
 // Greeting says hello.
-func Greeting() string { return "hello" }
+func Greeting() string { return "hello, world" }
diff --git a/dup.txt b/dup.txt
deleted file mode 100644
--- a/dup.txt
+++ /dev/null
@@ -1,3 +0,0 @@
-x
-same
-same
diff --git a/docs/README.md b/docs/GUIDE.md
similarity index 100%
rename from docs/README.md
rename to docs/GUIDE.md
diff --git a/pkg/new.go b/pkg/new.go
new file mode 100644
--- /dev/null
+++ b/pkg/new.go
@@ -0,0 +1 @@
+package pkg
`
	r := s.Call(context.Background(), "apply_patch", args(t, map[string]string{"patch": patch}))
	if r.Outcome != tools.OK {
		t.Fatalf("%s %q", r.Outcome, r.Output)
	}
	want := map[string]string{
		"greet.go":       strings.Replace(base["greet.go"], `"hello"`, `"hello, world"`, 1),
		"dup.txt":        "<missing>",
		"docs/README.md": "<missing>",
		"docs/GUIDE.md":  base["docs/README.md"],
		"pkg/new.go":     "package pkg\n",
	}
	for p, w := range want {
		if got := read(t, dir, p); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}

	// A hunk that does not apply leaves every file of the patch untouched.
	bad := "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package app\n--- a/greet.go\n+++ b/greet.go\n@@ -1 +1 @@\n-package nothere\n+package x\n"
	r = s.Call(context.Background(), "apply_patch", args(t, map[string]string{"patch": bad}))
	if r.Outcome != tools.Failed || !strings.Contains(r.Output, "does not apply to greet.go") {
		t.Errorf("bad patch: %s %q", r.Outcome, r.Output)
	}
	if got := read(t, dir, "main.go"); got != base["main.go"] {
		t.Errorf("main.go changed by a failed patch: %q", got)
	}
}

func TestRunCommandPolicy(t *testing.T) {
	dir := tree(t, base)
	var log commands
	s := newSet(t, dir, testPolicy(), &log)
	ctx := context.Background()
	cases := []struct {
		cmd     string
		outcome tools.Outcome
		want    string
	}{
		{"echo hello", tools.OK, "hello"},
		{"ls web", tools.OK, "app.ts"},
		{"ls web; cat secrets/key.pem", tools.BlockedCommand, "not allowed"},
		{"curl http://example.com", tools.BlockedCommand, "not allowed"},
		{"ls $(cat go.mod)", tools.BlockedCommand, "not allowed"},
	}
	for _, c := range cases {
		r := s.Call(ctx, "run_command", args(t, map[string]string{"command": c.cmd}))
		if r.Outcome != c.outcome || !strings.Contains(r.Output, c.want) {
			t.Errorf("%q: %s %q, want %s with %q", c.cmd, r.Outcome, r.Output, c.outcome, c.want)
		}
	}
	if strings.Join(log.ran, "|") != "echo hello|ls web" {
		t.Errorf("runner ran %q; refused commands must never reach it", log.ran)
	}

	off := testPolicy()
	off.Tools.Shell.Policy = policy.ApprovalOff
	s = newSet(t, dir, off, nil)
	for _, d := range s.Defs() {
		if d.Name == "run_command" {
			t.Error("run_command offered although shell is off")
		}
	}
	if r := s.Call(ctx, "run_command", `{"command":"echo hello"}`); r.Outcome != tools.Invalid {
		t.Errorf("off: %s %q", r.Outcome, r.Output)
	}
}

func TestChecksAndFinish(t *testing.T) {
	dir := tree(t, base)
	p := testPolicy()
	p.Checks = []policy.Check{
		{Name: "build", Run: "true"},
		{Name: "test", Run: "test -f ok || { echo 'FAIL: ok missing (0.01s)'; seq 1 20000; exit 1; }"},
		{Name: "never", Run: "echo must not run; exit 1"},
	}
	s := newSet(t, dir, p, nil)
	ctx := context.Background()
	r := s.Call(ctx, "finish", `{"summary":"done"}`)
	if r.Outcome != tools.Failed || r.Done || !strings.Contains(r.Output, `check "test"`) || !strings.Contains(r.Output, "FAIL: ok missing") {
		t.Fatalf("finish on red: %s done=%v %q", r.Outcome, r.Done, r.Output)
	}
	if len(r.Checks) != 2 || r.Checks[0].Name != "build" || !r.Checks[0].Passed || r.Checks[1].Passed {
		t.Errorf("checks = %+v", r.Checks)
	}
	if !strings.Contains(r.Output, "bytes cut") || !strings.Contains(r.Output, "\n20000\n") {
		t.Errorf("long output not capped head and tail: %d bytes", len(r.Output))
	}
	sig := r.Checks[1].Signature
	again := s.Call(ctx, "run_checks", `{}`)
	if again.Checks[1].Signature != sig || sig == "" {
		t.Errorf("same failure, signatures %q and %q", sig, again.Checks[1].Signature)
	}

	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.Checks = p.Checks[:2]
	s = newSet(t, dir, p, nil)
	r = s.Call(ctx, "finish", `{"summary":"fixed it","title":" Create the ok file "}`)
	if r.Outcome != tools.OK || !r.Done || r.Summary != "fixed it" || r.Title != "Create the ok file" {
		t.Errorf("finish on green: %s %q, title %q", r.Outcome, r.Output, r.Title)
	}
}

func TestSchemasAreJSON(t *testing.T) {
	s := newSet(t, tree(t, nil), testPolicy(), nil)
	defs := s.Defs()
	if len(defs) != 10 {
		t.Errorf("%d tools offered", len(defs))
	}
	for _, d := range defs {
		var v struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Additional *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Parameters, &v); err != nil || v.Type != "object" || v.Additional == nil || *v.Additional {
			t.Errorf("%s: schema %s: %v", d.Name, d.Parameters, err)
		}
	}
}

// TestResumeBudget: a Set rebuilt from saved originals measures the diff
// against the base, not against the tree it finds.
func TestResumeBudget(t *testing.T) {
	dir := tree(t, base)
	s := newSet(t, dir, testPolicy(), nil)
	content := strings.Repeat("x\n", 15)
	if r := s.Call(context.Background(), "write_file", args(t, map[string]string{"path": "a.txt", "content": content})); r.Outcome != tools.OK {
		t.Fatal(r.Output)
	}
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	s2, err := tools.New(tools.Config{Root: root, Policy: testPolicy(), Runner: toolstest.HostRunner{Dir: dir}, Originals: s.Originals()})
	if err != nil {
		t.Fatal(err)
	}
	r := s2.Call(context.Background(), "write_file", args(t, map[string]string{"path": "b.txt", "content": strings.Repeat("y\n", 6)}))
	if r.Outcome != tools.BlockedWrite || !strings.Contains(r.Output, "21 changed lines in 2 files") {
		t.Errorf("%s %q", r.Outcome, r.Output)
	}
}

// TestNewFilesBelongToTheTreeOwner: what the host creates in a tree the
// sandbox user owns stays writable by that user.
func TestNewFilesBelongToTheTreeOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may give files away")
	}
	dir := tree(t, base)
	const uid = 65532
	if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	}); err != nil {
		t.Fatal(err)
	}
	s := newSet(t, dir, testPolicy(), nil)
	if r := s.Call(context.Background(), "write_file", `{"path":"a/b/new.go","content":"package b\n"}`); r.Outcome != tools.OK {
		t.Fatal(r.Output)
	}
	for _, p := range []string{"a", "a/b", "a/b/new.go"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != uid {
			t.Errorf("%s is owned by %d:%d", p, st.Uid, st.Gid)
		}
	}
}

// TestWriteAllowlist: under a write allowlist, only the listed paths are
// writable, on top of the allowed paths.
func TestWriteAllowlist(t *testing.T) {
	dir := tree(t, base)
	p := testPolicy()
	p.Tools.Write = policy.ToolRule{Policy: policy.ApprovalAllowlist, Allow: []string{"web/**"}}
	s := newSet(t, dir, p, nil)
	ctx := context.Background()
	if r := s.Call(ctx, "write_file", `{"path":"web/new.ts","content":"export {}\n"}`); r.Outcome != tools.OK {
		t.Errorf("allowed write: %s %q", r.Outcome, r.Output)
	}
	r := s.Call(ctx, "edit_file", args(t, map[string]string{"path": "greet.go", "old_string": `"hello"`, "new_string": `"hi"`}))
	if r.Outcome != tools.BlockedWrite || !strings.Contains(r.Output, `greet.go is not in the write allowlist ["web/**"]`) {
		t.Errorf("write outside the allowlist: %s %q", r.Outcome, r.Output)
	}
	if read(t, dir, "greet.go") != base["greet.go"] {
		t.Error("greet.go changed")
	}
}

// TestSearchSeesChanges: the content cache behind search never serves a
// stale file, whether the tools or a command changed it.
func TestSearchSeesChanges(t *testing.T) {
	dir := tree(t, base)
	s := newSet(t, dir, testPolicy(), nil)
	ctx := context.Background()
	find := func(pattern string) string {
		return s.Call(ctx, "search", args(t, map[string]any{"pattern": pattern, "literal": true})).Output
	}
	if got := find(`"hello"`); !strings.Contains(got, "greet.go:4:") {
		t.Fatalf("before: %s", got)
	}
	// Same size, through the tools.
	if r := s.Call(ctx, "edit_file", args(t, map[string]string{"path": "greet.go", "old_string": `"hello"`, "new_string": `"howdy"`})); r.Outcome != tools.OK {
		t.Fatal(r.Output)
	}
	if got := find(`"howdy"`); !strings.Contains(got, "greet.go:4:") {
		t.Errorf("after an edit: %s", got)
	}
	// Behind the tools' back, as a command in the sandbox would.
	if err := os.WriteFile(filepath.Join(dir, "greet.go"), []byte("package main\n\nconst greeting = \"hey there\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := find(`"hey there"`); !strings.Contains(got, "greet.go:3:") {
		t.Errorf("after a command's write: %s", got)
	}
	if got := find(`"howdy"`); got != "no matches" {
		t.Errorf("stale content served: %s", got)
	}
}
