// Package queue is everything agentbot keeps in Redis: the task queue
// (asynq), the task records behind "agentbot tasks", the delivery
// de-duplication of the webhook, and the per-task state a worker resumes
// from.
//
// The webhook side uses a Client: Enqueue stores a task's record, then
// queues it under the task's ID, so a redelivered webhook finds its task
// already there. The worker side runs a Server that hands each queued task
// to a Handler. A Store reads and updates records and state; Client and
// Server share one Redis connection pool made by Connect.
//
// Keys, all under "agentbot:":
//
//	agentbot:task:{id}       hash: task (JSON app.Task), state, step, updated_at;
//	                         expires the retention after its last change
//	agentbot:task:{id}:run   the worker's resumable state (opaque bytes), likewise
//	agentbot:tasks           sorted set of task ids by received time, trimmed to
//	                         the retention as tasks arrive
//	agentbot:delivery:{id}   a webhook delivery already answered, for DeliveryTTL
//	agentbot:body:{sha256}   the delivery id that first carried a queued webhook
//	                         body (hex SHA-256 of the body), for DeliveryTTL
//
// and asynq's own keys under "asynq:".
package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// TaskType is the asynq type name of an agentbot task.
const TaskType = "agentbot:task"

// DefaultQueue is the asynq queue tasks go to.
const DefaultQueue = "default"

// DeliveryTTL is how long a delivery id is remembered. GitHub lets a
// delivery be redelivered for three days.
const DeliveryTTL = 72 * time.Hour

// MaxRetry is how many times a task whose handler failed is run again. A few
// retries ride out a worker's crash or a GitHub outage; more would repeat a
// failure the user should hear about.
const MaxRetry = 3

// MaxTaskTime bounds one run of a task whatever its policy says; the
// runner enforces the policy's own, shorter budgets. Without it asynq
// cancels every task after 30 minutes.
const MaxTaskTime = 3 * time.Hour

// Connect opens a connection pool to the Redis at url
// (redis://[:password@]host:port/db). Its timeouts are short on purpose: the
// webhook must answer 503 within two seconds when Redis is gone, never hang.
func Connect(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	opt.DialTimeout = 500 * time.Millisecond
	opt.ReadTimeout = 500 * time.Millisecond
	opt.WriteTimeout = 500 * time.Millisecond
	opt.PoolTimeout = 500 * time.Millisecond
	opt.MaxRetries = 1
	// A burst of deliveries each holds a connection for a few round trips;
	// the default pool (ten per CPU) makes them queue for one.
	opt.PoolSize = max(opt.PoolSize, 128)
	return redis.NewClient(opt), nil
}

// Client is the producer side: it enqueues tasks and remembers deliveries.
type Client struct {
	rdb   redis.UniversalClient
	aq    *asynq.Client
	store *Store
}

// NewClient returns a Client over rdb, which the caller closes, whose
// records have the default retention.
func NewClient(rdb redis.UniversalClient) *Client {
	return &Client{rdb: rdb, aq: asynq.NewClientFromRedisClient(rdb), store: NewStore(rdb)}
}

// WithRetention returns a copy of c whose records are kept for ttl (0:
// forever); see Store.WithRetention.
func (c *Client) WithRetention(ttl time.Duration) *Client {
	cc := *c
	cc.store = c.store.WithRetention(ttl)
	return &cc
}

// Enqueue records t (state queued) and queues it for a worker under t.ID.
// It reports duplicate, queueing nothing new, when t's delivery was already
// marked by MarkSeen or a task with t.ID is already queued; the record keeps
// what was first stored. The record is written first so that a worker
// always finds it, and writing it again is harmless, so a failed Enqueue may
// simply be retried.
func (c *Client) Enqueue(ctx context.Context, t app.Task) (duplicate bool, err error) {
	payload, fresh, err := c.store.create(ctx, t)
	if err != nil {
		return false, err
	}
	if !fresh {
		return true, nil // the delivery was answered before
	}
	return c.enqueue(ctx, asynq.NewTask(TaskType, payload), t.ID, DefaultQueue, MaxTaskTime)
}

// enqueue queues task under id in queue, with the retries every task has
// and timeout. It reports duplicate when a task with id is still queued.
func (c *Client) enqueue(ctx context.Context, task *asynq.Task, id, queue string, timeout time.Duration) (duplicate bool, err error) {
	_, err = c.aq.EnqueueContext(ctx, task, asynq.TaskID(id), asynq.Queue(queue),
		asynq.MaxRetry(MaxRetry), asynq.Timeout(timeout))
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("enqueue %s %s: %w", task.Type(), id, err)
	}
	return false, nil
}

// MarkSeen remembers delivery for DeliveryTTL and reports whether it was
// already remembered, in one atomic step. Call it only once the delivery's
// work is durably done (its task enqueued): a delivery marked before a
// failed enqueue would make GitHub's redelivery look like a duplicate and
// the command would be lost.
func (c *Client) MarkSeen(ctx context.Context, delivery string) (already bool, err error) {
	fresh, err := c.rdb.SetNX(ctx, deliveryKey(delivery), 1, DeliveryTTL).Result()
	if err != nil {
		return false, fmt.Errorf("mark delivery %s: %w", delivery, err)
	}
	return !fresh, nil
}

// Ping checks that Redis answers.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

func deliveryKey(delivery string) string { return "agentbot:delivery:" + delivery }
