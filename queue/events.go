package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Outcome events (app.OutcomeEvent: merged pull requests and reverts) are
// a second asynq task type in a queue of their own, served by an
// EventServer beside the task Server. Recording one takes a fetch and two
// diffs; in the task queue it would wait behind agent runs that hold every
// worker slot for many minutes.
const (
	// EventTaskType is the asynq type name of an outcome event.
	EventTaskType = "agentbot:outcome"
	// EventQueue is the asynq queue outcome events go to.
	EventQueue = "outcomes"
)

// eventTimeout bounds one run of an outcome event: a fetch and two diffs.
const eventTimeout = 10 * time.Minute

// EnqueueEvent queues e for an EventServer under e.ID. It reports
// duplicate, queueing nothing, when an event with e.ID is still queued;
// the delivery de-duplication (MarkSeen) covers the rest of the three
// days, and recording an outcome twice changes nothing.
func (c *Client) EnqueueEvent(ctx context.Context, e app.OutcomeEvent) (duplicate bool, err error) {
	payload, err := json.Marshal(e)
	if err != nil {
		return false, fmt.Errorf("encode outcome event %s: %w", e.ID, err)
	}
	return c.enqueue(ctx, asynq.NewTask(EventTaskType, payload), e.ID, EventQueue, eventTimeout)
}

// EventHandler records one outcome event. An error makes asynq retry it
// later; an event whose payload cannot be decoded is never retried.
type EventHandler interface {
	ProcessEvent(ctx context.Context, e app.OutcomeEvent) error
}

// EventServer takes queued outcome events and hands each to an
// EventHandler.
type EventServer struct {
	srv *asynq.Server
	h   EventHandler
}

// NewEventServer returns an EventServer over rdb, which the caller closes
// after Run returns. cfg is read as for NewServer.
func NewEventServer(rdb redis.UniversalClient, h EventHandler, cfg ServerConfig) *EventServer {
	return &EventServer{srv: asynq.NewServerFromRedisClient(rdb, cfg.asynqConfig(EventQueue)), h: h}
}

// Run processes outcome events until ctx is cancelled, then waits for the
// running ones (up to the shutdown timeout).
func (s *EventServer) Run(ctx context.Context) error {
	err := s.srv.Start(asynq.HandlerFunc(func(ctx context.Context, at *asynq.Task) error {
		var e app.OutcomeEvent
		if err := json.Unmarshal(at.Payload(), &e); err != nil {
			return fmt.Errorf("decode outcome event: %w: %w", err, asynq.SkipRetry)
		}
		return s.h.ProcessEvent(ctx, e)
	}))
	if err != nil {
		return fmt.Errorf("start outcome event server: %w", err)
	}
	<-ctx.Done()
	s.srv.Shutdown()
	return nil
}
