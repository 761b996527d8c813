package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent/agenttest"
	"github.com/agentbot/agentbot/runner/llm"
)

// refusingTree refuses its first Diff as the host does a tree holding a
// FIFO or a huge file.
type refusingTree struct {
	*agenttest.Tree
	refused bool
}

func (r *refusingTree) Diff(ctx context.Context) (string, error) {
	if !r.refused {
		r.refused = true
		return "", app.Errorf(app.EPolicy, "the work tree cannot be recorded: pipe is a named pipe (FIFO)")
	}
	return r.Tree.Diff(ctx)
}

// A tree the host cannot record is told to the model, not turned into an
// error that would retry the task on the same tree.
func TestUnrecordableTreeIsToldToTheModel(t *testing.T) {
	t.Parallel()
	tree := &refusingTree{Tree: agenttest.NewTree(t, calcRepo)}
	model := &idlessModel{answers: []llm.Message{
		{ToolCalls: []llm.ToolCall{{ID: "1", Name: "edit_file", Arguments: fixArgs}}},
		{ToolCalls: []llm.ToolCall{{ID: "2", Name: "finish", Arguments: finishArg}}},
	}}
	st, err := runOnHost(t, model, tree, tree.Dir)
	if err != nil {
		t.Fatalf("run: %v, want the refusal given to the model", err)
	}
	var told bool
	for _, m := range st.Messages {
		told = told || (m.Role == llm.RoleTool && strings.Contains(m.Content, "Refused by the host: the work tree cannot be recorded: pipe is a named pipe"))
	}
	if !told {
		t.Errorf("the model was not told; messages %+v", st.Messages)
	}
	if st.Diff != "" {
		t.Errorf("diff %q saved from a tree that could not be recorded", st.Diff)
	}
}
