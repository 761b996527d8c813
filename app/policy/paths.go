package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/bmatcuk/doublestar/v4"
)

// protectedPath is a path the agent may change only when paths.allow names
// it: a deny list that leaves it out (lists replace the defaults whole) does
// not open it, nor does "**".
type protectedPath struct {
	glob string // matched case-insensitively
	// anchor is what an allow glob must contain, case-insensitively, to name
	// the path explicitly.
	anchor string
	why    string
}

// protectedPaths are the files that govern the repository rather than make
// up its code: what runs with its secrets, who must review, and the
// agent's own policy. The policy file comes first: it needs its own name.
var protectedPaths = []protectedPath{
	{PolicyPath, "agent.yml", "it is agentbot's policy for this repository"},
	{".github/**", ".github/", "it is GitHub configuration (workflows run with the repository's secrets)"},
	{"**/CODEOWNERS", "CODEOWNERS", "it decides who must review changes"},
}

// Check returns nil when the slash-separated, tree-relative path may be
// written, or an *Error that names the rule refusing it. Deny globs match
// regardless of case, as a checkout on a case-folding disk, or a reader of
// .GitHub/Workflows, would; allow globs match as written.
func (p Paths) Check(name string) error {
	if g, ok := p.denied(name); ok {
		return app.Errorf(app.EPolicy, "%s matches the denied path %q", name, g)
	}
	if pp, ok := protected(name); ok && !p.names(pp, name) {
		return app.Errorf(app.EPolicy, "%s may not be changed because %s; paths.allow must name it explicitly (a glob containing %q) for the agent to change it",
			name, pp.why, pp.anchor)
	}
	for _, g := range p.Allow {
		if doublestar.MatchUnvalidated(g, name) {
			return nil
		}
	}
	return app.Errorf(app.EPolicy, "%s is outside the allowed paths %q", name, p.Allow)
}

// denied returns the deny glob that matches name, ignoring case.
func (p Paths) denied(name string) (string, bool) {
	lower := strings.ToLower(name)
	for _, g := range p.Deny {
		if doublestar.MatchUnvalidated(strings.ToLower(g), lower) {
			return g, true
		}
	}
	return "", false
}

// protected returns the first protected path that name is, ignoring case.
func protected(name string) (protectedPath, bool) {
	lower := strings.ToLower(name)
	for _, pp := range protectedPaths {
		if doublestar.MatchUnvalidated(strings.ToLower(pp.glob), lower) {
			return pp, true
		}
	}
	return protectedPath{}, false
}

// names reports whether an allow glob that matches name names pp
// explicitly.
func (p Paths) names(pp protectedPath, name string) bool {
	for _, g := range p.Allow {
		if strings.Contains(strings.ToLower(g), strings.ToLower(pp.anchor)) && doublestar.MatchUnvalidated(g, name) {
			return true
		}
	}
	return false
}

// GuardsBelow returns a rule that a symlink at dir would let a write walk
// around: a deny glob, or a protected path, that matches dir or a path
// below it and whose leading segments are written out (".github/**" guards
// .github; "**/*.pem" guards no directory in particular). A symlink there
// would let content under another name stand where the rule looks.
func (p Paths) GuardsBelow(dir string) (string, bool) {
	if g, ok := p.denied(dir); ok {
		return g, true
	}
	if pp, ok := protected(dir); ok && !p.names(pp, dir) {
		return pp.glob, true
	}
	globs := append([]string(nil), p.Deny...)
	for _, pp := range protectedPaths {
		if !slices.ContainsFunc(p.Allow, func(g string) bool { return strings.Contains(strings.ToLower(g), strings.ToLower(pp.anchor)) }) {
			globs = append(globs, pp.glob)
		}
	}
	for _, g := range globs {
		if reachesInto(strings.ToLower(g), strings.ToLower(dir)) {
			return g, true
		}
	}
	return "", false
}

// reachesInto reports whether glob, whose first segment is literal, can
// match a path strictly below dir. Segments are compared one by one; a
// "**" matches the rest. A segment with braces may hold a slash, so it
// counts as reaching in, which errs on the side of refusing.
func reachesInto(glob, dir string) bool {
	gs, ds := strings.Split(glob, "/"), strings.Split(dir, "/")
	if strings.ContainsAny(gs[0], "*?[{\\") {
		return false
	}
	for i, d := range ds {
		if i >= len(gs) {
			return false
		}
		switch g := gs[i]; {
		case g == "**" || strings.Contains(g, "{"):
			return true
		default:
			if ok, err := path.Match(g, d); err != nil || !ok {
				return false
			}
		}
	}
	return len(gs) > len(ds)
}
