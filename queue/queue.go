// Package queue is everything agentbot keeps in Redis, behind typed
// operations: the task queue (asynq), the task records behind "agentbot
// tasks" and their per-issue index, the delivery de-duplication of the
// webhook, the per-task state a worker resumes from (the loop's and the
// runner's progress), stop requests, notes, approval decisions, refusal
// limits, the per-issue locks, traces, the audit log, outcomes, and what
// is kept with agentbot's own pull requests.
//
// The webhook side uses a Client: Enqueue stores a task's record, then
// queues it under the task's ID, so a redelivered webhook finds its task
// already there. The worker side runs a Server that hands each queued task
// to a Handler. A Store reads and updates records and state; Client and
// Server share one Redis connection pool made by Connect, to one server or
// through Redis Sentinel.
//
// # Keys
//
// Every key queue writes, its type and its lifetime. "retention" is the
// task retention (Store.WithRetention, DefaultTaskRetention unless set;
// none when 0), counted from the task's last write; "kept" keys have no
// expiry; "trimmed" ones have none either, but their length is bounded.
// A test writes through every operation and holds Redis to this list.
//
//	agentbot:task:{id}                  hash    retention  record: task (JSON app.Task), state, step, updated_at, index
//	agentbot:task:{id}:run              string  retention  the loop's resumable state (opaque bytes)
//	agentbot:task:{id}:progress         string  retention  the runner's own progress (opaque bytes)
//	agentbot:task:{id}:stop             string  retention  the login that asked the running task to stop
//	agentbot:task:{id}:decision         string  retention  an approver's decision on the paused task (opaque bytes)
//	agentbot:task:{id}:notes            list    retention  JSON app.Note: the notes of "/agent note" for the task, oldest first; at most MaxNotes
//	agentbot:task:{id}:trace            list    trace      JSON app.TraceEvent, oldest first; TTL after the last append; at most app.MaxTraceBytes and a cut event
//	agentbot:task:{id}:trace:bytes      string  trace      the bytes of events the trace holds, past app.MaxTraceBytes once cut; expires with it
//	agentbot:tasks                      zset    trimmed    task ids by received time (ms); tasks older than the retention leave it
//	agentbot:issue:{repo}#{n}           zset    retention  ids of the tasks asked on one issue or pull request, by received time
//	agentbot:delivery:{id}              string  72h        a webhook delivery already answered (DeliveryTTL)
//	agentbot:body:{digest}              string  72h        the delivery that first carried a queued webhook body (its hex SHA-256), for DeliveryTTL
//	agentbot:refusal:{repo}#{n}:{who}   string  1h         the one task that answers who a refusal on the issue (RefusalWindow)
//	agentbot:pull:{repo}#{n}            string  kept       JSON app.AgentPull: who asked for the task that opened agentbot's pull request repo#n
//	agentbot:pull:{repo}#{n}:ci         hash    retention  how each failing check on each head of the pull request was answered: field "{installation} {repo id} {head} {app} {check}", JSON app.CIAnswer
//	agentbot:lock:{key}                 string  lock       the task holding key (an issue); the TTL its owner renews
//	agentbot:installation:{id}:running  zset    slot       ids of an installation's running tasks by lease expiry (ms); expires with the last lease (Slots)
//	agentbot:installation:{id}:waiting  zset    wait       ids of an installation's tasks queued and not yet running, by expiry (ms); expires with the last (Slots)
//	agentbot:installation:{id}:parked   zset    wait       the waiting tasks held back by the limit, to be woken, by expiry (ms); expires with the last (Slots)
//	agentbot:installations:waiting      zset    wait       installations that have waiting tasks, by the expiry of their latest (ms); expires with it (Slots)
//	agentbot:worker:{id}:lease          string  lease      a running worker's holder (WorkerLeases); DefaultLeaseTTL after its last refresh
//	agentbot:deployment                 string  kept       the random id of the deployment using this Redis, in every worker's id (WorkerLeases.Deployment)
//	agentbot:audit:{installation}       stream  trimmed    field "e": JSON app.AuditEntry; bounded by AuditOptions
//	agentbot:audit:installations        set     kept       installations that have an audit stream
//	agentbot:outcome:{task}             string  kept       JSON app.TaskOutcome
//	agentbot:outcomes                   zset    kept       task ids by finish time (ms)
//	agentbot:outcome:pr:{repo}#{n}      string  kept       the task whose pull request is repo#n
//	agentbot:task:{id}:spent            hash    spend      what a loop (the task's, or an attempt's, {id}-attempt-{n}) has spent so far, as counted in budgets: t tokens, u micro-dollars (Budgets)
//	agentbot:spend:{scope}:{id}         hash    spend      an installation's, repository's or requester's spending by id, by the hour: t:{hour} tokens, u:{hour} micro-dollars (hour: unix hours); name for people
//	agentbot:spenders                   zset    trimmed    "{scope}:{id}" of each subject that spent, by its latest spending (ms); those older than SpendHistory leave it
//	asynq:*                             asynq   asynq      asynq's queues, task payloads and server state
//
// "spend" is SpendHistory (the longest budget window and a day) after the
// key's last write; a subject's hash drops the hours older than that as
// new ones arrive.
//
// {repo} and {who} are lower-cased, as GitHub compares them. The per-issue
// index is kept with the record in one script, so a task that has a
// record is always found on its issue, however many other tasks arrive;
// it expires with the last of its records, and TasksOfIssue drops the ids
// whose records have expired.
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

// Client is the producer side: it enqueues tasks and remembers deliveries.
type Client struct {
	rdb     redis.UniversalClient
	aq      *asynq.Client
	store   *Store
	durable durability // see WithMinReplicas
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
	// Listed before it is queued, or a worker could take it first and
	// leave it listed.
	if err := listWaiting(ctx, c.rdb, t); err != nil {
		return false, err
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

// Ping checks that Redis answers.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

func deliveryKey(delivery string) string { return "agentbot:delivery:" + delivery }
