package agent

import (
	"context"
	"fmt"

	"github.com/agentbot/agentbot/runner/llm"
)

// Steer returns what people sent the running task since it last looked:
// the user messages to add before the model's next step, for the notes
// from index read on (the runner frames each "/agent note" as guidance).
// The loop counts what it added in State.NotesRead, saved with the
// transcript, so a loop resumed on another worker adds each note once.
type Steer func(ctx context.Context, read int) ([]string, error)

// steer adds the notes that came since the last step to the transcript,
// and saves it, before the model is asked again.
func (a *Agent) steer(ctx context.Context) error {
	if a.cfg.Steer == nil {
		return nil
	}
	texts, err := a.cfg.Steer(ctx, a.st.NotesRead)
	if err != nil {
		return fmt.Errorf("step %d of task %s: read the notes: %w", a.st.Step+1, a.st.TaskID, err)
	}
	if len(texts) == 0 {
		return nil
	}
	for _, t := range texts {
		a.st.Messages = append(a.st.Messages, llm.Message{Role: llm.RoleUser, Content: t})
	}
	a.st.NotesRead += len(texts)
	a.log.Info("notes added", "notes", len(texts), "read", a.st.NotesRead)
	return a.save(ctx)
}
