package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Handler does the work of one task. An error makes asynq retry the task
// later, at most MaxRetry times; an error that has a RetryAfter method
// (see Deferred) runs the task again after that delay without counting as
// a failure. A task whose payload cannot be decoded is never retried.
type Handler interface {
	ProcessTask(ctx context.Context, t app.Task) error
}

// Deferred is what a Handler's error implements to say that the task could
// not run yet — another task on the same issue holds its lock — and should
// run again after RetryAfter: it neither uses up one of the task's retries
// nor counts as a failure in the queue's statistics. A task that has used
// up its retries already is run again on the same worker instead.
type Deferred interface {
	error
	RetryAfter() time.Duration
}

// deferral returns the delay of a deferred task's error.
func deferral(err error) (time.Duration, bool) {
	d, ok := errors.AsType[Deferred](err)
	if !ok {
		return 0, false
	}
	return d.RetryAfter(), true
}

// ServerConfig tunes a Server.
type ServerConfig struct {
	Concurrency     int           // tasks processed at once; the number of CPUs when 0
	ShutdownTimeout time.Duration // how long Run waits for running tasks after cancellation; 8s when 0
	Logger          *slog.Logger  // slog.Default() when nil
	// PollInterval is how often an idle worker looks for a task; 100ms when
	// 0. It is how long a queued command may wait for an idle worker, and
	// costs one cheap Redis call per worker each time.
	PollInterval time.Duration
	// MaxPerInstallation is how many tasks of one installation run at
	// once across all the servers sharing the Redis while a task of
	// another installation waits (see Slots); no limit when 0. A task held
	// back goes back to the queue without using up a retry, and is woken
	// when a slot frees, or tried again after SlotRetry (DefaultSlotRetry
	// when 0) should no wake come.
	MaxPerInstallation int
	SlotRetry          time.Duration
}

// Server is the consumer side: it takes queued tasks and hands each to a
// Handler.
type Server struct {
	srv   *asynq.Server
	h     Handler
	slots *Slots // nil without a per-installation limit
	retry time.Duration
	log   *slog.Logger
}

// NewServer returns a Server over rdb, which the caller closes after Run
// returns.
func NewServer(rdb redis.UniversalClient, h Handler, cfg ServerConfig) *Server {
	ac := cfg.asynqConfig(DefaultQueue)
	ac.IsFailure = func(err error) bool {
		_, deferred := deferral(err)
		return !deferred
	}
	ac.RetryDelayFunc = func(n int, err error, t *asynq.Task) time.Duration {
		if d, ok := deferral(err); ok {
			return d
		}
		if errors.Is(err, asynq.ErrLeaseExpired) {
			// The task's worker died; the task resumes from its saved
			// state at once on another. asynq has already waited out the
			// lease (a minute or two) before it says so.
			return time.Second
		}
		return asynq.DefaultRetryDelayFunc(n, err, t)
	}
	// A deferred task waits in asynq's retry set; this is how late it may be
	// moved back to the queue after its delay.
	ac.DelayedTaskCheckInterval = time.Second
	s := &Server{srv: asynq.NewServerFromRedisClient(rdb, ac), h: h, retry: cfg.SlotRetry, log: cfg.Logger}
	if s.retry <= 0 {
		s.retry = DefaultSlotRetry
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if cfg.MaxPerInstallation > 0 {
		s.slots = NewSlots(rdb, cfg.MaxPerInstallation)
		s.slots.log = s.log
	}
	return s
}

// asynqConfig is cfg, with its defaults, as asynq's configuration of a
// server that consumes queue.
func (cfg ServerConfig) asynqConfig(queue string) asynq.Config {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	poll := cfg.PollInterval
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	return asynq.Config{
		Concurrency:       cfg.Concurrency,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		TaskCheckInterval: poll,
		Queues:            map[string]int{queue: 1},
		Logger:            asynqLogger{log},
		LogLevel:          asynq.WarnLevel,
	}
}

// Run processes tasks until ctx is cancelled, then waits for running tasks
// (up to the shutdown timeout; unfinished ones go back to the queue).
func (s *Server) Run(ctx context.Context) error {
	err := s.srv.Start(asynq.HandlerFunc(func(ctx context.Context, at *asynq.Task) error {
		var t app.Task
		if err := json.Unmarshal(at.Payload(), &t); err != nil {
			return fmt.Errorf("decode task: %w: %w", err, asynq.SkipRetry)
		}
		for {
			err := s.process(ctx, t)
			d, deferred := deferral(err)
			if !deferred || !lastAttempt(ctx) {
				return err
			}
			// asynq archives a task on its last attempt whatever its
			// error says, so a task that used up its retries waits here.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
	}))
	if err != nil {
		return fmt.Errorf("start queue server: %w", err)
	}
	<-ctx.Done()
	s.srv.Shutdown()
	return nil
}

// process hands t to the Handler, within its installation's limit; a
// control verb (stop, status, help) takes no slot, or a stop would wait
// for the very task it is to stop. A task on its last attempt is not
// parked: Run waits with it instead.
func (s *Server) process(ctx context.Context, t app.Task) error {
	if s.slots == nil || t.Verb.Control() {
		return s.h.ProcessTask(ctx, t)
	}
	return s.slots.withSlot(ctx, t, s.retry, !lastAttempt(ctx), s.log, func(ctx context.Context) error {
		return s.h.ProcessTask(ctx, t)
	})
}

// lastAttempt reports whether the task of ctx has used up its retries.
func lastAttempt(ctx context.Context) bool {
	n, ok := asynq.GetRetryCount(ctx)
	most, _ := asynq.GetMaxRetry(ctx)
	return ok && n >= most
}

// asynqLogger sends asynq's logs to slog.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...), "component", "asynq") }

// Fatal is called by asynq only when it cannot go on; its contract is to
// exit the process.
func (l asynqLogger) Fatal(args ...any) {
	l.log.Error(fmt.Sprint(args...), "component", "asynq", "fatal", true)
	os.Exit(1)
}
