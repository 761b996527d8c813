package text

import (
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
)

// CIFailure is a failing check of a CI follow-up and what was decided
// about it.
type CIFailure struct {
	Check    string
	Decision app.CIDecision
	BaseRun  string // the link to its latest run on the base, when it fails there too
	By       string // the earlier task that decided, "" for this one
}

// ciSection lists, in a CI follow-up's status, each failing check with
// what was decided about it.
func ciSection(r Report) string {
	if len(r.CI) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n**Failing checks:**\n\n")
	for _, f := range r.CI {
		fmt.Fprintf(&b, "- %s: ", app.CodeSpan(f.Check, r.Own()))
		switch f.Decision {
		case app.CIFollowUp:
			b.WriteString("a follow-up addresses it")
		case app.CIFailsOnBase:
			fmt.Fprintf(&b, "this check fails on %s too ([its latest run there](%s))", r.Issue.Pull.Base, f.BaseRun)
		case app.CIFollowUpsUsed:
			b.WriteString("no follow-up, the automatic follow-ups are used")
		}
		if f.By != "" {
			fmt.Fprintf(&b, ", as task `%s` answered", f.By)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Egress is what setup's egress proxy refused over a task: the first
// egress.MaxRefusals connections, and how many more.
type Egress struct {
	Refused []egress.Refusal
	More    int
}

// maxRefusalsShown bounds the list in the status comment; the trace has
// the task's first egress.MaxRefusals.
const maxRefusalsShown = 20

// refusals lists the setup phase's refused connections for the status
// comment, or is empty when there were none or the task's own report
// says them (/agent setup). Hosts are what setup's commands asked for,
// so they go out inert.
func refusals(r Report) string {
	e := r.Egress
	if len(e.Refused) == 0 || r.Task.Verb == app.VerbSetup {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n**Setup's network:** the egress proxy refused these connections (`setup.allow_hosts` in the server config lists what setup may reach):\n\n")
	for i, x := range e.Refused {
		if i == maxRefusalsShown {
			fmt.Fprintf(&b, "- … and %d more (see the trace)\n", len(e.Refused)-i)
			break
		}
		b.WriteString("- " + app.Inert(x.String(), app.IssueRef{}) + "\n")
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "- … and %d more, past the %d a task records\n", e.More, egress.MaxRefusals)
	}
	return b.String()
}
