package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// setupEgress turns the network a setup container's spec asks for into
// its egress: an internal network whose only way out is the egress proxy,
// which reaches the server config's setup.allow_hosts and nothing else.
// Call it on every setup spec just before the container starts, and done
// once the container is removed: done removes the network and records what
// the proxy refused in the trace, the audit log and, through tk.refused,
// the status comment.
func (r *Runner) setupEgress(ctx context.Context, tk *task, spec *docker.Spec) (done func(), err error) {
	spec.CABundle = r.cfg.SetupCABundle
	if !spec.Network {
		return func() {}, nil
	}
	// Never the default bridge, which reaches everywhere.
	spec.Network = false
	allow := make([]string, len(r.cfg.Server.SetupAllowHosts))
	for i, a := range r.cfg.Server.SetupAllowHosts {
		allow[i] = a.String()
	}
	e, err := r.cfg.Sandbox.StartEgress(ctx, docker.EgressSpec{TaskID: spec.TaskID, Allow: allow})
	if err != nil {
		return nil, fmt.Errorf("start the setup network: %w", err)
	}
	spec.Egress = e
	return func() {
		refused, err := e.Close(ctx)
		if err != nil {
			tk.log.Warn("remove the setup network", "err", err)
		}
		for _, x := range refused {
			// The verification's setup on the base runs the same commands
			// again; what they tried is reported once.
			if slices.ContainsFunc(tk.refused, func(y egress.Refusal) bool {
				return y.Host == x.Host && y.Port == x.Port && y.Reason == x.Reason
			}) {
				continue
			}
			tk.refused = append(tk.refused, x)
			tk.log.Info("setup egress refused", "host", x.Host, "port", x.Port, "reason", x.Reason)
			tk.rep.trace(ctx, app.TraceEvent{Time: x.Time, Kind: app.TraceRefusal, Name: "egress", Outcome: "refused", Detail: x.String()})
			if err := tk.rep.audit(ctx, app.AuditBlocked, x.String()); err != nil {
				tk.log.Warn("audit a refused connection", "err", err)
			}
		}
	}, nil
}

// egressText lists the setup phase's refused connections for the status
// comment, or is empty when there were none. Hosts are what setup's
// commands asked for, so they go out inert.
func egressText(tk *task) string {
	if len(tk.refused) == 0 {
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
	return b.String()
}

// maxRefusalsShown bounds the list in the status comment; the trace has
// every refusal.
const maxRefusalsShown = 20
