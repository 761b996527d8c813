package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/agentbot/agentbot/app"
)

// ChangedTests are the tests a change adds or changes, which a
// reproduction runs on the base commit without the rest of the change.
type ChangedTests struct {
	// Files are the test files and test fixtures the change adds or
	// modifies (by the conventions TamperingOf uses), as they are after
	// the change. Deleted files are not among them.
	Files []string
	// GoTests names the Go test functions the change defines or edits:
	// those defined on added lines, and those a changed hunk lies in by
	// its header (git names the enclosing func in the hunk header).
	GoTests []string
}

// ChangedTestsOf lists the tests a diff made by Diff adds or changes.
func ChangedTestsOf(diff string) (ChangedTests, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		return ChangedTests{}, fmt.Errorf("parse the diff for its tests: %w", err)
	}
	var ct ChangedTests
	for _, f := range files {
		if f.IsDelete || !slices.Contains(sensitiveKinds(f.NewName, nil), app.TamperTest) {
			continue
		}
		ct.Files = append(ct.Files, f.NewName)
		if language(f.NewName) != langGo {
			continue
		}
		for _, fr := range f.TextFragments {
			if fr.LinesAdded == 0 {
				continue
			}
			ct.GoTests = addName(ct.GoTests, testName(langGo, fr.Comment))
			for _, l := range fr.Lines {
				if l.Op == gitdiff.OpAdd {
					ct.GoTests = addName(ct.GoTests, testName(langGo, l.Line))
				}
			}
		}
	}
	return ct, nil
}

// addName appends name when it is a test's and not yet listed.
func addName(names []string, name string) []string {
	if name == "" || slices.Contains(names, name) {
		return names
	}
	return append(names, name)
}

// Overlay returns a tree object holding the base commit's files, except
// that paths are as they are in tree (a tree GateReport.Tree names): the
// base with only the new and changed tests, for a FreshTree to check out.
// It uses an index of its own, so the task's index, which Diff and Gate
// use, is untouched.
func (w *Workspace) Overlay(ctx context.Context, tree string, paths []string) (string, error) {
	dir, err := os.MkdirTemp(w.dir, "overlay-")
	if err != nil {
		return "", fmt.Errorf("overlay tests on the base: %w", err)
	}
	defer os.RemoveAll(dir)
	// Paths are names, never patterns: a test may be called "a*_test.go".
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index"), "GIT_LITERAL_PATHSPECS=1"}
	w.mu.Lock()
	defer w.mu.Unlock()
	run := func(stdin string, args ...string) (string, error) {
		out, err := w.m.git.run(ctx, gitCall{gitDir: w.gitDir, env: env, stdin: strings.NewReader(stdin), args: args})
		return string(out), err
	}
	if _, err := run("", "read-tree", "--end-of-options", w.base); err != nil {
		return "", fmt.Errorf("overlay tests on the base: read %s: %w", w.base, err)
	}
	if len(paths) > 0 {
		// ls-tree's lines are one of the forms update-index --index-info reads.
		entries, err := run("", append([]string{"ls-tree", "-z", "--full-tree", "--end-of-options", tree, "--"}, paths...)...)
		if err != nil {
			return "", fmt.Errorf("overlay tests on the base: list them in %s: %w", tree, err)
		}
		if _, err := run(entries, "update-index", "-z", "--index-info"); err != nil {
			return "", fmt.Errorf("overlay tests on the base: %w", err)
		}
	}
	out, err := run("", "write-tree")
	if err != nil {
		return "", fmt.Errorf("overlay tests on the base: write tree: %w", err)
	}
	return strings.TrimSpace(out), nil
}
