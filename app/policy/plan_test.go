package policy

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
)

func TestPlanPolicy(t *testing.T) {
	build := func(yml string) (Policy, error) {
		t.Helper()
		r, err := ParsePolicy(PolicyPath, []byte("version: 1\nchecks: [{name: t, run: make test}]\n"+yml))
		if err != nil {
			return Policy{}, err
		}
		return BuildPolicy(DefaultServerConfig(), r)
	}
	for yml, want := range map[string]PlanMode{"": PlanOff, "quality: {plan: off}\n": PlanOff,
		"quality: {plan: show}\n": PlanShow, "quality: {plan: approve}\n": PlanApprove} {
		p, err := build(yml)
		if err != nil || p.PlanFor() != want {
			t.Errorf("%q: plan %q, %v; want %q", yml, p.PlanFor(), err, want)
		}
	}
	_, err := build("quality:\n  plan: ask\n")
	if msg := app.ErrorMessage(err); app.ErrorCode(err) != app.EInvalid || !strings.Contains(msg, "quality.plan") || !strings.Contains(msg, `"ask" is not one of off, show, approve`) {
		t.Errorf("a bad plan mode: %v; want a clear error naming the field", err)
	}
	if _, err := build("quality:\n  plan: [show]\n"); app.ErrorCode(err) != app.EInvalid {
		t.Errorf("a plan mode of the wrong type: %v; want refused", err)
	}
}
