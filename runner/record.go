package runner

import (
	"context"
	"errors"

	"github.com/agentbot/agentbot/app"
)

// What a task leaves behind besides its report on GitHub: entries in the
// installation's audit log (who asked, what was decided, what was refused,
// pushed and opened) and the task's trace (every model call, tool call,
// check, refusal and phase, with timings), which its check run shows.

// AuditLog appends to the audit log; queue.Audit satisfies it.
type AuditLog interface {
	Append(ctx context.Context, e app.AuditEntry) error
}

// TraceLog keeps tasks' traces; queue.Traces satisfies it.
type TraceLog interface {
	Append(ctx context.Context, taskID string, e app.TraceEvent) error
	Trace(ctx context.Context, taskID string) ([]app.TraceEvent, error)
}

// modelFailure says why a model call failed in words fit for the check
// run, which GitHub shows to anyone who can read the repository: the
// client's own error names the endpoint, so it stays in the worker's log.
func modelFailure(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the model did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	}
	if _, ok := errors.AsType[*app.Error](err); ok {
		return app.ErrorMessage(err)
	}
	return "the model call failed; the worker's log has the error"
}
