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
// under agentbot:task:{id}:trace, in the order the steps ended. The list
// expires TTL after its last append, so traces of old tasks go away on
// their own while the audit log and the outcome stay.
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

func traceKey(id string) string { return "agentbot:task:" + id + ":trace" }

// Append adds e to the trace of the task id, with its arguments and result
// capped (app.MaxTraceField) and e.Time stamped when zero. An event without
// a task or of an unknown kind is refused with an *app.Error.
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
	_, err = tr.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, traceKey(id), b)
		p.Expire(ctx, traceKey(id), tr.ttl)
		return nil
	})
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
