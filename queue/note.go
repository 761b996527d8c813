package queue

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// MaxNotes bounds the notes one task keeps: each is shown to the model in
// full, and a task that needs more guidance than this is better asked
// again.
const MaxNotes = 20

func notesKey(id string) string { return "agentbot:task:" + id + ":notes" }

// addNoteScript appends a note unless the note task that sent it already
// did, or the list is full.
//
//	KEYS: the notes
//	ARGV: the note (JSON), the note task's id, retention in ms (0: kept), MaxNotes
//	returns the note's position from 1, or 0 when the list is full
var addNoteScript = redis.NewScript(`
local notes = redis.call('LRANGE', KEYS[1], 0, -1)
for i, raw in ipairs(notes) do
  if cjson.decode(raw).task == ARGV[2] then return i end
end
if #notes >= tonumber(ARGV[4]) then return 0 end
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return n`)

// AddNote keeps n for the task id, after the notes it has, and returns
// its position among them (from 1). A note already kept (n.Task sent it)
// keeps its place, so a note task run twice adds its note once. A task
// that has MaxNotes notes is refused another, with an error for the user.
func (s *Store) AddNote(ctx context.Context, id string, n app.Note) (int, error) {
	if n.Task == "" || n.By == "" {
		return 0, app.Errorf(app.EInvalid, "A note for task %q needs the task that sent it and who wrote it.", id)
	}
	raw, err := json.Marshal(n)
	if err != nil {
		return 0, fmt.Errorf("encode a note for task %s: %w", id, err)
	}
	pos, err := addNoteScript.Run(ctx, s.rdb, []string{notesKey(id)}, raw, n.Task, s.ttlMillis(), MaxNotes).Int()
	if err != nil {
		return 0, fmt.Errorf("keep a note for task %s: %w", id, err)
	}
	if pos == 0 {
		return 0, app.Errorf(app.EConflict, "Task `%s` has %d notes already, the most it keeps; to change course further, stop it and ask again.", id, MaxNotes)
	}
	return pos, nil
}

// Notes returns the notes kept for the task id, oldest first, from the
// one at index from (0 for all).
func (s *Store) Notes(ctx context.Context, id string, from int) ([]app.Note, error) {
	raws, err := s.rdb.LRange(ctx, notesKey(id), int64(from), -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read the notes of task %s: %w", id, err)
	}
	notes := make([]app.Note, 0, len(raws))
	for _, raw := range raws {
		var n app.Note
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			return nil, fmt.Errorf("decode a note of task %s: %w", id, err)
		}
		notes = append(notes, n)
	}
	return notes, nil
}
