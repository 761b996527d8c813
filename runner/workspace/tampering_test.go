package workspace_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

// A change that weakens the tests instead of fixing the code passes its
// checks; the gate names every such file, the tests it removes and the
// skips it adds, so that the pull request shows it.
func TestGateReportsTampering(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/tamper", map[string]string{
		"calc.go":           "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go":      "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\nfunc TestMoved(t *testing.T) {}\n",
		"tests/test_api.py": "import pytest\n\ndef test_get():\n    assert True\n\ndef test_post():\n    assert True\n",
		"web/app.spec.ts":   "describe('app', () => {\n  it('renders', () => {});\n});\n",
		"scripts/check.sh*": "#!/bin/sh\ngo test ./...\n",
		"Makefile":          "test:\n\tgo test ./...\n",
		"docs/readme.md":    "docs\n",
	})
	w := e.checkout(t, "octo/tamper", "main")
	ostest.WriteTree(t, w.Dir(), map[string]string{
		// TestAdd removed; TestMoved reformatted, not removed.
		"calc_test.go":      "package calc\n\nimport \"testing\"\n\nfunc TestMoved(t *testing.T) {\n\tt.Skip(\"flaky\")\n}\n",
		"tests/test_api.py": "import pytest\n\n@pytest.mark.skip(reason=\"later\")\ndef test_get():\n    assert True\n",
		"web/app.spec.ts":   "describe('app', () => {\n  it.skip('renders', () => {});\n  xit('new', () => {});\n});\n",
		"scripts/check.sh*": "#!/bin/sh\nexit 0\n",
		"Makefile":          "test:\n\ttrue\n",
		"CODEOWNERS":        "* @someone\n",
		"docs/readme.md":    "more docs\n",
		"lint/rules.toml":   "strict = false\n",
	})
	policy := policy.Policy{Paths: policy.Paths{Allow: []string{"**", "CODEOWNERS"}},
		Checks: []policy.Check{{Name: "test", Run: "sh ./scripts/check.sh && make test"}, {Name: "lint", Run: "ruff lint/"}}}
	rep, err := w.Gate(t.Context(), policy)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]app.TamperedFile{}
	for _, f := range rep.Tampering.Files {
		got[f.Path] = f
	}
	if _, ok := got["docs/readme.md"]; ok {
		t.Error("docs/readme.md is reported, but it is neither a test, a check input nor CI")
	}
	want := map[string][]app.TamperKind{
		"calc_test.go":      {app.TamperTest},
		"tests/test_api.py": {app.TamperTest},
		"web/app.spec.ts":   {app.TamperTest},
		"scripts/check.sh":  {app.TamperCheck},
		"Makefile":          {app.TamperCheck},
		"CODEOWNERS":        {app.TamperCI},
	}
	for p, kinds := range want {
		f, ok := got[p]
		if !ok {
			t.Errorf("%s is not in the report %+v", p, rep.Tampering)
			continue
		}
		if !slices.Equal(f.Kinds, kinds) {
			t.Errorf("%s kinds = %v, want %v", p, f.Kinds, kinds)
		}
		if f.Added == 0 && f.Removed == 0 {
			t.Errorf("%s: no lines counted", p)
		}
	}
	if f := got["calc_test.go"]; !slices.Equal(f.RemovedTests, []string{"TestAdd"}) || len(f.AddedSkips) != 1 {
		t.Errorf("calc_test.go: removed %q, skips %q; want TestAdd and one t.Skip", f.RemovedTests, f.AddedSkips)
	}
	if f := got["tests/test_api.py"]; !slices.Equal(f.RemovedTests, []string{"test_post"}) ||
		!slices.Equal(f.AddedSkips, []string{`@pytest.mark.skip(reason="later")`}) {
		t.Errorf("test_api.py: removed %q, skips %q", f.RemovedTests, f.AddedSkips)
	}
	if f := got["web/app.spec.ts"]; len(f.AddedSkips) != 2 || len(f.RemovedTests) != 0 {
		t.Errorf("app.spec.ts: removed %q, skips %q; want it.skip and xit, nothing removed", f.RemovedTests, f.AddedSkips)
	}
	md := rep.Tampering.Markdown()
	for _, want := range []string{"## Tests, checks and CI changed", "`calc_test.go`", "test removed: `TestAdd`",
		"skip added in `web/app.spec.ts`: `xit('new', () => {});`", "`scripts/check.sh` | check input"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// A deleted test file names every test it held.
func TestTamperingOfDeletedTestFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/tamperdel", map[string]string{
		"a_test.go": "package a\n\nfunc TestOne(t *testing.T) {}\n\nfunc FuzzTwo(f *testing.F) {}\n",
	})
	w := e.checkout(t, "octo/tamperdel", "main")
	mustDo(t, os.Remove(w.Dir()+"/a_test.go"))
	diff, err := w.Diff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tm, err := workspace.TamperingOf(diff, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Files) != 1 || !tm.Files[0].Deleted || !slices.Equal(tm.Files[0].RemovedTests, []string{"TestOne", "FuzzTwo"}) {
		t.Errorf("tampering = %+v, want a_test.go deleted with TestOne and FuzzTwo removed", tm)
	}
}
