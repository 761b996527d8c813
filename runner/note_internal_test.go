package runner

import (
	"testing"

	"github.com/agentbot/agentbot/app"
)

func TestNoteTargetPrefersTheRunningFix(t *testing.T) {
	ts := func(id string, v app.Verb, st app.State) TaskState {
		return TaskState{Task: app.Task{ID: id, Verb: v}, State: st}
	}
	for _, tt := range []struct {
		name string
		all  []TaskState // newest first
		want string
	}{
		{"running behind a queued one", []TaskState{ts("q", app.VerbFix, app.StateQueued), ts("r", app.VerbRetry, app.StateRunning)}, "r"},
		{"paused", []TaskState{ts("s", app.VerbStatus, app.StateSucceeded), ts("p", app.VerbFix, app.StateAwaitingApproval)}, "p"},
		{"queued only", []TaskState{ts("a", app.VerbAsk, app.StateRunning), ts("q", app.VerbFixCI, app.StateQueued)}, "q"},
		{"ended", []TaskState{ts("f2", app.VerbFix, app.StateFailed), ts("f1", app.VerbFix, app.StateSucceeded)}, "f2"},
		{"none", []TaskState{ts("n", app.VerbNote, app.StateRunning), ts("a", app.VerbAsk, app.StateSucceeded)}, ""},
	} {
		got, ok := noteTarget(tt.all, "n")
		if got.ID != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: target %q, %v; want %q", tt.name, got.ID, ok, tt.want)
		}
	}
}

func TestRetryInstructionsAddTheNote(t *testing.T) {
	for _, tt := range [][3]string{
		{"fix the sum", "", "fix the sum"},
		{"", "keep the API", "keep the API"},
		{"fix the sum", "keep the API", "fix the sum\n\nkeep the API"},
	} {
		if got := retryInstructions(tt[0], tt[1]); got != tt[2] {
			t.Errorf("retryInstructions(%q, %q) = %q; want %q", tt[0], tt[1], got, tt[2])
		}
	}
}
