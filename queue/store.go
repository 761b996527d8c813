package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// Store reads and updates task records and their per-issue index, and
// keeps what a task's workers share: the loop's resumable state, the
// runner's progress, stop requests, approval decisions and refusal
// limits. What it writes expires its retention after the task's last change, so
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

func taskKey(id string) string     { return "agentbot:task:" + id }
func runKey(id string) string      { return "agentbot:task:" + id + ":run" }
func progressKey(id string) string { return "agentbot:task:" + id + ":progress" }
func stopKey(id string) string     { return "agentbot:task:" + id + ":stop" }
func decisionKey(id string) string { return "agentbot:task:" + id + ":decision" }

// issueRef names an issue or pull request in a key: GitHub compares
// repository names without regard to case.
func issueRef(repo string, number int) string {
	return strings.ToLower(repo) + "#" + strconv.Itoa(number)
}

func issueKey(repo string, number int) string { return "agentbot:issue:" + issueRef(repo, number) }

// createScript stores a task's record and adds it to the index of all
// tasks and to its issue's, unless its delivery was already answered
// (KEYS[3] exists), in one atomic step: a delivery that is remembered
// never gains a record afterwards, and a record is never missing from its
// issue's index. Fields already there are kept, so writing a record again
// changes nothing. With a retention (ARGV[6] milliseconds, 0 for none)
// the record expires that long after, the issue's index no sooner (GT:
// writers with a longer retention may have extended it), and the index of
// all tasks forgets the tasks received before ARGV[7], whose records have
// expired already; without one, the issue's index is kept as its record. The record names its issue's index (field
// "index"), so that a later change renews the index with the record.
//
//	KEYS: task record, index of all tasks, delivery, issue's index
//	ARGV: task JSON, state, updated_at, score, id, retention, oldest kept score
var createScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('HSETNX', KEYS[1], 'task', ARGV[1])
redis.call('HSETNX', KEYS[1], 'state', ARGV[2])
redis.call('HSETNX', KEYS[1], 'updated_at', ARGV[3])
redis.call('HSETNX', KEYS[1], 'index', KEYS[4])
redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[5])
local fresh = redis.call('EXISTS', KEYS[4]) == 0
redis.call('ZADD', KEYS[4], 'NX', ARGV[4], ARGV[5])
if ARGV[6] == '0' then
	redis.call('PERSIST', KEYS[4])
else
	redis.call('PEXPIRE', KEYS[1], ARGV[6])
	if fresh then
		redis.call('PEXPIRE', KEYS[4], ARGV[6])
	else
		redis.call('PEXPIRE', KEYS[4], ARGV[6], 'GT')
	end
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
	keys := []string{taskKey(t.ID), indexKey, deliveryKey(t.Delivery), issueKey(t.Repo, t.Number)}
	n, err := createScript.Run(ctx, s.rdb, keys,
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
	recs, _, err := s.records(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return recs, nil
}

// TasksOfIssue returns the records of every task asked on the issue or
// pull request repo#number, newest first, through the issue's index: how
// many tasks arrive elsewhere, or on the issue itself, never hides one.
// Ids whose records have expired are dropped from the index.
func (s *Store) TasksOfIssue(ctx context.Context, repo string, number int) ([]Record, error) {
	key := issueKey(repo, number)
	ids, err := s.rdb.ZRevRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list tasks of %s#%d: %w", repo, number, err)
	}
	recs, gone, err := s.records(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("list tasks of %s#%d: %w", repo, number, err)
	}
	if len(gone) > 0 {
		if err := s.rdb.ZRem(ctx, key, gone).Err(); err != nil {
			return nil, fmt.Errorf("forget expired tasks of %s#%d: %w", repo, number, err)
		}
	}
	return recs, nil
}

// records reads the records of ids in one round trip, in their order;
// gone are the ids that have no record (any more).
func (s *Store) records(ctx context.Context, ids []string) (recs []Record, gone []any, err error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, taskKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	recs = make([]Record, 0, len(ids))
	for i, id := range ids {
		r, err := decodeRecord(id, cmds[i].Val())
		if app.ErrorCode(err) == app.ENotFound {
			gone = append(gone, id) // indexed but its record is gone: nothing to show
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, r)
	}
	return recs, gone, nil
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
// retention (ARGV[4] milliseconds, 0 for none) and, where it is shorter,
// that of its issue's index, which the record names.
var setStateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'step', ARGV[2], 'updated_at', ARGV[3])
if ARGV[4] ~= '0' then
	redis.call('PEXPIRE', KEYS[1], ARGV[4])
	local index = redis.call('HGET', KEYS[1], 'index')
	if index then redis.call('PEXPIRE', index, ARGV[4], 'GT') end
end
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
	b, err := s.get(ctx, runKey(id))
	if err != nil {
		return nil, fmt.Errorf("load state of task %s: %w", id, err)
	}
	return b, nil
}

// SaveProgress stores the runner's own progress on the task id (opaque to
// the queue), replacing what was there; it expires with the task's record.
func (s *Store) SaveProgress(ctx context.Context, id string, progress []byte) error {
	if err := s.rdb.Set(ctx, progressKey(id), progress, s.ttl).Err(); err != nil {
		return fmt.Errorf("save progress of task %s: %w", id, err)
	}
	return nil
}

// LoadProgress returns what SaveProgress stored for the task id, or nil,
// nil.
func (s *Store) LoadProgress(ctx context.Context, id string) ([]byte, error) {
	b, err := s.get(ctx, progressKey(id))
	if err != nil {
		return nil, fmt.Errorf("load progress of task %s: %w", id, err)
	}
	return b, nil
}

// RequestStop asks the running task id to stop on behalf of login; the
// task's worker watches for it with StopRequested.
func (s *Store) RequestStop(ctx context.Context, id, login string) error {
	if login == "" {
		return app.Errorf(app.EInvalid, "A stop request for task %q needs the login of who asked.", id)
	}
	if err := s.rdb.Set(ctx, stopKey(id), login, s.ttl).Err(); err != nil {
		return fmt.Errorf("request task %s to stop: %w", id, err)
	}
	return nil
}

// StopRequested returns the login that asked the task id to stop, or ""
// while nobody did.
func (s *Store) StopRequested(ctx context.Context, id string) (login string, err error) {
	b, err := s.get(ctx, stopKey(id))
	if err != nil {
		return "", fmt.Errorf("look for a stop request of task %s: %w", id, err)
	}
	return string(b), nil
}

// RecordDecision stores an approver's decision on the call the paused
// task id waits on (opaque to the queue), replacing an earlier one.
func (s *Store) RecordDecision(ctx context.Context, id string, decision []byte) error {
	if err := s.rdb.Set(ctx, decisionKey(id), decision, s.ttl).Err(); err != nil {
		return fmt.Errorf("record the decision on task %s: %w", id, err)
	}
	return nil
}

// Decision returns what RecordDecision stored for the task id, or nil, nil.
func (s *Store) Decision(ctx context.Context, id string) ([]byte, error) {
	b, err := s.get(ctx, decisionKey(id))
	if err != nil {
		return nil, fmt.Errorf("read the decision on task %s: %w", id, err)
	}
	return b, nil
}

// RefusalWindow is how often at most one person is answered a refusal on
// one issue:
// the refusals of someone who may not command agentbot are not answered
// more often, so that their comments cannot make it post at will.
const RefusalWindow = time.Hour

func refusalKey(repo string, number int, login string) string {
	return "agentbot:refusal:" + issueRef(repo, number) + ":" + strings.ToLower(login)
}

// claimScript gives the refusal slot to a task unless another task holds
// it, and gives it back to its holder, in one step: a task whose refusal
// failed to post and is run again still posts it.
//
//	KEYS: refusal slot
//	ARGV: task id, window in milliseconds
var claimScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder == false then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
if holder == ARGV[1] then return 1 end
return 0`)

// ClaimRefusal reports whether the task id may tell login of a refusal on
// repo#number: yes for the first task refused to login there in a
// RefusalWindow (again, when that task is run again), no for every other
// one, which ends without a word. Two workers refusing at once agree on
// which one answers.
func (s *Store) ClaimRefusal(ctx context.Context, repo string, number int, login, id string) (bool, error) {
	n, err := claimScript.Run(ctx, s.rdb, []string{refusalKey(repo, number, login)}, id, RefusalWindow.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("limit refusals of %s on %s#%d: %w", login, repo, number, err)
	}
	return n == 1, nil
}

// get reads the string key, nil when it is missing.
func (s *Store) get(ctx context.Context, key string) ([]byte, error) {
	b, err := s.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}
