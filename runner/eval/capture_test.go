package eval

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// fakeHistory is a repository's history in memory: commits by SHA, each
// with its parents, message and files.
type fakeHistory struct {
	pull    app.MergedPull
	commits map[string]fakeCommit
	issues  map[int]app.IssueInfo
}

type fakeCommit struct {
	parents []string
	message string
	files   map[string]string
}

func (f *fakeHistory) PullRequest(_ context.Context, repo string, n int) (app.MergedPull, error) {
	if n != f.pull.Number {
		return app.MergedPull{}, app.Errorf(app.ENotFound, "Pull request %s#%d was not found.", repo, n)
	}
	return f.pull, nil
}

func (f *fakeHistory) Commit(_ context.Context, _, ref string) (app.CommitInfo, error) {
	c, ok := f.commits[ref]
	if !ok {
		return app.CommitInfo{}, app.Errorf(app.ENotFound, "no commit %s", ref)
	}
	return app.CommitInfo{SHA: ref, Message: c.message, Parents: c.parents}, nil
}

func (f *fakeHistory) Tree(_ context.Context, _, ref string) ([]app.RepoFile, error) {
	var out []app.RepoFile
	for p, content := range f.commits[ref].files {
		typ := "file"
		if strings.HasPrefix(content, "->") {
			typ = "symlink"
		}
		out = append(out, app.RepoFile{Path: p, SHA: fmt.Sprintf("%x", sha1.Sum([]byte(content))), Type: typ, Size: len(content)})
	}
	return out, nil
}

func (f *fakeHistory) File(_ context.Context, _, p, ref string) ([]byte, error) {
	content, ok := f.commits[ref].files[p]
	if !ok {
		return nil, app.Errorf(app.ENotFound, "no %s at %s", p, ref)
	}
	return []byte(content), nil
}

func (f *fakeHistory) Issue(_ context.Context, repo string, n int) (app.IssueInfo, error) {
	is, ok := f.issues[n]
	if !ok {
		return app.IssueInfo{}, app.Errorf(app.ENotFound, "%s#%d was not found.", repo, n)
	}
	return is, nil
}

const policyWithChecks = "version: 1\nchecks:\n  - {name: test, run: \"go test ./...\"}\n"

// history: base b0, a pull request of two commits (h1, h2) that fixes
// calc.go, adds calc_test.go, changes old_test.go and deletes dead.go, and
// its merge onto b1 by each method.
func history(method string) *fakeHistory {
	base := map[string]string{
		"go.mod": "module calc\n", "calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"old_test.go": "package calc\n", "dead.go": "package calc\n\nvar dead = 1", "link": "->calc.go",
		".github/agent.yml": policyWithChecks,
	}
	merged := map[string]string{}
	for k, v := range base {
		merged[k] = v
	}
	delete(merged, "dead.go")
	merged["calc.go"] = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"
	merged["calc_test.go"] = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n"
	merged["old_test.go"] = "package calc\n\n// changed\n"
	merged["docs/notes.md"] = "new\n"
	h := &fakeHistory{
		pull: app.MergedPull{Number: 7, Title: "Add adds", Body: "Fixes #3.", Merged: true, HeadSHA: "h2", Commits: 2},
		commits: map[string]fakeCommit{
			"b0": {files: base},
			"b1": {parents: []string{"b0"}, message: "unrelated", files: base},
			"h1": {parents: []string{"b0"}, message: "half", files: base},
			"h2": {parents: []string{"h1"}, message: "Add adds", files: merged},
		},
		issues: map[int]app.IssueInfo{3: {Title: "Add subtracts", Body: "1+1 is 0."}},
	}
	switch method {
	case "merge":
		h.commits["m"] = fakeCommit{parents: []string{"b1", "h2"}, message: "Merge pull request #7", files: merged}
	case "squash":
		h.commits["m"] = fakeCommit{parents: []string{"b1"}, message: "Add adds (#7)", files: merged}
	case "rebase":
		h.commits["r1"] = fakeCommit{parents: []string{"b1"}, message: "half", files: base}
		h.commits["m"] = fakeCommit{parents: []string{"r1"}, message: "Add adds", files: merged}
	}
	h.pull.MergeCommit = "m"
	return h
}

func TestCapture(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"merge", "squash", "rebase"} {
		t.Run(method, func(t *testing.T) {
			suite := t.TempDir()
			c, err := Capture(t.Context(), history(method), CaptureOptions{Repo: "octo/calc", PR: 7, Suite: suite})
			if err != nil {
				t.Fatal(err)
			}
			wantBase := "b1"
			if c.Base != wantBase || c.Merge != "m" || c.Issue != 3 || c.Dir != filepath.Join(suite, "calc-7") {
				t.Errorf("captured %+v, want base %s, merge m, issue 3", c, wantBase)
			}
			if !slices.Equal(c.HiddenTests, []string{"calc_test.go", "old_test.go"}) ||
				!slices.Equal(c.Changed, []string{"calc.go", "dead.go", "docs/notes.md"}) || !slices.Equal(c.Skipped, []string{"link"}) {
				t.Errorf("hidden %v, changed %v, skipped %v", c.HiddenTests, c.Changed, c.Skipped)
			}
			s, err := Load(suite)
			if err != nil {
				t.Fatal(err)
			}
			task := s.Tasks[0]
			if task.Title != "Add subtracts" || task.Body != "1+1 is 0." || !slices.Equal(task.Hidden, []string{"go test ./..."}) || task.Trajectory == "" {
				t.Errorf("task %+v", task)
			}
			// The snapshot is the base: the old code, the old test, no new test.
			read := func(p string) string { b, _ := os.ReadFile(filepath.Join(task.Dir, p)); return string(b) }
			if !strings.Contains(read("repo/calc.go"), "a - b") || read("repo/old_test.go") != "package calc\n" ||
				read("repo/dead.go") == "" || read("repo/calc_test.go") != "" || read("repo/link") != "" {
				t.Errorf("snapshot is not the base")
			}
			if !strings.Contains(read("hidden/calc_test.go"), "TestAdd") || !strings.Contains(read("hidden/old_test.go"), "changed") || read("hidden/calc.go") != "" {
				t.Errorf("hidden holds the merged tests and nothing else")
			}
			script, err := llmtest.Load(task.Trajectory)
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, st := range script.Steps {
				for _, call := range st.ToolCalls {
					calls = append(calls, call.Name+" "+string(call.Arguments))
				}
			}
			want := []string{
				`edit_file {"new_string":"package calc\n\nfunc Add`,
				`apply_patch {"patch":"diff --git a/dead.go b/dead.go\n`,
				`write_file {"content":"new\n","path":"docs/notes.md"}`,
				`finish {"summary":"Add adds"}`,
			}
			// The deletion applies as apply_patch applies it.
			files, _, err := gitdiff.Parse(strings.NewReader(patchOf(t, script, "apply_patch")))
			if err != nil || len(files) != 1 || !files[0].IsDelete {
				t.Fatalf("deletion patch: %v %+v", err, files)
			}
			var applied bytes.Buffer
			if err := gitdiff.Apply(&applied, strings.NewReader(read("repo/dead.go")), files[0]); err != nil || applied.Len() != 0 {
				t.Errorf("the deletion patch does not apply to the snapshot: %v, left %q", err, applied.String())
			}
			if !strings.HasPrefix(read("task.yaml"), "# Captured from octo/calc#7, merged as m onto b1.\n") || strings.Contains(read("task.yaml"), "checks:") {
				t.Errorf("task.yaml:\n%s", read("task.yaml"))
			}
			if len(calls) != len(want) || slices.ContainsFunc(calls, func(c string) bool { return !strings.HasPrefix(c, want[slices.Index(calls, c)]) }) {
				t.Errorf("trajectory calls:\n%q\nwant\n%q", calls, want)
			}
		})
	}
}

// patchOf returns the patch argument of the script's call of tool.
func patchOf(t *testing.T, s llmtest.Script, tool string) string {
	t.Helper()
	for _, st := range s.Steps {
		for _, c := range st.ToolCalls {
			if c.Name == tool {
				var args struct{ Patch string }
				if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
					t.Fatal(err)
				}
				return args.Patch
			}
		}
	}
	t.Fatalf("the script never calls %s", tool)
	return ""
}

func TestCaptureRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*fakeHistory, *CaptureOptions)
		want   string
	}{
		{"an open pull request", func(h *fakeHistory, _ *CaptureOptions) { h.pull.Merged = false }, "is not merged"},
		{"an unknown pull request", func(_ *fakeHistory, o *CaptureOptions) { o.PR = 8 }, "was not found"},
		{"no pull request number", func(_ *fakeHistory, o *CaptureOptions) { o.PR = 0 }, "want 1 or more"},
		{"a name that is a path", func(_ *fakeHistory, o *CaptureOptions) { o.Name = "../x" }, "task name"},
		{"a merge without tests", func(h *fakeHistory, _ *CaptureOptions) {
			for _, p := range []string{"calc_test.go", "old_test.go"} {
				h.commits["m"].files[p] = h.commits["b0"].files[p]
				delete(h.commits["m"].files, p)
			}
			h.commits["m"].files["old_test.go"] = "package calc\n"
		}, "adds or changes no test file"},
		{"a snapshot without checks", func(h *fakeHistory, _ *CaptureOptions) {
			delete(h.commits["b1"].files, ".github/agent.yml")
		}, "--check"},
		{"a root commit", func(h *fakeHistory, _ *CaptureOptions) { h.commits["m"] = fakeCommit{files: h.commits["m"].files} }, "has no parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := history("squash")
			suite := t.TempDir()
			opts := CaptureOptions{Repo: "octo/calc", PR: 7, Suite: suite}
			tc.change(h, &opts)
			_, err := Capture(t.Context(), h, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(suite); len(entries) != 0 {
				t.Errorf("a failed capture left %v behind", entries)
			}
		})
	}

	suite := t.TempDir()
	if _, err := Capture(t.Context(), history("squash"), CaptureOptions{Repo: "octo/calc", PR: 7, Suite: suite}); err != nil {
		t.Fatal(err)
	}
	if _, err := Capture(t.Context(), history("squash"), CaptureOptions{Repo: "octo/calc", PR: 7, Suite: suite}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second capture of the same task: %v, want a refusal", err)
	}
}

func TestCaptureWithoutClosingIssue(t *testing.T) {
	t.Parallel()
	h := history("squash")
	h.pull.Body = "Closes other/repo#3. Fixes #99."
	suite := t.TempDir()
	c, err := Capture(t.Context(), h, CaptureOptions{Repo: "octo/calc", PR: 7, Suite: suite, Name: "add", Checks: []string{"go vet ./..."}, Hidden: []string{"go test -run TestAdd ./..."}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	task := s.Tasks[0]
	if c.Issue != 0 || task.Title != "Add adds" || task.Body != h.pull.Body || task.Policy.Checks[0].Run != "go vet ./..." ||
		!slices.Equal(task.Hidden, []string{"go test -run TestAdd ./..."}) {
		t.Errorf("captured %+v as %+v", c, task)
	}
}
