package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// The budget hook is asked before every step with the usage so far; the
// reason it gives stops the loop before the next model call.
func TestBudgetHookStopsTheNextStep(t *testing.T) {
	h := newHarness(t, llmtest.Script{Steps: []llmtest.Step{
		step(call("read_file", `{"path":"calc.go"}`)),
		step(call("read_file", `{"path":"calc_test.go"}`)),
		step(call("finish", finishArg)),
	}}, testPolicy())
	var seen []int64
	h.budget = func(_ context.Context, used llm.Usage) (string, error) {
		seen = append(seen, used.Total())
		if len(seen) == 3 {
			return "the budget \"team\" is spent", nil
		}
		return "", nil
	}
	st := h.run()
	wantStop(t, st, agent.StopBudget, app.StateFailed)
	if st.Step != 2 || st.Stop.Detail != `the budget "team" is spent` || len(h.srv.Requests()) != 2 {
		t.Errorf("stopped after %d steps and %d model calls (%q); want 2 and 2, with the hook's reason", st.Step, len(h.srv.Requests()), st.Stop.Detail)
	}
	if len(seen) != 3 || seen[0] != 0 || seen[1] == 0 || seen[2] <= seen[1] || seen[2] != st.Usage.Total() {
		t.Errorf("the hook saw usage %v; want 0, then growing to the loop's %d", seen, st.Usage.Total())
	}
}

// A hook that cannot tell is an error of the loop, which resumes from its
// saved state; it does not stop the task.
func TestBudgetHookErrorIsTheLoops(t *testing.T) {
	h := newHarness(t, llmtest.Script{Steps: []llmtest.Step{step(call("finish", finishArg))}}, testPolicy())
	down := errors.New("redis is down")
	h.budget = func(context.Context, llm.Usage) (string, error) { return "", down }
	st, err := h.agent(h.tree).Run(t.Context())
	if !errors.Is(err, down) || st.Stop != nil || len(h.srv.Requests()) != 0 {
		t.Errorf("Run = %v, stop %+v, %d model calls; want the hook's error, no stop and no call", err, st.Stop, len(h.srv.Requests()))
	}
}
