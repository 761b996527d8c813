package workspace

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// TamperingOf lists the files of a diff made by Diff that a reviewer must
// see before trusting passing checks: tests, inputs of the checks and CI
// configuration, with the test functions the diff removes and the skips it
// adds. checks are the policy's checks, whose command lines name scripts.
func TamperingOf(diff string, checks []policy.Check) (app.Tampering, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		return app.Tampering{}, err
	}
	return tampering(files, checks), nil
}

// tampering is TamperingOf over a parsed diff.
func tampering(files []*gitdiff.File, checks []policy.Check) app.Tampering {
	named := checkInputs(checks)
	var t app.Tampering
	for _, f := range files {
		tf := app.TamperedFile{Path: f.NewName, Deleted: f.IsDelete}
		if f.IsDelete {
			tf.Path = f.OldName
		}
		for _, name := range []string{f.OldName, f.NewName} {
			if name != "" {
				tf.Kinds = appendKinds(tf.Kinds, sensitiveKinds(name, named)...)
			}
		}
		var added, removed []string
		for _, fr := range f.TextFragments {
			tf.Added += int(fr.LinesAdded)
			tf.Removed += int(fr.LinesDeleted)
			for _, l := range fr.Lines {
				switch l.Op {
				case gitdiff.OpAdd:
					added = append(added, l.Line)
				case gitdiff.OpDelete:
					removed = append(removed, l.Line)
				}
			}
		}
		lang := language(tf.Path)
		tf.RemovedTests = removedTests(lang, removed, added)
		tf.AddedSkips = addedSkips(lang, added)
		if len(tf.RemovedTests)+len(tf.AddedSkips) > 0 {
			tf.Kinds = appendKinds(tf.Kinds, app.TamperTest)
		}
		if len(tf.Kinds) > 0 {
			slices.SortFunc(tf.Kinds, func(a, b app.TamperKind) int { return kindOrder(a) - kindOrder(b) })
			t.Files = append(t.Files, tf)
		}
	}
	return t
}

func appendKinds(have []app.TamperKind, kinds ...app.TamperKind) []app.TamperKind {
	for _, k := range kinds {
		if !slices.Contains(have, k) {
			have = append(have, k)
		}
	}
	return have
}

func kindOrder(k app.TamperKind) int {
	return slices.Index([]app.TamperKind{app.TamperTest, app.TamperCheck, app.TamperCI}, k)
}

// testDirs hold tests (and their fixtures) by convention, at any depth.
var testDirs = []string{"test", "tests", "__tests__", "testdata", "spec"}

// testFileRE matches test files by their languages' conventions.
var testFileRE = regexp.MustCompile(`(?i)(_test\.go|^test_.*\.py|_test\.py|^conftest\.py|\.(test|spec)\.[cm]?[jt]sx?)$`)

// checkFiles are files that decide what a check runs or how, wherever they
// live: build files, test runners' configuration, module files.
var checkFiles = []string{
	"makefile", "gnumakefile", "package.json", "tox.ini", "pytest.ini", "setup.cfg", "pyproject.toml", "noxfile.py",
	"go.mod", ".golangci.yml", ".golangci.yaml",
}

// checkConfigRE matches test runners' configuration files.
var checkConfigRE = regexp.MustCompile(`(?i)^(jest|vitest|karma|mocha|playwright)\.config\.[cm]?[jt]s$|^\.mocharc\.`)

// ciFiles are CI configuration outside .github/.
var ciFiles = []string{".gitlab-ci.yml", ".travis.yml", "jenkinsfile", "azure-pipelines.yml", "bitbucket-pipelines.yml",
	".drone.yml", "codeowners"}

// ciDirs are directories of CI configuration at the top of the tree.
var ciDirs = []string{".github", ".circleci", ".buildkite", ".gitlab"}

// sensitiveKinds says what kinds of sensitive file name is; named holds the
// paths the checks' command lines name. Names compare case-insensitively:
// on a checkout that folds case they are the same file.
func sensitiveKinds(name string, named map[string]bool) []app.TamperKind {
	var kinds []app.TamperKind
	lower := strings.ToLower(name)
	base := path.Base(lower)
	dirs := strings.Split(path.Dir(lower), "/")
	if testFileRE.MatchString(base) || slices.ContainsFunc(dirs, func(d string) bool { return slices.Contains(testDirs, d) }) {
		kinds = append(kinds, app.TamperTest)
	}
	if namedBy(named, lower) || slices.Contains(checkFiles, base) || checkConfigRE.MatchString(base) {
		kinds = append(kinds, app.TamperCheck)
	}
	top, _, _ := strings.Cut(lower, "/")
	if slices.Contains(ciDirs, top) || slices.Contains(ciFiles, base) {
		kinds = append(kinds, app.TamperCI)
	}
	return kinds
}

// namedBy reports whether a check names the file or a directory holding it
// ("pytest tests/" runs every file under tests/).
func namedBy(named map[string]bool, lower string) bool {
	for p := lower; p != "."; p = path.Dir(p) {
		if named[p] {
			return true
		}
	}
	return false
}

// checkInputs returns the tree-relative paths, lowered, that the checks'
// command lines name: "./scripts/test.sh", "bash ci/run.sh", "-c tox.ini".
// A word is taken as a path when it has a slash or a dot and no shell or
// glob syntax; naming too much only lists a file more.
func checkInputs(checks []policy.Check) map[string]bool {
	named := map[string]bool{}
	for _, c := range checks {
		for _, word := range strings.FieldsFunc(c.Run, func(r rune) bool {
			return strings.ContainsRune(" \t\n;&|()<>=`'\"", r)
		}) {
			if strings.ContainsAny(word, "*?[]{}$~") || !strings.ContainsAny(word, "./") || strings.HasPrefix(word, "-") {
				continue
			}
			p := path.Clean(word)
			if path.IsAbs(p) || strings.HasPrefix(p, "..") || p == "." {
				continue
			}
			named[strings.ToLower(p)] = true
		}
	}
	return named
}

// lang is a language whose tests the report can name.
type lang int

const (
	langOther lang = iota
	langGo
	langPython
	langJS
)

func language(name string) lang {
	switch strings.ToLower(path.Ext(name)) {
	case ".go":
		return langGo
	case ".py":
		return langPython
	case ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		return langJS
	}
	return langOther
}

// testDefRE finds the name a line defines a test by, per language: the
// last submatch that is not empty is the name.
var testDefRE = map[lang]*regexp.Regexp{
	langGo:     regexp.MustCompile(`^\s*func\s+((?:Test|Fuzz|Benchmark|Example)\w*)\s*\(`),
	langPython: regexp.MustCompile(`^\s*(?:async\s+)?(?:def\s+(test\w*)\s*\(|class\s+(Test\w*)\b)`),
	langJS:     jsTestCall,
}

// skipRE finds a line that skips tests, or focuses on some and so skips
// the rest, per language.
var skipRE = map[lang]*regexp.Regexp{
	langGo:     regexp.MustCompile(`\.Skip(?:Now|f)?\(`),
	langPython: regexp.MustCompile(`@(?:pytest\.mark\.(?:skip|skipif|xfail)|unittest\.(?:skip|skipIf|skipUnless|expectedFailure))\b|\bpytest\.(?:skip|xfail)\(|\.skipTest\(`),
	langJS:     regexp.MustCompile(`(?:^|[^\w.$])(?:(?:it|test|describe)\.(?:skip|todo|only)\b|x(?:it|test|describe)\s*\(|f(?:it|describe)\s*\()`),
}

// testName returns the name a line defines a test by, or "".
func testName(l lang, line string) string {
	re := testDefRE[l]
	if re == nil {
		return ""
	}
	m := re.FindStringSubmatch(line)
	for i := len(m) - 1; i > 0; i-- {
		if m[i] != "" {
			return m[i]
		}
	}
	return ""
}

// removedTests names the tests defined on removed lines and not defined
// again on added ones (a moved or reformatted test is not removed).
func removedTests(l lang, removed, added []string) []string {
	again := map[string]bool{}
	for _, line := range added {
		if n := testName(l, line); n != "" {
			again[n] = true
		}
	}
	var names []string
	for _, line := range removed {
		if n := testName(l, line); n != "" && !again[n] && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// maxQuoted bounds a quoted line in the report.
const maxQuoted = 120

// addedSkips quotes the added lines that skip tests.
func addedSkips(l lang, added []string) []string {
	re := skipRE[l]
	if re == nil {
		return nil
	}
	var lines []string
	for _, line := range added {
		if re.MatchString(line) {
			lines = append(lines, head(strings.TrimSpace(line), maxQuoted))
		}
	}
	return lines
}
