package agent_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

func TestReadOnlyLoopAnswersWithoutARunner(t *testing.T) {
	h := newHarness(t, llmtest.Script{Steps: []llmtest.Step{
		step(call("read_file", `{"path":"calc.go"}`)),
		{Text: "Add adds one too many."},
		step(call("answer", `{"answer":"Add returns a + b + 1, at calc.go:5."}`)),
	}}, testPolicy())
	a, err := agent.New(context.Background(), agent.Config{
		TaskID: "ask-1", Policy: h.policy, Model: h.client, Workspace: h.tree, Store: h.store,
		System: "You answer questions.", Task: "Why is Add wrong?", ReadOnly: true, Logger: quiet,
	})
	if err != nil {
		t.Fatalf("a read-only loop needs no runner: %v", err)
	}
	st, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != app.StateSucceeded || st.Summary != "Add returns a + b + 1, at calc.go:5." || st.Diff != "" {
		t.Fatalf("state %s, summary %q, diff %q", st.Status, st.Summary, st.Diff)
	}
	for i, req := range h.srv.Requests() {
		if names := req.ToolNames(); slices.Contains(names, "edit_file") || slices.Contains(names, "run_command") || !slices.Contains(names, "answer") {
			t.Errorf("request %d offered %v", i, names)
		}
	}
	// The answer without a call is nudged toward answer, not finish.
	msgs := h.srv.Requests()[2].Messages
	if last := msgs[len(msgs)-1].Content; last != "Continue with a tool call. When you can answer the question, call answer with your reply." {
		t.Errorf("nudge %q", last)
	}
}
