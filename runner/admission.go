package runner

import (
	"context"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/text"
)

// deny ends a task that inv's Authorize refused with reason. Anyone can
// comment, so the refusal of someone who may not command agentbot is
// posted once per issue and requester within the Store's window; every
// other such task ends without a word on GitHub, its refusal kept in the
// audit log and its record. Someone who may command but not approve is
// always answered.
func (r *Runner) deny(ctx context.Context, tk *task, authz *policy.Authorizer, inv app.Invocation, reason string) error {
	if quiet(tk) {
		return ignored(reason)
	}
	answer := false
	if inv.Verb == app.VerbApprove || inv.Verb == app.VerbDeny {
		inv.Verb = app.VerbFix
		d, err := authz.Authorize(ctx, app.Actor{Login: tk.Requester, Type: "User"}, inv)
		if err != nil {
			return err
		}
		answer = d.Allowed
	}
	if !answer {
		var err error
		if answer, err = r.cfg.Store.ClaimRefusal(ctx, tk.Repo, tk.Number, tk.Requester, tk.ID); err != nil {
			return err
		}
	}
	if answer {
		return refused(app.Errorf(app.EUnauthorized, "%s", reason))
	}
	tk.log.Info("refused without an answer: the requester was answered a refusal on this issue lately", "reason", reason)
	return &ended{state: app.StateRefused, step: "refused; the requester was told so lately", refusal: reason}
}

// unavailable refuses a verb this server does not run, once its requester
// is admitted: to anyone else, it is a refusal like any other.
func (r *Runner) unavailable(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	return finished(app.StateRefused, text.NotAvailable(tk.Verb), "")
}
