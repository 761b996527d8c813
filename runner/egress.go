package runner

import (
	"context"
	"slices"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
)

// connectionRefused records a connection setup's egress proxy refused in the trace,
// the audit log and, through tk.refused, the status comment: the first
// egress.MaxRefusals of the task, of which the first maxRefusalsLogged
// are logged too, so that no setup, however many setups a task runs,
// floods the worker's log, the trace or the audit log.
func connectionRefused(ctx context.Context, tk *task, x egress.Refusal) {
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

// reached records a host setup's egress proxy connected it to, in the
// trace and for "/agent setup", which shows an operator the hosts setup
// needs: once however many setups of the task reached it.
func reached(ctx context.Context, tk *task, x egress.Reach) {
	if slices.Contains(tk.reached, x) || len(tk.reached) == egress.MaxReached {
		return
	}
	tk.reached = append(tk.reached, x)
	tk.log.Info("setup egress reached", "host", x.Host, "port", x.Port)
	tk.rep.trace(ctx, app.TraceEvent{Time: time.Now().UTC(), Kind: app.TraceEgress, Name: "egress", Outcome: "reached", Detail: x.String()})
}

// maxRefusalsLogged bounds the worker's log lines about a task's refused
// connections; its trace has the first egress.MaxRefusals.
const maxRefusalsLogged = 10
