package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/queue"
)

// Default retentions: a month of task records and traces, enough to answer
// for a pull request under review; three months of audit log, which
// "agentbot audit --json" exports for longer keeping.
const (
	defaultTaskRetention  = queue.DefaultTaskRetention
	defaultTraceRetention = queue.DefaultTraceTTL
	defaultAuditRetention = 90 * 24 * time.Hour
)

// retention is how long Redis keeps what serve and the workers write: task
// records, traces and the audit log. Serve's intake writes task records
// too, so both commands take these flags.
type retention struct {
	tasks, traces, audit time.Duration
	auditEntries         int64
}

func (r *retention) register(fs *flag.FlagSet) {
	r.tasks, r.traces, r.audit = defaultTaskRetention, defaultTraceRetention, defaultAuditRetention
	fs.Var(days{&r.tasks, true}, "task-retention", "keep a task's record and resumable state this long after its last change, such as 30d or 12h; 0 keeps them forever")
	fs.Var(days{&r.traces, false}, "trace-retention", "keep a task's trace this long after its last step, such as 30d")
	fs.Var(days{&r.audit, true}, "audit-retention", "drop audit log entries older than this, such as 90d; 0 keeps them forever")
	fs.Int64Var(&r.auditEntries, "audit-max-entries", 0, "keep about this many audit log entries per installation (default: no bound)")
}

// client is the intake's queue client, writing task records.
func (r retention) client(rdb redis.UniversalClient) *queue.Client {
	return queue.NewClient(rdb).WithRetention(r.tasks)
}

// store is the workers' task store.
func (r retention) store(rdb redis.UniversalClient) *queue.Store {
	return queue.NewStore(rdb).WithRetention(r.tasks)
}

// traceStore is where the workers append each task's trace.
func (r retention) traceStore(rdb redis.UniversalClient) *queue.Traces {
	return queue.NewTraces(rdb, r.traces)
}

// auditLog is the audit log the workers append to.
func (r retention) auditLog(rdb redis.UniversalClient) (*queue.Audit, error) {
	return queue.NewAudit(rdb, queue.AuditOptions{MaxLen: r.auditEntries, MaxAge: r.audit})
}

// days is a duration flag that also counts in days ("90d"), the unit
// retention is thought in; zero allows 0.
type days struct {
	d    *time.Duration
	zero bool
}

func (f days) String() string {
	if f.d == nil {
		return ""
	}
	if *f.d > 0 && *f.d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(*f.d/(24*time.Hour)), 10) + "d"
	}
	return f.d.String()
}

func (f days) Set(s string) error {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		v, err := strconv.ParseUint(n, 10, 16)
		if err != nil {
			return errors.New("not a number of days such as 30d")
		}
		d = time.Duration(v) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return errors.New("not a duration such as 30d or 12h")
		}
	}
	switch {
	case d < 0:
		return errors.New("negative")
	case d == 0 && !f.zero:
		return errors.New("must be longer than 0")
	}
	*f.d = d
	return nil
}
