package text

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
)

// Setup is what "/agent setup" inferred and how it ran.
type Setup struct {
	Request
	Base     string // the commit inferred from
	Proposal policyinit.Proposal
	Policy   policy.Policy // the policy proposed
	Server   policy.ServerConfig
	Replaces bool // a policy file exists and says something else
	// Detail is setup's line ("setup: built KEY"), Failed its failure;
	// Checks each check's run when setup did not fail.
	Detail string
	Failed *change.SetupFailure
	Checks []change.ProvedCheck
	// Reached and Refused are the hosts setup's egress proxy connected it
	// to, and those it refused.
	Reached []egress.Reach
	Refused []egress.Refusal
}

// SetupBody is the pull request's body, and the status comment's: what
// was detected, the setup, each check's result, and setup's network.
// Every text from the repository or its commands goes out inert.
func SetupBody(s Setup) string {
	own, p, prop := s.Own(), s.Policy, s.Proposal
	var b strings.Builder
	if s.Replaces {
		fmt.Fprintf(&b, "`%s` exists on the default branch and says something else: this replaces it with what agentbot infers. Keep what you wrote by hand that you still want.\n\n", policy.PolicyPath)
	}
	fmt.Fprintf(&b, "agentbot's policy for this repository, inferred from the tree at `%s` and proved in the sandbox, as `agentbot config init --verify` would. Asked for in #%d.\n\n",
		ShortSHA(s.Base), s.Task.Number)
	b.WriteString("**Detected**\n\n")
	for _, t := range prop.Toolchains {
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, app.Inert(strings.Join(t.Evidence, ", "), own))
	}
	for _, n := range prop.Primary().Notes {
		fmt.Fprintf(&b, "- note: %s\n", app.Inert(n, own))
	}
	fmt.Fprintf(&b, "\n**Image:** `%s`\n\n", p.Sandbox.Image)
	switch {
	case len(p.Setup.Run) == 0:
		b.WriteString("**Setup:** none: nothing to download\n\n")
	case s.Failed != nil:
		fmt.Fprintf(&b, "**Setup:** ❌ %s\n\n%s\n", app.Inert(s.Failed.Error(), own), app.CodeBlock(change.Tail(s.Failed.Output, outputExcerpt), "", own))
	default:
		fmt.Fprintf(&b, "**Setup:** ✅ %s (%s)\n\n", runsList(p.Setup.Run, own), app.Inert(s.Detail, own))
	}
	if len(s.Checks) > 0 {
		b.WriteString("**Checks**, each run once on the default branch over the prepared environment:\n\n| check | command | result |\n| --- | --- | --- |\n")
		for _, c := range s.Checks {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, app.CodeSpan(c.Run, own), checkResult(c, own))
		}
		b.WriteString("\n")
	}
	b.WriteString(hosts(s))
	return b.String()
}

// checkResult is one proved check's result, in a table cell.
func checkResult(c change.ProvedCheck, own app.IssueRef) string {
	switch {
	case c.Passed:
		return "✅ passes"
	case c.CannotRun != nil:
		return "⛔ cannot run: " + app.Inert(c.CannotRun.Cause+". "+c.CannotRun.Fix, own)
	case c.TimedOut:
		return "⏱️ runs, and times out today"
	}
	return fmt.Sprintf("⚠️ runs, and fails today (exit %d): a task's work", c.ExitCode)
}

// hosts says whom setup's network may reach and whom it did: the
// registries and hosts the server config allows, each host the egress
// proxy connected setup to (with the entry that allowed it), and each it
// refused, with the server config's line that allows it.
func hosts(s Setup) string {
	server := s.Server
	if !s.Policy.Setup.Network {
		return ""
	}
	var b strings.Builder
	var allowed []string
	for _, r := range server.SetupRegistries {
		allowed = append(allowed, fmt.Sprintf("%s registry `%s`", r.Ecosystem, r.Host.String()))
	}
	for _, a := range server.SetupAllowHosts {
		allowed = append(allowed, "`"+a.String()+"`")
	}
	if len(allowed) == 0 {
		allowed = []string{"no host"}
	}
	fmt.Fprintf(&b, "**Setup's network** goes through the egress proxy to %s (the server config's `setup.registries` and `setup.allow_hosts`).\n", strings.Join(allowed, ", "))
	switch {
	case len(s.Reached) > 0:
		b.WriteString("Setup needed, and reached:\n\n")
		for _, x := range s.Reached {
			fmt.Fprintf(&b, "- %s (%s)\n", app.CodeSpan(x.String(), app.IssueRef{}), allowedBy(server, x))
		}
		b.WriteString("\n")
	case strings.HasPrefix(s.Detail, "setup: cached"):
		b.WriteString("Setup reused the environment an earlier setup prepared, and connected nowhere.\n")
	default:
		b.WriteString("Setup reached no host.\n")
	}
	if len(s.Refused) == 0 {
		b.WriteString("The proxy refused no connection.\n")
		return b.String()
	}
	b.WriteString("The proxy refused these, which setup needed; an operator who trusts them adds them to the server config:\n\n")
	seen := map[string]bool{}
	for _, x := range s.Refused {
		host := egress.CutHost(x.Host)
		if seen[host] {
			continue
		}
		seen[host] = true
		fmt.Fprintf(&b, "- %s — %s\n", app.CodeSpan(host, app.IssueRef{}), app.Inert(x.Reason, app.IssueRef{}))
	}
	b.WriteString("\n```yaml\nsetup:\n  allow_hosts:\n")
	for _, x := range s.Refused {
		if host := egress.CutHost(x.Host); seen[host] {
			fmt.Fprintf(&b, "    - %s\n", strconv.Quote(host))
			delete(seen, host)
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// allowedBy names the server config's entry that let setup reach x: a
// registry, or setup.allow_hosts.
func allowedBy(server policy.ServerConfig, x egress.Reach) string {
	for _, r := range server.SetupRegistries {
		if app.HostAllowed(r.AllowedHosts(), x.Host, x.Port) {
			return "the " + r.Ecosystem + " registry"
		}
	}
	return "`setup.allow_hosts`"
}

// runsList is commands as code spans, joined.
func runsList(runs []string, own app.IssueRef) string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = app.CodeSpan(r, own)
	}
	return strings.Join(out, ", ")
}
