package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/agent/agenttest"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/tools"
	"github.com/agentbot/agentbot/runner/tools/toolstest"
)

// TestObserveSeesEveryCall: the trace is built from these callbacks, so
// each tool call must arrive with its id, arguments, result and checks,
// and each completion with its step, model and usage.
func TestObserveSeesEveryCall(t *testing.T) {
	h := newHarness(t, llmtest.Script{Steps: []llmtest.Step{
		step(call("write_file", `{"path":".github/workflows/ci.yml","content":"on: push\n"}`), call("read_file", `{"path":"calc.go"}`)),
		step(call("run_checks", `{}`)),
		step(call("edit_file", fixArgs)),
		step(call("finish", finishArg)),
	}}, testPolicy())
	var models []agent.ModelCall
	a, err := agent.New(context.Background(), agent.Config{
		TaskID: "task-1", Policy: h.policy, Model: h.client, Workspace: h.tree, Store: h.store,
		Runner: toolstest.HostRunner{Dir: h.tree.Dir}, System: "s", Task: "t", Logger: quiet,
		Observe:      func(e agent.Event) { h.events = append(h.events, e) },
		ObserveModel: func(c agent.ModelCall) { models = append(models, c) },
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	if len(models) != 4 {
		t.Fatalf("%d model calls observed; want 4: %+v", len(models), models)
	}
	var cost float64
	for i, m := range models {
		if m.Step != i+1 || m.Model != "edit-model" || m.Digest || m.Err != nil || m.Usage.PromptTokens == 0 || m.Usage.CompletionTokens == 0 {
			t.Errorf("model call %d: %+v", i, m)
		}
		cost += m.Usage.CostUSD
	}
	if cost != st.Usage.CostUSD || cost == 0 {
		t.Errorf("observed calls cost $%f; the state says $%f", cost, st.Usage.CostUSD)
	}

	if len(h.events) != 5 {
		t.Fatalf("%d events; want 5: %+v", len(h.events), h.events)
	}
	ids := map[string]bool{}
	for _, e := range h.events {
		if e.CallID == "" || ids[e.CallID] {
			t.Errorf("event %+v: call id missing or repeated", e)
		}
		ids[e.CallID] = true
	}
	blocked, read, checks := h.events[0], h.events[1], h.events[2]
	if blocked.Step != 1 || blocked.Outcome != tools.BlockedWrite || !strings.Contains(blocked.Arguments, "ci.yml") || !strings.HasPrefix(blocked.Result, "refused, nothing was written") {
		t.Errorf("blocked write event %+v", blocked)
	}
	if read.Step != 1 || read.Tool != "read_file" || !strings.Contains(read.Result, "return a + b + 1") || read.ResultBytes != len(read.Result) {
		t.Errorf("read event %+v", read)
	}
	if checks.Step != 2 || len(checks.Checks) != 1 || checks.Checks[0].Name != "test" || checks.Checks[0].Passed {
		t.Errorf("checks event %+v; want the failing test check", checks)
	}
}

// TestObserveSeesFailedAndDigestCompletions: a completion that fails is
// observed with its error, and digests are observed as such.
func TestObserveSeesFailedAndDigestCompletions(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		h := newHarness(t, llmtest.Script{Steps: []llmtest.Step{{Status: 400, Error: "context length exceeded"}}}, testPolicy())
		var models []agent.ModelCall
		a, err := agent.New(context.Background(), agent.Config{
			TaskID: "task-1", Policy: h.policy, Model: h.client, Workspace: h.tree, Store: h.store,
			Runner: toolstest.HostRunner{Dir: h.tree.Dir}, System: "s", Task: "t", Logger: quiet,
			ObserveModel: func(c agent.ModelCall) { models = append(models, c) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(context.Background()); err == nil {
			t.Fatal("the loop went on after the model refused the request")
		}
		if len(models) != 1 || models[0].Err == nil || models[0].Step != 1 || models[0].Model != "edit-model" {
			t.Errorf("model calls %+v; want one failed call for step 1", models)
		}
	})
	t.Run("digest", func(t *testing.T) {
		var steps []llmtest.Step
		for i := range 6 {
			steps = append(steps, step(call("read_file", `{"path":"filler.go","start_line":`+string(rune('1'+i))+`}`)))
		}
		steps = append(steps, step(call("edit_file", fixArgs)), step(call("finish", finishArg)))
		h := newHarness(t, llmtest.Script{Steps: steps}, testPolicy())
		h.tree = agenttest.NewTree(t, map[string]string{"calc.go": calcRepo["calc.go"], "filler.go": bigFile})
		fast := &fastModel{}
		var digests int
		a, err := agent.New(context.Background(), agent.Config{
			TaskID: "t", Policy: h.policy, Model: h.client, Fast: fast, Workspace: h.tree, Store: h.store,
			Runner: toolstest.HostRunner{Dir: h.tree.Dir}, System: "s", Task: "t", ContextWindow: 4000, Logger: quiet,
			ObserveModel: func(c agent.ModelCall) {
				if c.Digest {
					digests++
					if c.Model != "fast-model" || c.Usage.PromptTokens != 900 {
						t.Errorf("digest call %+v", c)
					}
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if digests == 0 || digests != fast.calls {
			t.Errorf("%d digests observed; the fast model answered %d", digests, fast.calls)
		}
	})
}
