package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Record is a task as stored, with where it is in its lifecycle.
type Record struct {
	app.Task
	State     app.State `json:"state"`
	Step      string    `json:"step,omitempty"` // what a running task is doing, for status replies
	UpdatedAt time.Time `json:"updated_at"`
}

// Store reads and updates task records and the workers' resumable state.
// What it writes expires its retention after the task's last change, so
// Redis does not grow with every task ever run; the audit log and the
// outcomes keep what must outlive the records.
type Store struct {
	rdb redis.UniversalClient
	ttl time.Duration // 0: kept forever
}

// DefaultTaskRetention is how long a task's record and resumable state
// are kept after its last change.
const DefaultTaskRetention = 30 * 24 * time.Hour

// NewStore returns a Store over rdb, which the caller closes, with the
// default retention.
func NewStore(rdb redis.UniversalClient) *Store {
	return &Store{rdb: rdb, ttl: DefaultTaskRetention}
}

// WithRetention returns a copy of s whose writes keep a task's record and
// resumable state for ttl after the task's last change, and drop tasks
// received longer ago than ttl from the index; ttl 0 keeps them forever.
// Only writes apply it: a record keeps the expiry of its last write.
func (s *Store) WithRetention(ttl time.Duration) *Store {
	c := *s
	c.ttl = max(ttl, 0)
	return &c
}

// ttlMillis is the retention as the scripts take it: 0 for none.
func (s *Store) ttlMillis() int64 { return s.ttl.Milliseconds() }

const indexKey = "agentbot:tasks"

func taskKey(id string) string { return "agentbot:task:" + id }
func runKey(id string) string  { return "agentbot:task:" + id + ":run" }

// createScript stores a task's record, unless its delivery was already
// answered (KEYS[3] exists), in one atomic step: a delivery that is
// remembered never gains a record afterwards. Fields already there are kept,
// so writing a record again changes nothing. With a retention (ARGV[6]
// milliseconds, 0 for none) the record expires that long after, and the
// index forgets the tasks received before ARGV[7], whose records have
// expired already.
//
//	KEYS: task record, index, delivery
//	ARGV: task JSON, state, updated_at, score, id, retention, oldest kept score
var createScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('HSETNX', KEYS[1], 'task', ARGV[1])
redis.call('HSETNX', KEYS[1], 'state', ARGV[2])
redis.call('HSETNX', KEYS[1], 'updated_at', ARGV[3])
redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[5])
if ARGV[6] ~= '0' then
	redis.call('PEXPIRE', KEYS[1], ARGV[6])
	redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[7])
end
return 1`)

// create stores t's record in state queued unless one exists, and returns t
// as JSON; fresh is false when t's delivery was already answered.
func (s *Store) create(ctx context.Context, t app.Task) (payload []byte, fresh bool, err error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, false, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	now := time.Now().UTC()
	n, err := createScript.Run(ctx, s.rdb, []string{taskKey(t.ID), indexKey, deliveryKey(t.Delivery)},
		b, string(app.StateQueued), now.Format(time.RFC3339Nano), t.ReceivedAt.UnixMilli(), t.ID,
		s.ttlMillis(), now.Add(-s.ttl).UnixMilli()).Int()
	if err != nil {
		return nil, false, fmt.Errorf("store task %s: %w", t.ID, err)
	}
	return b, n == 1, nil
}

// Task returns the record of the task id, or an *app.Error with code
// app.ENotFound.
func (s *Store) Task(ctx context.Context, id string) (Record, error) {
	h, err := s.rdb.HGetAll(ctx, taskKey(id)).Result()
	if err != nil {
		return Record{}, fmt.Errorf("read task %s: %w", id, err)
	}
	return decodeRecord(id, h)
}

// List returns up to limit records, newest first.
func (s *Store) List(ctx context.Context, limit int) ([]Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := s.rdb.ZRevRange(ctx, indexKey, 0, int64(limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, taskKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	recs := make([]Record, 0, len(ids))
	for i, id := range ids {
		r, err := decodeRecord(id, cmds[i].Val())
		if app.ErrorCode(err) == app.ENotFound {
			continue // indexed but its record is gone: nothing to show
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func decodeRecord(id string, h map[string]string) (Record, error) {
	if h["task"] == "" {
		return Record{}, app.Errorf(app.ENotFound, "There is no task %q.", id)
	}
	var r Record
	if err := json.Unmarshal([]byte(h["task"]), &r.Task); err != nil {
		return Record{}, fmt.Errorf("decode task %s: %w", id, err)
	}
	r.State = app.State(h["state"])
	r.Step = h["step"]
	if err := r.UpdatedAt.UnmarshalText([]byte(h["updated_at"])); err != nil {
		return Record{}, fmt.Errorf("decode task %s: updated_at: %w", id, err)
	}
	return r, nil
}

// setStateScript updates an existing record only, so that a late worker
// cannot resurrect a task record that was removed, and restarts its
// retention (ARGV[4] milliseconds, 0 for none).
var setStateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'step', ARGV[2], 'updated_at', ARGV[3])
if ARGV[4] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 1`)

// SetState moves the task id to state s; step says what it is doing.
func (s *Store) SetState(ctx context.Context, id string, st app.State, step string) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	n, err := setStateScript.Run(ctx, s.rdb, []string{taskKey(id)}, string(st), step, now, s.ttlMillis()).Int()
	if err != nil {
		return fmt.Errorf("set state of task %s: %w", id, err)
	}
	if n == 0 {
		return app.Errorf(app.ENotFound, "There is no task %q.", id)
	}
	return nil
}

// SaveState stores the worker's resumable state of the task id, replacing
// what was there.
func (s *Store) SaveState(ctx context.Context, id string, state []byte) error {
	if err := s.rdb.Set(ctx, runKey(id), state, s.ttl).Err(); err != nil {
		return fmt.Errorf("save state of task %s: %w", id, err)
	}
	return nil
}

// LoadState returns what SaveState stored for the task id, or nil, nil.
func (s *Store) LoadState(ctx context.Context, id string) ([]byte, error) {
	b, err := s.rdb.Get(ctx, runKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load state of task %s: %w", id, err)
	}
	return b, nil
}
