package runner

import (
	"context"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// thread reads the conversation of tk's issue or pull request and keeps
// what the model may read of it: the posts of people who may command
// agentbot, by the same rule and lookup as admission, within the policy's
// limits.context_tokens.
func (r *Runner) thread(ctx context.Context, tk *task) (*app.Thread, error) {
	conv, err := tk.inst.Conversation(ctx, tk.Repo, tk.Number, tk.issue)
	if err != nil {
		return nil, err
	}
	authz := policy.NewAuthorizer(tk.inst, tk.policy.Policy)
	th, err := app.BuildThread(ctx, conv, app.ThreadOptions{
		MayCommand: func(ctx context.Context, who app.Actor) (bool, error) { return authz.MayCommand(ctx, tk.Repo, who) },
		Self:       r.cfg.Bot.Name,
		Budget:     tk.policy.Policy.Limits.ContextTokens,
	})
	if err != nil {
		return nil, err
	}
	tk.log.Info("conversation read", "shown", th.Shown, "hidden", th.Hidden, "cut", th.Cut, "truncated", conv.Truncated)
	return &th, nil
}
