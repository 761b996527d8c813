package policy

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
)

// Starter is what a repository of one kind would start its policy with:
// the checks the refusal of a task without checks suggests, as "agentbot
// config init" would write them.
type Starter struct {
	Kind    string   // "Go module", "Python package", "Node package"
	Markers []string // root files that show the kind, any one suffices
	Checks  []Check
}

// starters are tried in order; the first whose marker is present wins.
func starters() []Starter {
	return []Starter{
		{Kind: "Go module", Markers: []string{"go.mod"},
			Checks: []Check{{Name: "build", Run: "go build ./..."}, {Name: "test", Run: "go test ./..."}}},
		{Kind: "Python package", Markers: []string{"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"},
			Checks: []Check{{Name: "test", Run: "python3 -m pytest"}}},
		{Kind: "Node package", Markers: []string{"package.json"},
			Checks: []Check{{Name: "test", Run: "npm test"}}},
	}
}

// DetectStarter returns the starter of the repository whose root holds the
// files has reports, with Markers the one file found, or false when it is
// of no kind agentbot knows.
func DetectStarter(has func(name string) bool) (Starter, bool) {
	for _, s := range starters() {
		for _, m := range s.Markers {
			if has(m) {
				s.Markers = []string{m}
				return s, true
			}
		}
	}
	return Starter{}, false
}

// ChecksYAML is the starter's checks as a policy's checks: list.
func (s Starter) ChecksYAML() string {
	var b strings.Builder
	b.WriteString("checks:\n")
	for _, c := range s.Checks {
		fmt.Fprintf(&b, "  - {name: %s, run: %q, timeout: %s}\n", c.Name, c.Run, checkTimeout(c.Name))
	}
	return b.String()
}

// checkTimeout is a starter check's timeout: builds are quick, tests less so.
func checkTimeout(name string) string {
	if name == "build" {
		return "5m"
	}
	return "15m"
}

// RequireChecksIn is RequireChecks for a repository whose root holds the
// files has reports: the refusal suggests the checks of its kind, or of
// every kind agentbot knows when it is none of them.
func (p Policy) RequireChecksIn(has func(name string) bool) error {
	if len(p.Checks) > 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agentbot needs to know when a task is done, and this repository defines no checks. "+
		"Add a `checks:` list to `%s` on the default branch (or to the organisation's `.github` repository), "+
		"fastest first; a task is done when all of them pass; `agentbot config init` writes a starter file, "+
		"and `%s setup` on an issue proposes one in a pull request, proved in the sandbox. ", PolicyPath, cmp.Or(p.Trigger.Command, app.DefaultCommand))
	if s, ok := DetectStarter(has); ok {
		fmt.Fprintf(&b, "For this %s (%s):\n\n```yaml\n%s```", s.Kind, s.Markers[0], s.ChecksYAML())
		return app.Errorf(app.EPolicy, "%s", b.String())
	}
	b.WriteString("For example:")
	for _, s := range starters() {
		fmt.Fprintf(&b, "\n\nfor a %s:\n\n```yaml\n%s```", s.Kind, s.ChecksYAML())
	}
	return app.Errorf(app.EPolicy, "%s", b.String())
}
