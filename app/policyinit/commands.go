package policyinit

import (
	"encoding/json"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// command is one command the project runs to build or test itself,
// rewritten for the sandbox image of its toolchain.
type command struct {
	run       string
	toolchain string // "go", "python", "node", or "make" for a Makefile target
	source    string
	// from is the kind of source, in the order of preference: CI
	// workflows, tox.ini, noxfile.py, package.json, Makefile.
	from int
}

// projectCommands are the build and test commands the project runs
// itself, in the order it says them: its CI workflows' run steps, its
// tox.ini and noxfile.py commands, its package.json scripts and its
// Makefile's targets, most preferred first. Installs and commands of no known toolchain are left
// out: setup is inferred from the lock files instead.
func projectCommands(fsys fs.FS) []command {
	var out []command
	add := func(from int, source string, lines []string) {
		for _, l := range lines {
			if c, ok := classify(fsys, l); ok {
				c.source, c.from = source, from
				out = append(out, c)
			}
		}
	}
	workflows := append(glob(fsys, ".github/workflows/*.yml"), glob(fsys, ".github/workflows/*.yaml")...)
	slices.Sort(workflows)
	for _, w := range workflows {
		add(0, w, workflowRuns(readText(fsys, w)))
	}
	add(1, "tox.ini", toxCommands(readText(fsys, "tox.ini")))
	add(2, "noxfile.py", noxCommands(readText(fsys, "noxfile.py")))
	add(3, "package.json", scriptCommands(readText(fsys, "package.json")))
	add(4, "Makefile", makeTargets(readText(fsys, "Makefile")))
	return out
}

// workflowRuns are the lines of a GitHub Actions workflow's run steps,
// job by job in name order, continuation lines joined.
func workflowRuns(text string) []string {
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if yaml.Unmarshal([]byte(text), &wf) != nil {
		return nil
	}
	names := make([]string, 0, len(wf.Jobs))
	for n := range wf.Jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	var lines []string
	for _, n := range names {
		for _, s := range wf.Jobs[n].Steps {
			lines = append(lines, shellLines(continuation.ReplaceAllString(s.Run, " "))...)
		}
	}
	return lines
}

// continuation is a backslash-newline with the blanks around it.
var continuation = regexp.MustCompile(`\s*\\\n\s*`)

// shellLines splits a script into its simple commands, by line and "&&".
func shellLines(script string) []string {
	var out []string
	for _, l := range strings.Split(script, "\n") {
		for _, part := range strings.Split(l, "&&") {
			if part = strings.TrimSpace(part); part != "" && !strings.HasPrefix(part, "#") {
				out = append(out, part)
			}
		}
	}
	return out
}

var toxPosargs = regexp.MustCompile(`\{posargs(:[^}]*)?\}`)

// toxCommands are the commands of tox.ini's first [testenv], which the
// sandbox runs directly: tox itself is not in the image, and would
// download a virtualenv per run.
func toxCommands(text string) []string {
	var out []string
	inEnv, inCommands := false, false
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "["):
			if inEnv && len(out) > 0 {
				return out
			}
			inEnv, inCommands = strings.HasPrefix(t, "[testenv"), false
		case !inEnv:
		case inCommands && t != "" && (l[0] == ' ' || l[0] == '\t'):
			out = append(out, strings.TrimSpace(toxPosargs.ReplaceAllString(t, "")))
		case strings.HasPrefix(t, "commands"):
			key, v, ok := strings.Cut(t, "=")
			inCommands = ok && strings.TrimSpace(key) == "commands"
			if v = strings.TrimSpace(toxPosargs.ReplaceAllString(v, "")); inCommands && v != "" {
				out = append(out, v)
			}
		default:
			inCommands = false
		}
	}
	return out
}

var (
	noxRun    = regexp.MustCompile(`session\.run\(([^)]*)\)`)
	quotedArg = regexp.MustCompile(`"([^"]*)"|'([^']*)'`)
)

// noxCommands are noxfile.py's session.run calls with literal arguments.
func noxCommands(text string) []string {
	var out []string
	for _, m := range noxRun.FindAllStringSubmatch(text, -1) {
		var args []string
		for _, a := range quotedArg.FindAllStringSubmatch(m[1], -1) {
			args = append(args, a[1]+a[2])
		}
		if len(args) > 0 {
			out = append(out, strings.Join(args, " "))
		}
	}
	return out
}

// npmDefaultTest is the test script "npm init" writes, which only fails.
const npmDefaultTest = `echo "Error: no test specified" && exit 1`

// scriptCommands are package.json's build, lint and test scripts, as npm
// runs them.
func scriptCommands(text string) []string {
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal([]byte(text), &pkg) != nil {
		return nil
	}
	var out []string
	for _, s := range []string{"build", "lint", "test"} {
		if v, ok := pkg.Scripts[s]; ok && v != npmDefaultTest {
			out = append(out, "npm run "+s)
		}
	}
	return out
}

var makeTarget = regexp.MustCompile(`(?m)^(test|check|build|lint):`)

// makeTargets are the Makefile's test, check, build and lint targets.
func makeTargets(text string) []string {
	var out []string
	for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
		out = append(out, "make "+m[1])
	}
	return out
}

var (
	goCheck     = regexp.MustCompile(`^go (test|build|vet)\b`)
	pyModule    = regexp.MustCompile(`^python[0-9.]* -m (pytest|unittest)\b(.*)$`)
	pyScript    = regexp.MustCompile(`^python[0-9.]* (\S*test\S*\.py)\b(.*)$`)
	pytestCmd   = regexp.MustCompile(`^(?:py\.test|pytest)\b(.*)$`)
	nodeScript  = regexp.MustCompile(`^(npm|yarn|pnpm)(?: run)? ((?:build|lint|test)[\w:-]*)(.*)$`)
	makeCommand = regexp.MustCompile(`^make (test|check|build|lint)$`)
)

// classify says whether line is a build or test command of a toolchain
// the sandbox has, rewritten for its image: Python's image has python3
// (not python, tox or nox) with pytest, Node's has npm (not yarn or
// pnpm, whose scripts npm runs the same).
func classify(fsys fs.FS, line string) (command, bool) {
	switch {
	case strings.Contains(line, "${{"):
		return command{}, false
	case goCheck.MatchString(line):
		return command{run: line, toolchain: "go"}, true
	case pyModule.MatchString(line):
		m := pyModule.FindStringSubmatch(line)
		return command{run: "python3 -m " + m[1] + m[2], toolchain: "python"}, true
	case pytestCmd.MatchString(line):
		return command{run: "python3 -m pytest" + pytestCmd.FindStringSubmatch(line)[1], toolchain: "python"}, true
	case pyScript.MatchString(line):
		m := pyScript.FindStringSubmatch(line)
		if !exists(fsys, path.Clean(m[1])) {
			return command{}, false
		}
		return command{run: "python3 " + m[1] + m[2], toolchain: "python"}, true
	case nodeScript.MatchString(line):
		m := nodeScript.FindStringSubmatch(line)
		run := "npm run " + m[2] + m[3]
		if m[2] == "test" {
			run = "npm test" + m[3]
		}
		return command{run: run, toolchain: "node"}, true
	case makeCommand.MatchString(line):
		return command{run: line, toolchain: "make"}, true
	}
	return command{}, false
}
