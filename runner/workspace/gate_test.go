package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

func TestGate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{MaxFileSize: 1024})
	e.repo(t, "octo/gate", map[string]string{
		"src/a.go":        "package a\n",
		"docs/readme.md":  "docs\n",
		"secrets/key.pem": "-----BEGIN-----\n",
		"up":              "->../..",
		"inner":           "->src",
		"keys":            "->docs", // a directory link that denyPem2 guards
	})
	defaults, err := policy.BuildPolicy(policy.ServerConfig{})
	mustDo(t, err)
	layer, err := policy.ParsePolicy("agent.yml", []byte("paths: {allow: [\"**\", \".github/**\", \"**/CODEOWNERS\"], deny: []}\n"))
	mustDo(t, err)
	reallowed, err := policy.BuildPolicy(policy.ServerConfig{}, layer)
	mustDo(t, err)
	denyPem2 := policy.Policy{Paths: policy.Paths{Allow: []string{"**"}, Deny: []string{"keys/*.pem", "vault/*.key"}}}
	srcOnly := policy.Policy{Paths: policy.Paths{Allow: []string{"src/**"}}}
	denyPem := policy.Policy{Paths: policy.Paths{Allow: []string{"**"}, Deny: []string{"**/*.pem", "**/.env*"}}}
	withLimits := func(files, lines int) policy.Policy {
		p := allowAll
		p.Limits = policy.Limits{FilesChanged: files, DiffLines: lines}
		return p
	}
	many := map[string]string{}
	for i := range 25 {
		many[fmt.Sprintf("docs/%02d.md", i)] = "x\n"
	}
	write := func(files map[string]string) func(t *testing.T, w *workspace.Workspace) {
		return func(t *testing.T, w *workspace.Workspace) { ostest.WriteTree(t, w.Dir(), files) }
	}
	tests := []struct {
		name   string
		policy policy.Policy
		change func(t *testing.T, w *workspace.Workspace)
		want   []string // substrings of the refusal; none: the gate passes
	}{
		{"allowed path", srcOnly, write(map[string]string{"src/a.go": "package a\n\nvar x = 1\n"}), nil},
		{"denied path", denyPem, write(map[string]string{"config/.env": "KEY=1\n"}),
			[]string{`config/.env matches the denied path "**/.env*"`}},
		{"outside the allowed paths", srcOnly, write(map[string]string{"docs/readme.md": "more docs\n"}),
			[]string{"docs/readme.md is outside the allowed paths"}},
		{"rename out of the allowed paths", srcOnly, func(t *testing.T, w *workspace.Workspace) {
			mustDo(t, w.Root().Rename("src/a.go", "docs/a.go"))
		}, []string{"docs/a.go is outside the allowed paths"}},
		{"rename of a denied file", denyPem, func(t *testing.T, w *workspace.Workspace) {
			mustDo(t, w.Root().Rename("secrets/key.pem", "src/key.txt"))
		}, []string{`secrets/key.pem matches the denied path "**/*.pem"`}},
		{"too many files", withLimits(2, 0), write(map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"}),
			[]string{"3 files changed, over the limit of 2"}},
		{"too many lines", withLimits(0, 5), write(map[string]string{"n.txt": strings.Repeat("line\n", 10)}),
			[]string{"10 lines changed, over the limit of 5"}},
		{"lines within the limit", withLimits(1, 10), write(map[string]string{"n.txt": strings.Repeat("line\n", 10)}), nil},
		{"workflow under **", allowAll, write(map[string]string{".github/workflows/ci.yml": "on: push\n"}),
			[]string{".github/workflows/ci.yml may not be changed because it is GitHub configuration"}},
		{"default: workflow in other case", defaults, write(map[string]string{".GitHub/Workflows/x.yml": "on: push\n"}),
			[]string{`.GitHub/Workflows/x.yml matches the denied path ".github/**"`}},
		{"default: key in upper case", defaults, write(map[string]string{"KEY.PEM": "k\n", "conf/.ENV": "A=1\n"}),
			[]string{`KEY.PEM matches the denied path "**/*.pem"`, `conf/.ENV matches the denied path "**/.env*"`}},
		{"default: CODEOWNERS anywhere", defaults, write(map[string]string{"docs/CODEOWNERS": "* @x\n"}),
			[]string{`docs/CODEOWNERS matches the denied path "**/CODEOWNERS"`}},
		{"default: the policy file", defaults, write(map[string]string{".github/agent.yml": "version: 1\n"}),
			[]string{`.github/agent.yml matches the denied path ".github/**"`}},
		{"CODEOWNERS without deny", allowAll, write(map[string]string{"CODEOWNERS": "* @x\n"}),
			[]string{"CODEOWNERS may not be changed because it decides who must review"}},
		{"re-allowed explicitly", reallowed, write(map[string]string{".github/workflows/ci.yml": "on: push\n", "CODEOWNERS": "* @x\n"}), nil},
		{"re-allowed .github/** leaves the policy file", reallowed, write(map[string]string{".github/agent.yml": "version: 1\n"}),
			[]string{".github/agent.yml may not be changed because it is agentbot's policy"}},
		{"symlink at a denied directory", defaults, write(map[string]string{"ci/workflows/x.yml": "on: push\n", ".github": "->ci"}),
			[]string{`.github matches the denied path ".github/**"`}},
		{"symlink above a denied path", denyPem2, write(map[string]string{"vault": "->docs"}),
			[]string{`vault is a symlink above the denied path "vault/*.key"`}},
		{"change through a denied symlink", denyPem2, write(map[string]string{"docs/id.pem": "k\n"}),
			[]string{`docs/id.pem is reached through the symlink keys, which stands at the denied path "keys/*.pem"`}},
		{"change beside a denied symlink", denyPem2, write(map[string]string{"src/b.go": "package a\n"}), nil},
		{"workflow allowed explicitly", policy.Policy{Paths: policy.Paths{Allow: []string{".github/workflows/**", "**"}}},
			write(map[string]string{".github/workflows/ci.yml": "on: push\n"}), nil},
		{"submodule configuration", allowAll, write(map[string]string{".gitmodules": "[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x\n"}),
			[]string{".gitmodules may not change"}},
		{"nested repository", allowAll, write(map[string]string{"vendor/x/.git/HEAD": "ref: refs/heads/main\n", "vendor/x/f.go": "package x\n"}),
			[]string{"vendor/x/.git is a nested git repository"}},
		{"absolute symlink", allowAll, write(map[string]string{"link": "->/etc/passwd"}),
			[]string{`link is a symlink to "/etc/passwd", which leads outside the repository`}},
		{"symlink up and out", allowAll, write(map[string]string{"src/link": "->../../etc/passwd"}),
			[]string{`src/link is a symlink to "../../etc/passwd"`}},
		{"symlink through a link that leaves", allowAll, write(map[string]string{"link": "->up/etc/passwd"}),
			[]string{`link is a symlink to "up/etc/passwd"`}},
		{"symlink whose .. follows a link", allowAll, write(map[string]string{"d": "->.", "e": "->d/../x"}),
			[]string{`e is a symlink to "d/../x"`}},
		{"symlinks inside the tree", allowAll, write(map[string]string{"l1": "->src/a.go", "src/l2": "->../inner/a.go", "l3": "->inner/../docs"}), nil},
		{"file over the size cap", allowAll, write(map[string]string{"big.bin": strings.Repeat("\x00x", 1000)}),
			[]string{"big.bin is 2000 bytes, over the limit of 1024 bytes per file"}},
		{"unusual file names", srcOnly, write(map[string]string{"src/naïve \"quoted\"\tname.go": "package a\n", "src/-dash": "x\n"}), nil},
		{"unusual file name outside", srcOnly, write(map[string]string{"dö cs/ü\\.md": "x\n"}),
			[]string{`dö cs/ü\.md is outside the allowed paths`}},
		{"executable file", allowAll, write(map[string]string{"run.sh*": "#!/bin/sh\n"}), nil},
		{"a long refusal is cut", srcOnly, write(many), []string{"docs/19.md is outside", "; and 5 more"}},
		{"several violations at once", srcOnly, write(map[string]string{"x.md": "x\n", "link": "->/etc"}),
			[]string{"x.md is outside", "link is outside", `link is a symlink to "/etc"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := e.checkout(t, "octo/gate", "main")
			tc.change(t, w)
			rep, err := w.Gate(t.Context(), tc.policy)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("gate refused: %v", err)
				}
				if rep.Tree == "" || rep.FilesChanged == 0 {
					t.Fatalf("gate report %+v", rep)
				}
				return
			}
			if app.ErrorCode(err) != app.EPolicy {
				t.Fatalf("gate: %v, want a policy error", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(app.ErrorMessage(err), want) {
					t.Errorf("refusal %q lacks %q", app.ErrorMessage(err), want)
				}
			}
			if _, err := w.Commit(t.Context(), workspace.CommitOptions{Message: "m", Author: author}); err == nil {
				t.Error("commit ran after a refused gate")
			}
		})
	}
}

// The gate checks the tree at the time it runs; Commit commits that tree,
// not whatever the sandbox wrote afterwards.
func TestCommitTakesTheGatedTree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/race", map[string]string{"a.txt": "a\n"})
	w := e.checkout(t, "octo/race", "main")
	mustDo(t, w.Root().WriteFile("a.txt", []byte("checked\n"), 0o644))
	if _, err := w.Gate(t.Context(), allowAll); err != nil {
		t.Fatal(err)
	}
	// Written after the gate, as a still-running container could.
	mustDo(t, os.WriteFile(filepath.Join(w.Dir(), "a.txt"), []byte("unchecked\n"), 0o644))
	mustDo(t, os.Symlink("/etc/passwd", filepath.Join(w.Dir(), "late")))
	sha, err := w.Commit(t.Context(), workspace.CommitOptions{Message: "m", Author: author})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(t.Context(), e.remote("octo/race"), "agent/3-race", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.srv.File(t, "octo/race", sha, "a.txt"); got != "checked\n" {
		t.Errorf("pushed a.txt = %q, want the gated content", got)
	}
	if _, ok := e.srv.File(t, "octo/race", sha, "late"); ok {
		t.Error("a symlink written after the gate was pushed")
	}
}
