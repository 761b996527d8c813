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
	// Tests name the tests the changed lines lie in, found from the code
	// (see enclosingTests): Go's TestX, Python's test_x or TestX::test_y,
	// JavaScript's "suite › case", each in the file's own terms.
	Tests []string
	// GoTests are the Go test functions among Tests, when every changed
	// line of the Go test files lies in one: a check narrowed to them
	// runs all the change touches. Nil when a Go file leaves that unsure.
	GoTests []string
	// Unsure says, per file, why Tests may not be all the change touches.
	Unsure []string
}

// ChangedTestsOf lists the tests a diff made by Diff adds or changes; read
// returns the content after the change of the paths it is given.
func ChangedTestsOf(diff string, read func(paths []string) (map[string]string, error)) (ChangedTests, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		return ChangedTests{}, fmt.Errorf("parse the diff for its tests: %w", err)
	}
	var ct ChangedTests
	var code []*gitdiff.File // the changed test files in a language whose tests are named
	for _, f := range files {
		if f.IsDelete || !slices.Contains(sensitiveKinds(f.NewName, nil), app.TamperTest) {
			continue
		}
		ct.Files = append(ct.Files, f.NewName)
		// A Go file under testdata is a fixture, not a test the checks run.
		if l := language(f.NewName); l != langOther && !f.IsBinary && (l != langGo || strings.HasSuffix(f.NewName, "_test.go")) {
			code = append(code, f)
		}
	}
	if len(code) == 0 {
		return ct, nil
	}
	paths := make([]string, len(code))
	for i, f := range code {
		paths[i] = f.NewName
	}
	content, err := read(paths)
	if err != nil {
		return ChangedTests{}, fmt.Errorf("read the changed tests: %w", err)
	}
	goSure := true
	for _, f := range code {
		added, deleted := changedLines(f)
		tests, unsure := enclosingTests(f.NewName, content[f.NewName], added, deleted)
		for _, t := range tests {
			ct.Tests = addName(ct.Tests, t)
		}
		switch l := language(f.NewName); {
		case l == langGo && unsure != "":
			goSure = false
		case l == langGo:
			for _, t := range tests {
				ct.GoTests = addName(ct.GoTests, t)
			}
		case l == langPython && unsure == "":
			unsure = "its tests are found by indentation, not by parsing"
		}
		if unsure != "" {
			ct.Unsure = append(ct.Unsure, f.NewName+": "+unsure)
		}
	}
	if !goSure {
		ct.GoTests = nil
	}
	return ct, nil
}

// changedLines are the lines of f after the change that its hunks add,
// and those before which they delete lines, from 1.
func changedLines(f *gitdiff.File) (added, deleted []int) {
	for _, fr := range f.TextFragments {
		n := int(fr.NewPosition)
		if fr.NewLines == 0 {
			n++ // git numbers an empty side by the line before it
		}
		for _, l := range fr.Lines {
			switch l.Op {
			case gitdiff.OpAdd:
				added = append(added, n)
				n++
			case gitdiff.OpDelete:
				deleted = append(deleted, n)
			default:
				n++
			}
		}
	}
	return added, deleted
}

// addName appends name when it is not yet listed.
func addName(names []string, name string) []string {
	if name == "" || slices.Contains(names, name) {
		return names
	}
	return append(names, name)
}

// ChangedTests lists the tests the change gate checked adds or changes,
// reading the test files from the tree it checked.
func (w *Workspace) ChangedTests(ctx context.Context, gate GateReport) (ChangedTests, error) {
	return ChangedTestsOf(gate.Diff, func(paths []string) (map[string]string, error) {
		return w.treeFiles(ctx, gate.Tree, paths)
	})
}

// treeFiles returns the content of paths, files of tree.
func (w *Workspace) treeFiles(ctx context.Context, tree string, paths []string) (map[string]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out, err := w.git(ctx, gitCall{env: []string{"GIT_LITERAL_PATHSPECS=1"},
		args: append([]string{"ls-tree", "-z", "--full-tree", "--end-of-options", tree, "--"}, paths...)})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", tree, err)
	}
	var names, oids []string
	for entry := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, name, ok := strings.Cut(entry, "\t")
		if fields := strings.Fields(meta); ok && len(fields) == 3 && fields[1] == "blob" {
			names, oids = append(names, name), append(oids, fields[2])
		}
	}
	return w.readBlobs(ctx, names, oids)
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
