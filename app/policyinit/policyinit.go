// Package policyinit infers a repository's starting policy from its tree
// alone: the toolchains its files show, the commands that fetch its
// dependencies, the sandbox image that has the toolchain, and the checks
// the project itself runs (its CI workflows, tox.ini, noxfile.py, Makefile
// and package.json scripts), written as commands that exist in that image.
// It reads an fs.FS and nothing else, so that "agentbot config init" and a
// worker reading a workspace infer the same policy.
package policyinit

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Toolchain is one language's sandbox image and what runs in it.
type Toolchain struct {
	Name  string // "go", "python", "node": the flavour of deploy/sandbox/build-offline.sh
	Image string // that flavour's default tag
	// Evidence is what showed it, as "go.mod, go.sum (6 modules)".
	Evidence []string
	// Setup are the commands that fetch its dependencies; Network says
	// that they download.
	Setup   []string
	Network bool
	// Checks are the commands that define done, fastest first.
	Checks []Check
	// Notes are what a reader of the policy should know of an inference
	// that may be wrong.
	Notes []string
}

// Check is one inferred check and where it was found.
type Check struct {
	Name   string
	Run    string
	Source string // ".github/workflows/ci.yml", "tox.ini", "default"…
}

// Proposal is the policy inferred for one tree: the first toolchain is
// the one whose image the policy names, and whose setup and checks it
// runs; the others need another image, and are written commented out.
type Proposal struct {
	Toolchains []Toolchain
}

// images are build-offline.sh's default tags, which the default server
// config's sandbox.images ("agentbot-sandbox:*") allows.
var images = map[string]string{"go": "agentbot-sandbox:dev", "python": "agentbot-sandbox:python", "node": "agentbot-sandbox:node"}

// Infer reads the tree fsys and proposes its policy. A tree that shows no
// toolchain it knows is an error that says which files it looked for.
func Infer(fsys fs.FS) (Proposal, error) {
	ci := projectCommands(fsys)
	var found []Toolchain
	for _, detect := range []func(fs.FS, []command) (Toolchain, bool){detectGo, detectPython, detectNode} {
		if t, ok := detect(fsys, ci); ok {
			t.Image = images[t.Name]
			found = append(found, t)
		}
	}
	if len(found) == 0 {
		return Proposal{}, fmt.Errorf("no go.mod, pyproject.toml, setup.py, setup.cfg, requirements*.txt or package.json at the root to infer a policy from")
	}
	// The toolchain of the project's own first check is the policy's, so
	// that a Go service with a Node front end is tested as CI tests it.
	for _, c := range ci {
		if i := slices.IndexFunc(found, func(t Toolchain) bool { return t.Name == c.toolchain }); i > 0 {
			found[0], found[i] = found[i], found[0]
			break
		} else if i == 0 {
			break
		}
	}
	return Proposal{Toolchains: found}, nil
}

// WithChecks is p with the checks runs instead of those inferred; a
// proposal of no toolchain gets them alone, in the default image.
func (p Proposal) WithChecks(runs []string) Proposal {
	checks := make([]Check, len(runs))
	for i, r := range runs {
		checks[i] = Check{Run: r, Source: "--check"}
	}
	if len(p.Toolchains) == 0 {
		return Proposal{Toolchains: []Toolchain{{Checks: named(checks)}}}
	}
	p.Toolchains = slices.Clone(p.Toolchains)
	p.Toolchains[0].Checks = named(checks)
	return p
}

// WithImage is p with image as the sandbox image of its primary
// toolchain: the operator's own build of it.
func (p Proposal) WithImage(image string) Proposal {
	p.Toolchains = slices.Clone(p.Toolchains)
	p.Toolchains[0].Image = image
	return p
}

// Primary is the toolchain whose image, setup and checks the policy has.
func (p Proposal) Primary() Toolchain { return p.Toolchains[0] }

// YAML is the policy's text: the primary toolchain's image, setup and
// checks, what was detected as comments, the other toolchains' setup and
// checks commented out, and the rest of the keys at their defaults.
func (p Proposal) YAML() string {
	t := p.Primary()
	var b strings.Builder
	b.WriteString("# agentbot's policy for this repository; every key is listed by\n" +
		"# \"agentbot config schema\". Read from the default branch only.\n")
	for _, o := range p.Toolchains {
		if o.Name != "" {
			fmt.Fprintf(&b, "# detected: %s (%s)\n", o.Name, strings.Join(o.Evidence, ", "))
		}
	}
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "# note: %s\n", n)
	}
	b.WriteString("version: 1\n")
	if t.Image != "" {
		fmt.Fprintf(&b, "sandbox:\n  image: %s\n", t.Image)
	}
	if len(t.Setup) > 0 {
		fmt.Fprintf(&b, "setup:                  # before the agent, in the same image; its downloads are kept\n  network: %v\n  run:\n", t.Network)
		for _, r := range t.Setup {
			fmt.Fprintf(&b, "    - %s\n", strconv.Quote(r))
		}
	}
	b.WriteString("checks:                 # the definition of done, fastest first\n")
	for _, c := range t.Checks {
		fmt.Fprintf(&b, "  - {name: %s, run: %s}   # from %s\n", c.Name, strconv.Quote(c.Run), c.Source)
	}
	for _, o := range p.Toolchains[1:] {
		fmt.Fprintf(&b, "# %s needs the image %s, which this policy does not run; its setup and checks would be:\n", o.Name, o.Image)
		for _, r := range o.Setup {
			fmt.Fprintf(&b, "#   setup: %s\n", r)
		}
		for _, c := range o.Checks {
			fmt.Fprintf(&b, "#   check: %s\n", c.Run)
		}
	}
	b.WriteString(`# trigger: {command: /agent, label: "agent:fix", roles: [admin, maintain, write]}
# sandbox: {cpus: 2, memory: 4GiB, pids: 512, timeout: 45m}
# paths: {deny: [".github/workflows/**", "**/*.pem", "**/.env*"]}
# limits: {iterations: 30, diff_lines: 600, files_changed: 25}
# pull_request: {draft: false, labels: [agent]}
`)
	return b.String()
}

// exists says whether fsys has the file name.
func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// readText is the file's text, or "" when it cannot be read.
func readText(fsys fs.FS, name string) string {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return ""
	}
	return string(data)
}

// glob is the root's files matching pattern, sorted.
func glob(fsys fs.FS, pattern string) []string {
	m, _ := fs.Glob(fsys, pattern) // the patterns are constant and valid
	return m
}

// checksFrom are the project's commands of toolchain tc as checks, from
// the most preferred source that has any (its CI over its scripts), else
// its Makefile targets, else fallback.
func checksFrom(ci []command, tc string, fallback ...Check) []Check {
	for _, want := range []string{tc, "make"} {
		var out []Check
		seen := map[string]bool{}
		from := -1
		for _, c := range ci {
			if c.toolchain != want || seen[c.run] || (from >= 0 && c.from != from) {
				continue
			}
			from = c.from
			seen[c.run] = true
			out = append(out, Check{Run: c.run, Source: c.source})
		}
		if len(out) > 0 {
			return fastestFirst(out)
		}
	}
	return fastestFirst(fallback)
}

// named gives each check a short name by what it does: build, vet, lint
// or test, numbered when several do the same.
func named(checks []Check) []Check {
	count := map[string]int{}
	for i, c := range checks {
		name := "test"
		for _, k := range []string{"build", "vet", "lint"} {
			if strings.Contains(c.Run, k) {
				name = k
				break
			}
		}
		count[name]++
		if n := count[name]; n > 1 {
			name = fmt.Sprintf("%s-%d", name, n)
		}
		checks[i].Name = name
	}
	return checks
}

// fastestFirst orders inferred checks builds and static checks first,
// then tests, which take longest.
func fastestFirst(checks []Check) []Check {
	checks = named(checks)
	slices.SortStableFunc(checks, func(a, b Check) int { return rank(a.Name) - rank(b.Name) })
	return checks
}

func rank(name string) int {
	base, _, _ := strings.Cut(name, "-")
	return map[string]int{"build": 0, "vet": 1, "lint": 2, "test": 3}[base]
}
