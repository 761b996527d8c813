package workspace_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
)

// pipeBase is a Go test file in which an assertion added at the start of
// TestPipeEmptyArray gets a hunk header naming TestFlattenRemoveNonExist,
// the last function that begins before the hunk's context.
const pipeBase = `package jq

import "testing"

func TestFlattenRemoveNonExist(t *testing.T) {
	if Flatten(nil) != nil {
		t.Fatal("nil")
	}
}

func TestPipeEmptyArray(t *testing.T) {
	got := Pipe([]any{})
	if got == nil {
		t.Fatal("nil")
	}
	if len(got) != 0 {
		t.Fatal("not empty")
	}
	_ = got
}
`

// TestChangedTestsAreTheFunctionsTheLinesLieIn reads changed tests from the
// code: each case's diff is made by git from before to after, and the
// names are those of the tests the changed lines lie in, whatever the hunk
// header says.
func TestChangedTestsAreTheFunctionsTheLinesLieIn(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file, before, after string
		header                    string // a hunk header the diff must carry, to show what it would have named
		want                      []string
		goTests                   []string
		unsure                    string
	}{
		{
			name: "go: an assertion in a test the header does not name", file: "pipe_test.go",
			before: pipeBase, after: strings.Replace(pipeBase, "\tgot := Pipe([]any{})\n", "\tgot := Pipe([]any{})\n\tif cap(got) != 0 {\n\t\tt.Fatal(\"cap\")\n\t}\n", 1),
			header: "func TestFlattenRemoveNonExist", want: []string{"TestPipeEmptyArray"}, goTests: []string{"TestPipeEmptyArray"},
		},
		{
			name: "go: a line removed inside a test", file: "pipe_test.go",
			before: pipeBase, after: strings.Replace(pipeBase, "\t_ = got\n", "", 1),
			want: []string{"TestPipeEmptyArray"}, goTests: []string{"TestPipeEmptyArray"},
		},
		{
			name: "go: a new test and an import", file: "pipe_test.go",
			before: pipeBase, after: strings.Replace(pipeBase, `import "testing"`, "import (\n\t\"testing\"\n\t\"strings\"\n)", 1) + "\nfunc TestNew(t *testing.T) { _ = strings.ToUpper }\n",
			want: []string{"TestNew"}, goTests: []string{"TestNew"},
		},
		{
			name: "go: a helper changed leaves the tests unsure", file: "pipe_test.go",
			before: pipeBase + "\nfunc helper() int { return 1 }\n", after: pipeBase + "\nfunc helper() int { return 2 }\n",
			unsure: "pipe_test.go: lines changed outside any test, in func helper, which any test may use",
		},
		{
			name: "go: a file that does not parse", file: "pipe_test.go",
			before: pipeBase, after: strings.Replace(pipeBase, "\t_ = got\n", "\t_ = got\n\tif {\n", 1),
			unsure: "pipe_test.go: it does not parse as Go",
		},
		{
			name: "go: a fixture under testdata is no test", file: "testdata/broken.go",
			before: "package x\n", after: "package x\n\nfunc {\n",
		},
		{
			name: "python: a method of a test class, below a helper the header would name", file: "tests/test_pipe.py",
			before: "import pytest\n\n\nclass TestPipe:\n    def helper(self):\n        return 1\n\n    @pytest.mark.parametrize('x', [1])\n    def test_empty(self, x):\n        assert x\n\n\ndef test_top():\n    assert True\n",
			after:  "import pytest\n\n\nclass TestPipe:\n    def helper(self):\n        return 1\n\n    @pytest.mark.parametrize('x', [1])\n    def test_empty(self, x):\n        assert x\n        assert x == 1\n\n\ndef test_top():\n    assert True\n",
			want:   []string{"TestPipe::test_empty"}, unsure: "tests/test_pipe.py: its tests are found by indentation",
		},
		{
			name: "python: a decorator added belongs to the def below", file: "tests/test_pipe.py",
			before: "def helper():\n    return 1\n\n\ndef test_a():\n    assert helper()\n",
			after:  "def helper():\n    return 1\n\n\n@pytest.mark.slow\ndef test_a():\n    assert helper()\n",
			want:   []string{"test_a"}, unsure: "tests/test_pipe.py: its tests are found by indentation",
		},
		{
			name: "javascript: an expect added in a nested it", file: "web/pipe.test.js",
			before: "describe('pipe', () => {\n  it('flattens', () => {\n    expect(flat([])).toEqual([])\n  })\n\n  it('is empty', () => {\n    const s = \"})\"\n    expect(pipe([])).toEqual([])\n  })\n})\n",
			after:  "describe('pipe', () => {\n  it('flattens', () => {\n    expect(flat([])).toEqual([])\n  })\n\n  it('is empty', () => {\n    const s = \"})\"\n    expect(pipe([])).toEqual([])\n    expect(pipe([]).length).toBe(0)\n  })\n})\n",
			want:   []string{"pipe › is empty"},
		},
		{
			name: "javascript: a hook changed is unsure", file: "web/pipe.test.js",
			before: "let x\nbeforeEach(() => {\n  x = 1\n})\ntest('one', () => {\n  expect(x).toBe(1)\n})\n",
			after:  "let x\nbeforeEach(() => {\n  x = 2\n})\ntest('one', () => {\n  expect(x).toBe(1)\n})\n",
			unsure: "web/pipe.test.js: line 3 lies in no test( or it( call",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			diff := gitDiff(t, tt.file, tt.before, tt.after)
			if tt.header != "" && !strings.Contains(diff, "@@ "+tt.header) {
				t.Fatalf("the diff's hunk header does not name %s:\n%s", tt.header, diff)
			}
			ct, err := workspace.ChangedTestsOf(diff, func(paths []string) (map[string]string, error) {
				if !slices.Equal(paths, []string{tt.file}) {
					return nil, fmt.Errorf("asked for %q", paths)
				}
				return map[string]string{tt.file: tt.after}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ct.Tests, tt.want) || !slices.Equal(ct.GoTests, tt.goTests) {
				t.Errorf("tests %q, Go tests %q; want %q and %q\n%s", ct.Tests, ct.GoTests, tt.want, tt.goTests, diff)
			}
			unsure := strings.Join(ct.Unsure, "; ")
			if (tt.unsure == "") != (unsure == "") || !strings.Contains(unsure, tt.unsure) {
				t.Errorf("unsure %q; want %q", unsure, tt.unsure)
			}
		})
	}
}

// gitDiff is git's diff of file from before to after, as Diff makes it.
func gitDiff(t *testing.T, file, before, after string) string {
	t.Helper()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a", file), filepath.Join(dir, "b", file)
	ostest.WriteTree(t, filepath.Join(dir, "a"), map[string]string{file: before})
	ostest.WriteTree(t, filepath.Join(dir, "b"), map[string]string{file: after})
	out, err := exec.Command("git", "diff", "--no-index", "--no-color", a, b).Output()
	if err == nil {
		t.Fatal("git diff found no difference")
	}
	// Paths as a repository's diff names them.
	return strings.NewReplacer("a"+a, "a/"+file, "b"+b, "b/"+file, a, "a/"+file, b, "b/"+file).Replace(string(out))
}
