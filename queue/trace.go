package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Traces keeps each task's trace: a Redis list of JSON app.TraceEvent
// under agentbot:task:{id}:trace, in the order the steps ended, and the
// bytes it holds under agentbot:task:{id}:trace:bytes, which bound it to
// app.MaxTraceBytes. Both expire TTL after the last append, so traces of
// old tasks go away on their own while the audit log and the outcome stay.
type Traces struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

// DefaultTraceTTL is how long a trace is kept after its task's last step.
const DefaultTraceTTL = 30 * 24 * time.Hour

// NewTraces returns the trace store over rdb, which the caller closes;
// ttl <= 0 means DefaultTraceTTL.
func NewTraces(rdb redis.UniversalClient, ttl time.Duration) *Traces {
	if ttl <= 0 {
		ttl = DefaultTraceTTL
	}
	return &Traces{rdb: rdb, ttl: ttl}
}

func traceKey(id string) string      { return "agentbot:task:" + id + ":trace" }
func traceBytesKey(id string) string { return "agentbot:task:" + id + ":trace:bytes" }

// appendTraceScript appends an event unless the trace would pass its cap;
// the first event that would appends the cut marker instead, and marks
// the count past the cap so that nothing more is appended. One script, so
// that workers appending at once never pass the cap together.
//
//	KEYS: trace, its byte count
//	ARGV: event JSON, cut marker JSON, cap, ttl in milliseconds
//	returns 1 when the event was appended, 0 when not
var appendTraceScript = redis.NewScript(`
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
local cap = tonumber(ARGV[3])
local kept = 0
if used + #ARGV[1] <= cap then
	redis.call('RPUSH', KEYS[1], ARGV[1])
	redis.call('INCRBY', KEYS[2], #ARGV[1])
	kept = 1
elseif used <= cap then
	redis.call('RPUSH', KEYS[1], ARGV[2])
	redis.call('SET', KEYS[2], cap + 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return kept`)

// Append adds e to the trace of the task id, with its fields capped
// (app.TraceEvent.Capped) and e.Time stamped when zero. Once the trace
// holds app.MaxTraceBytes, a cut event ends it and later events are
// dropped without error. An event without a task or of an unknown kind is
// refused with an *app.Error.
func (tr *Traces) Append(ctx context.Context, id string, e app.TraceEvent) error {
	if id == "" {
		return app.Errorf(app.EInvalid, "A trace event needs a task id.")
	}
	if !e.Kind.Valid() {
		return app.Errorf(app.EInvalid, "Unknown trace event kind %q.", e.Kind)
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b, err := json.Marshal(e.Capped())
	if err != nil {
		return fmt.Errorf("encode trace event of task %s: %w", id, err)
	}
	cut, err := json.Marshal(app.TraceCutEvent(e.Time))
	if err != nil {
		return fmt.Errorf("encode trace event of task %s: %w", id, err)
	}
	err = appendTraceScript.Run(ctx, tr.rdb, []string{traceKey(id), traceBytesKey(id)},
		b, cut, app.MaxTraceBytes, tr.ttl.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("append %s to the trace of task %s: %w", e.Kind, id, err)
	}
	return nil
}

// Trace returns the trace of the task id, oldest event first, or an
// *app.Error with code app.ENotFound when there is none (never traced, or
// expired).
func (tr *Traces) Trace(ctx context.Context, id string) ([]app.TraceEvent, error) {
	raw, err := tr.rdb.LRange(ctx, traceKey(id), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read the trace of task %s: %w", id, err)
	}
	if len(raw) == 0 {
		return nil, app.Errorf(app.ENotFound, "There is no trace of task %q.", id)
	}
	events := make([]app.TraceEvent, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal([]byte(r), &events[i]); err != nil {
			return nil, fmt.Errorf("decode event %d of the trace of task %s: %w", i, id, err)
		}
	}
	return events, nil
}

// WriteJSONLines writes items one JSON object a line: the export format of
// the audit log and the download format of a trace.
func WriteJSONLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for i, it := range items {
		if err := enc.Encode(it); err != nil {
			return fmt.Errorf("write JSON line %d: %w", i+1, err)
		}
	}
	return nil
}
