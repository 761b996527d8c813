package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
)

// Notes keeps the notes of "/agent note" with the task they are for, in
// the order they came; queue.Store satisfies it.
type Notes interface {
	// AddNote keeps n for task id, once however often n.Task sends it,
	// and returns its position from 1.
	AddNote(ctx context.Context, id string, n app.Note) (int, error)
	// Notes returns task id's notes from index from on.
	Notes(ctx context.Context, id string, from int) ([]app.Note, error)
}

// note answers "/agent note": it keeps the note with the issue's fix that
// has not ended, whose loop reads it at its next step (steer), and says
// so; on an issue whose latest fix ended, it says how to run it again with
// the note. It holds no lock and no slot, and starts no sandbox: the fix
// it is for holds them.
func (r *Runner) note(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	if r.cfg.Notes == nil {
		return finished(app.StateRefused, text.NoNotes, "")
	}
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return err
	}
	target, ok := noteTarget(all, tk.ID)
	switch {
	case !ok:
		return finished(app.StateRefused, text.NoFixToNote(tk.request(), suggest(tk, "")), "")
	case target.State.Final():
		return r.noteEnded(ctx, tk, target)
	}
	pos, err := r.cfg.Notes.AddNote(ctx, target.ID, app.Note{Task: tk.ID, By: tk.Requester, At: tk.ReceivedAt, Text: tk.Instructions})
	if err != nil {
		if _, user := errors.AsType[*app.Error](err); user {
			return refused(err)
		}
		return err
	}
	tk.log.Info("note kept", "for", target.ID, "position", pos)
	if target.State == app.StateAwaitingApproval && target.Step == planWait {
		if err := r.revisePlan(ctx, tk, target.ID); err != nil {
			return err
		}
		return finished(app.StateSucceeded, text.Noted(tk.request(), target.ID, target.State, true), "")
	}
	return finished(app.StateSucceeded, text.Noted(tk.request(), target.ID, target.State, false), "")
}

// steerVerb reports whether v's tasks run the loop a note steers.
func steerVerb(v app.Verb) bool {
	return v == app.VerbFix || v == app.VerbRetry || v == app.VerbFixCI
}

// noteTarget is the task a note on the issue is for: the newest fix that
// is running or paused, else the newest one queued, else the newest one,
// which has ended. all is newest first.
func noteTarget(all []TaskState, self string) (TaskState, bool) {
	var queued, newest *TaskState
	for i := range all {
		t := &all[i]
		if t.ID == self || !steerVerb(t.Verb) {
			continue
		}
		switch {
		case t.State == app.StateRunning || t.State == app.StateAwaitingApproval:
			return *t, true
		case t.State == app.StateQueued && queued == nil:
			queued = t
		}
		if newest == nil {
			newest = t
		}
	}
	switch {
	case queued != nil:
		return *queued, true
	case newest != nil:
		return *newest, true
	}
	return TaskState{}, false
}

// noteEnded answers a note on an issue whose latest fix has ended: no
// agent reads it, and the command that runs the fix again with it.
func (r *Runner) noteEnded(ctx context.Context, tk *task, ended TaskState) error {
	retry, pr := ended.State == app.StateFailed || ended.State == app.StateStopped, 0
	verb := app.VerbRetry
	if !retry {
		verb = ""
		prog, err := r.loadProgress(ctx, ended.ID)
		if err != nil {
			return err
		}
		if prog.PR != nil {
			pr = prog.PR.Number
		}
	}
	return finished(app.StateRefused, text.NoteTooLate(ended.ID, ended.State, retry, pr, suggest(tk, verb)), "")
}

// suggest is the command, in a block to copy, that asks verb ("" for a
// fix) with the note's text as its instructions.
func suggest(tk *task, verb app.Verb) string {
	return text.Command(tk.request(), tk.policy.Policy.Trigger.Command, verb)
}

// retryInstructions are a retry's instructions: the failed fix's, then
// what the retry adds (a note it was suggested with).
func retryInstructions(failed, added string) string {
	if strings.TrimSpace(added) == "" {
		return failed
	}
	if strings.TrimSpace(failed) == "" {
		return added
	}
	return failed + "\n\n" + added
}

// steer is the loop's source of notes for attempt n of tk (0 for its
// only one): those kept for the task from index read on, each framed as
// guidance, which the status comment acknowledges (once, for all the
// attempts, holding mu, which guards the task's report).
func (r *Runner) steer(ctx context.Context, tk *task, n int, mu *sync.Mutex) agent.Steer {
	if r.cfg.Notes == nil {
		return nil
	}
	return func(loopCtx context.Context, read int) ([]string, error) {
		notes, err := r.cfg.Notes.Notes(loopCtx, tk.ID, read)
		if err != nil || len(notes) == 0 {
			return nil, err
		}
		texts := make([]string, len(notes))
		var from []string
		for i, n := range notes {
			if texts[i], err = prompts.Note(prompts.NoteData{By: n.By, At: n.At, Text: n.Text}); err != nil {
				return nil, err
			}
			from = append(from, fmt.Sprintf("@%s's note of %s", n.By, n.At.UTC().Format("15:04 MST")))
		}
		if n <= 1 {
			mu.Lock()
			defer mu.Unlock()
			// An acknowledgement that does not reach GitHub is no reason to
			// withhold the note from the model.
			if err := tk.rep.say(ctx, text.Running(tk.request(), "the agent is working, and has read "+strings.Join(from, ", "))); err != nil {
				tk.log.Warn("acknowledge a note in the status comment", "err", err)
			}
		}
		return texts, nil
	}
}
