package change

import (
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/agentbot/agentbot/runner/tools"
)

// CannotRun is why a check cannot run in the sandbox as the policy
// prepares it: a cause no change to the repository's code removes — a
// command the image lacks, a dependency setup did not fetch, a network the
// sandbox never has. The loop would spend its budget against it, so a task
// whose checks fail so on the base commit stops before the model's first
// step, and says what to add to the policy.
type CannotRun struct {
	Check string
	Run   string
	// Cause is what is missing, as a sentence's end: "the command `pytest`
	// is not installed in the sandbox".
	Cause string
	// Fix is the policy line to add, as a sentence.
	Fix string
	// Evidence is the output's line that shows the cause.
	Evidence string
}

func (c *CannotRun) Error() string {
	return fmt.Sprintf("the checks cannot run: check %s: %s", c.Check, c.Cause)
}

// A cause of a check that cannot run: match finds it in a failed run and
// returns its cause, its fix and the line that shows it, or ok false.
// own says whether a path is a file or directory of the repository.
type cannotRunRule func(c tools.CheckRun, own func(path string) bool) (cause, fix, evidence string, ok bool)

// cannotRunRules are tried in order: a missing command explains the rest
// of what a check prints, and a missing module explains a failed download.
var cannotRunRules = []cannotRunRule{missingCommand, goModuleLookup, missingPythonModule, missingNodePackage, noNetwork}

// CannotRunOf returns why check run c cannot run, or nil when it ran, or
// failed in a way a change to the code may fix: a failing test is the
// normal case. own says whether a path (slash-separated, from the tree's
// root) is a file or directory of the repository, so that a module of its
// own that is missing counts as the code's.
func CannotRunOf(c tools.CheckRun, own func(path string) bool) *CannotRun {
	if c.Passed || c.TimedOut {
		return nil
	}
	for _, rule := range cannotRunRules {
		if cause, fix, evidence, ok := rule(c, own); ok {
			return &CannotRun{Check: c.Name, Run: c.Run, Cause: cause, Fix: fix, Evidence: strings.TrimSpace(evidence)}
		}
	}
	return nil
}

const (
	fixInstall = "Install it in the sandbox image (or name an image that has it in `sandbox.image`), " +
		"or add its install to `setup.run` with `setup.network: true`."
	fixDeps = "Add the install of the project's dependencies to `setup.run`, with `setup.network: true` (%s)."
	fixNet  = "The checks run without a network: fetch what they need in `setup.run`, with `setup.network: true` " +
		"and the host in the server config's `setup.allow_hosts`, or leave the tests that need the network out of `checks`."
)

var (
	// The shell's own words, in dash, bash and busybox, also under make
	// or npm: "sh: 1: pytest: not found", "bash: line 1: npx: command not
	// found". Only the shell's: a test may print "user: not found".
	notFoundLine = regexp.MustCompile(`(?m)^(?:\S*/)?(?:sh|bash|dash|ash|zsh)(?:: line \d+|: \d+)?: ([^\s:/]+): (?:command )?not found\s*$`)
	execNotFound = regexp.MustCompile(`(?m)^.*exec: "([^"/]+)": executable file not found in \$PATH.*$`)
)

// missingCommand is a command the shell could not find (exit 127). A path
// that is missing ("./run.sh") is the repository's own, which a change
// may add.
func missingCommand(c tools.CheckRun, _ func(string) bool) (string, string, string, bool) {
	if m := notFoundLine.FindStringSubmatch(c.Output); m != nil {
		return fmt.Sprintf("the command `%s` is not installed in the sandbox", m[1]), fixInstall, m[0], true
	}
	if m := execNotFound.FindStringSubmatch(c.Output); m != nil {
		return fmt.Sprintf("the command `%s` is not installed in the sandbox", m[1]), fixInstall, m[0], true
	}
	return "", "", "", false
}

var goLookupDisabled = regexp.MustCompile(`(?m)^.*module lookup disabled by GOPROXY=off.*$`)

// goModuleLookup is a Go module the module cache lacks: the sandbox's
// GOPROXY=off turns its download into this error.
func goModuleLookup(c tools.CheckRun, _ func(string) bool) (string, string, string, bool) {
	m := goLookupDisabled.FindString(c.Output)
	if m == "" {
		return "", "", "", false
	}
	return "a Go module the code needs is not in the sandbox's module cache (the sandbox has no module proxy: `GOPROXY=off`)",
		"Add `go mod download` to `setup.run`, with `setup.network: true`.", m, true
}

var pyNoModule = regexp.MustCompile(`(?m)^.*No module named '?([\w.]+)'?.*$`)

// missingPythonModule is a module Python cannot import that is not one of
// the repository's: a dependency, or pytest itself.
func missingPythonModule(c tools.CheckRun, own func(string) bool) (string, string, string, bool) {
	for _, m := range pyNoModule.FindAllStringSubmatch(c.Output, -1) {
		top, _, _ := strings.Cut(m[1], ".")
		if own(top) || own(top+".py") || own("src/"+top) || own("src/"+top+".py") {
			continue
		}
		return fmt.Sprintf("the Python module `%s` is not installed in the sandbox", m[1]),
			fmt.Sprintf(fixDeps, "such as `python3 -m pip install -e .` or `python3 -m pip install -r requirements.txt`"), m[0], true
	}
	return "", "", "", false
}

var nodeNoModule = regexp.MustCompile(`(?m)^.*Cannot find (?:module|package) '([^']+)'.*$`)

// missingNodePackage is a package Node cannot resolve that is not a file
// of the repository: a bare name, or a path into node_modules.
func missingNodePackage(c tools.CheckRun, own func(string) bool) (string, string, string, bool) {
	for _, m := range nodeNoModule.FindAllStringSubmatch(c.Output, -1) {
		pkg := nodePackage(m[1])
		if pkg == "" || own(pkg+"/package.json") {
			continue
		}
		return fmt.Sprintf("the Node package `%s` is not installed in the sandbox", pkg),
			fmt.Sprintf(fixDeps, "such as `npm ci`"), m[0], true
	}
	return "", "", "", false
}

// nodePackage is the package a module specifier names, or "" for a file
// of the repository's own.
func nodePackage(spec string) string {
	if i := strings.LastIndex(spec, "/node_modules/"); i >= 0 {
		spec = spec[i+len("/node_modules/"):]
	} else if strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "node:") {
		return ""
	}
	parts := strings.SplitN(spec, "/", 3)
	if strings.HasPrefix(spec, "@") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

var (
	// A name that does not resolve, in Go's, glibc's, curl's and Node's
	// words, or a network that is not there.
	noResolve = regexp.MustCompile(`(?m)^.*(?:dial tcp: lookup \S+|Temporary failure in name resolution|Name or service not known|` +
		`Could not resolve host|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|[Nn]etwork is unreachable|ENETUNREACH).*$`)
	// A refused connection and its address: Go's "dial tcp 1.2.3.4:443:
	// connect: connection refused", Node's "connect ECONNREFUSED 1.2.3.4:443".
	refusedAt = regexp.MustCompile(`(?m)^.*?(?:dial tcp ([^\s]+): connect: connection refused|ECONNREFUSED ([^\s]+)).*$`)
)

// noNetwork is a check that reaches for the network, which the sandbox
// does not have. A refused connection to the sandbox's own loopback is a
// test's server that did not start: the code's.
func noNetwork(c tools.CheckRun, _ func(string) bool) (string, string, string, bool) {
	if m := noResolve.FindString(c.Output); m != "" {
		return "the check reaches for the network, and the sandbox has none", fixNet, m, true
	}
	for _, m := range refusedAt.FindAllStringSubmatch(c.Output, -1) {
		host, _, err := net.SplitHostPort(m[1] + m[2])
		if ip := net.ParseIP(host); err != nil || ip == nil || ip.IsLoopback() {
			continue
		}
		return "the check reaches for the network, and the sandbox has none", fixNet, m[0], true
	}
	return "", "", "", false
}
