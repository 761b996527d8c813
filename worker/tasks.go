package worker

import (
	"context"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner"
)

// Tasks finds an issue's tasks through the store's per-issue index; it
// satisfies runner.Tasks.
type Tasks struct{ Store *queue.Store }

// OnIssue returns the tasks on the issue or pull request, newest first.
func (s Tasks) OnIssue(ctx context.Context, repo string, number int) ([]runner.TaskState, error) {
	recs, err := s.Store.TasksOfIssue(ctx, repo, number)
	if err != nil {
		return nil, err
	}
	out := make([]runner.TaskState, len(recs))
	for i, r := range recs {
		out[i] = runner.TaskState{Task: r.Task, State: r.State, Step: r.Step}
	}
	return out, nil
}
