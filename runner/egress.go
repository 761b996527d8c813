package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
)

// refused records a connection setup's egress proxy refused in the trace,
// the audit log and, through tk.refused, the status comment: the first
// egress.MaxRefusals of the task, of which the first maxRefusalsLogged
// are logged too, so that no setup, however many setups a task runs,
// floods the worker's log, the trace or the audit log.
func refused(ctx context.Context, tk *task, x egress.Refusal) {
	x.Host = egress.CutHost(x.Host)
	// The verification's setup on the base runs the same commands again;
	// what they tried is reported once.
	if slices.ContainsFunc(tk.refused, func(y egress.Refusal) bool {
		return y.Host == x.Host && y.Port == x.Port && y.Reason == x.Reason
	}) {
		return
	}
	if len(tk.refused) == egress.MaxRefusals {
		tk.refusedMore++
		return
	}
	tk.refused = append(tk.refused, x)
	switch n := len(tk.refused); {
	case n < maxRefusalsLogged:
		tk.log.Info("setup egress refused", "host", x.Host, "port", x.Port, "reason", x.Reason)
	case n == maxRefusalsLogged:
		tk.log.Info("setup egress refused; the task's further refusals are in its trace and status comment only",
			"host", x.Host, "port", x.Port, "reason", x.Reason, "logged", n)
	}
	tk.rep.trace(ctx, app.TraceEvent{Time: x.Time, Kind: app.TraceRefusal, Name: "egress", Outcome: "refused", Detail: x.String()})
	if err := tk.rep.audit(ctx, app.AuditBlocked, x.String()); err != nil {
		tk.log.Warn("audit a refused connection", "err", err)
	}
}

// reached records a host setup's egress proxy connected it to, once
// however many setups of the task reached it: the hosts setup needs,
// which "/agent setup" shows an operator.
func reached(tk *task, x egress.Reach) {
	if slices.Contains(tk.reached, x) || len(tk.reached) == egress.MaxReached {
		return
	}
	tk.reached = append(tk.reached, x)
	tk.log.Info("setup egress reached", "host", x.Host, "port", x.Port)
}

// egressText lists the setup phase's refused connections for the status
// comment, or is empty when there were none or the task's own report
// says them (hostsText). Hosts are what setup's commands asked for, so
// they go out inert.
func egressText(tk *task) string {
	if len(tk.refused) == 0 || tk.Verb == app.VerbSetup {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n**Setup's network:** the egress proxy refused these connections (`setup.allow_hosts` in the server config lists what setup may reach):\n\n")
	for i, x := range tk.refused {
		if i == maxRefusalsShown {
			fmt.Fprintf(&b, "- … and %d more (see the trace)\n", len(tk.refused)-i)
			break
		}
		b.WriteString("- " + app.Inert(x.String(), app.IssueRef{}) + "\n")
	}
	if tk.refusedMore > 0 {
		fmt.Fprintf(&b, "- … and %d more, past the %d a task records\n", tk.refusedMore, egress.MaxRefusals)
	}
	return b.String()
}

// maxRefusalsShown bounds the list in the status comment; the trace has
// the task's first egress.MaxRefusals. maxRefusalsLogged bounds the
// worker's log lines about them.
const (
	maxRefusalsShown  = 20
	maxRefusalsLogged = 10
)
