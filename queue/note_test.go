package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestNotesAreKeptOnceInOrderAndBounded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := NewStore(connect(t, redistest.Start(t))).WithRetention(time.Hour)
	at := time.Date(2026, 12, 4, 12, 3, 0, 0, time.UTC)
	add := func(task, text string) int {
		t.Helper()
		pos, err := store.AddNote(ctx, "fix1", app.Note{Task: task, By: "alice", At: at, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	if pos := add("n1", "keep the API"); pos != 1 {
		t.Errorf("first note at %d; want 1", pos)
	}
	if pos := add("n2", "and the docs"); pos != 2 {
		t.Errorf("second note at %d; want 2", pos)
	}
	// The first note task, run again, keeps its one note.
	if pos := add("n1", "keep the API"); pos != 1 {
		t.Errorf("the note of n1 again at %d; want its place, 1", pos)
	}
	all, err := store.Notes(ctx, "fix1", 0)
	if err != nil || len(all) != 2 || all[0].Text != "keep the API" || all[1].Text != "and the docs" || !all[0].At.Equal(at) || all[0].By != "alice" {
		t.Fatalf("Notes = %+v, %v; want the two notes, oldest first", all, err)
	}
	if rest, err := store.Notes(ctx, "fix1", 1); err != nil || len(rest) != 1 || rest[0].Task != "n2" {
		t.Errorf("Notes from 1 = %+v, %v; want the second only", rest, err)
	}
	if none, err := store.Notes(ctx, "other", 0); err != nil || len(none) != 0 {
		t.Errorf("notes of a task that has none: %+v, %v", none, err)
	}
	for i := 3; i <= MaxNotes; i++ {
		add(fmt.Sprintf("n%d", i), "more")
	}
	_, err = store.AddNote(ctx, "fix1", app.Note{Task: "one-too-many", By: "alice", Text: "x"})
	if e, ok := errors.AsType[*app.Error](err); !ok || e.Code != app.EConflict {
		t.Errorf("note past MaxNotes: %v; want a conflict for the user", err)
	}
	if _, err := store.AddNote(ctx, "fix1", app.Note{Text: "anonymous"}); err == nil {
		t.Error("a note without its task and author was kept")
	}
}
