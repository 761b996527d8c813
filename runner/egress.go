package runner

import (
	"context"
	"slices"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
)

// connectionRefused records a connection setup's egress proxy refused in
// the trace, the audit log and the report: the first egress.MaxRefusals
// of the task, of which the first maxRefusalsLogged are logged too, so
// that no setup, however many setups a task runs, floods the worker's
// log, the trace or the audit log. The proxy calls it from its own
// goroutines, the attempts' setups at once.
func (rp *reporter) connectionRefused(ctx context.Context, x egress.Refusal) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	acct, log := rp.acct, rp.tk.log
	x.Host = egress.CutHost(x.Host)
	// The verification's setup on the base runs the same commands again;
	// what they tried is reported once.
	if slices.ContainsFunc(acct.refused, func(y egress.Refusal) bool {
		return y.Host == x.Host && y.Port == x.Port && y.Reason == x.Reason
	}) {
		return
	}
	if len(acct.refused) == egress.MaxRefusals {
		acct.refusedMore++
		return
	}
	acct.refused = append(acct.refused, x)
	switch n := len(acct.refused); {
	case n < maxRefusalsLogged:
		log.Info("setup egress refused", "host", x.Host, "port", x.Port, "reason", x.Reason)
	case n == maxRefusalsLogged:
		log.Info("setup egress refused; the task's further refusals are in its trace and status comment only",
			"host", x.Host, "port", x.Port, "reason", x.Reason, "logged", n)
	}
	rp.trace(ctx, app.TraceEvent{Time: x.Time, Kind: app.TraceRefusal, Name: "egress", Outcome: "refused", Detail: x.String()})
	if err := rp.audit(ctx, app.AuditBlocked, x.String()); err != nil {
		log.Warn("audit a refused connection", "err", err)
	}
}

// reached records a host setup's egress proxy connected it to, in the
// trace and for "/agent setup", which shows an operator the hosts setup
// needs: once however many setups of the task reached it.
func (rp *reporter) reached(ctx context.Context, x egress.Reach) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	acct := rp.acct
	if slices.Contains(acct.reached, x) || len(acct.reached) == egress.MaxReached {
		return
	}
	acct.reached = append(acct.reached, x)
	rp.tk.log.Info("setup egress reached", "host", x.Host, "port", x.Port)
	rp.trace(ctx, app.TraceEvent{Time: time.Now().UTC(), Kind: app.TraceEgress, Name: "egress", Outcome: "reached", Detail: x.String()})
}

// egress is what setup's egress proxy reached and refused so far.
func (rp *reporter) egress() ([]egress.Reach, []egress.Refusal) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return slices.Clone(rp.acct.reached), slices.Clone(rp.acct.refused)
}

// maxRefusalsLogged bounds the worker's log lines about a task's refused
// connections; its trace has the first egress.MaxRefusals.
const maxRefusalsLogged = 10
