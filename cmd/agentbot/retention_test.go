package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// TestRetentionReachesRedis parses serve's retention settings as the
// command does and writes through the stores serve and its workers build
// from them: the TTLs and the trimmed audit stream are what was asked.
func TestRetentionReachesRedis(t *testing.T) {
	t.Parallel()
	_, rdb := testRedis(t)
	ctx := t.Context()
	// Audit streams in one-entry nodes, so that Redis' approximate
	// trimming is exact.
	if err := rdb.ConfigSet(ctx, "stream-node-max-entries", "1").Err(); err != nil {
		t.Fatal(err)
	}
	env, _, _ := testEnv(map[string]string{"AGENTBOT_TRACE_RETENTION": "36h"})
	fs := newFlagSet("serve", env)
	var cfg serveConfig
	cfg.register(fs)
	if err := parseFlags(fs, []string{"--task-retention", "2d", "--audit-retention", "1d", "--audit-max-entries", "5"}, env); err != nil {
		t.Fatal(err)
	}
	r := cfg.worker.retention
	ttlOf := func(key string, want time.Duration) {
		t.Helper()
		d, err := rdb.PTTL(ctx, key).Result()
		if err != nil || d <= want-time.Minute || d > want {
			t.Errorf("TTL of %s = %s (%v); want %s", key, d, err, want)
		}
	}

	task := app.Task{ID: "t-1", Delivery: "d-1", Event: "issue_comment", InstallationID: 7, Repo: "octo/hello", Number: 3,
		Verb: app.VerbFix, Requester: "alice", ReceivedAt: time.Now().UTC()}
	if _, err := r.client(rdb).Enqueue(ctx, task); err != nil {
		t.Fatal(err)
	}
	ttlOf("agentbot:task:t-1", 48*time.Hour)
	if err := r.store(rdb).SaveState(ctx, task.ID, []byte("state")); err != nil {
		t.Fatal(err)
	}
	ttlOf("agentbot:task:t-1:run", 48*time.Hour)
	if err := r.traceStore(rdb).Append(ctx, task.ID, app.TraceEvent{Kind: app.TracePhase, Name: "admission", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	ttlOf("agentbot:task:t-1:trace", 36*time.Hour)

	// Two entries older than the audit retention go at the next append,
	// by age; then the count bounds the stream.
	const stream = "agentbot:audit:7"
	old := strconv.FormatInt(time.Now().Add(-49*time.Hour).UnixMilli(), 10)
	for i := range 2 {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: old + "-" + strconv.Itoa(i), Values: []any{"e", "{}"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	audit, err := r.auditLog(rdb)
	if err != nil {
		t.Fatal(err)
	}
	appendAudit := func(n int) {
		for range n {
			if err := audit.Append(ctx, app.AuditEntryFor(app.AuditCommand, &task, "")); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendAudit(1)
	if msgs, err := rdb.XRange(ctx, stream, "-", "+").Result(); err != nil || len(msgs) != 1 || strings.HasPrefix(msgs[0].ID, old+"-") {
		t.Errorf("audit stream after one append: %v, %v; want only the new entry", msgs, err)
	}
	appendAudit(7)
	if n, err := rdb.XLen(ctx, stream).Result(); err != nil || n != 5 {
		t.Errorf("the audit stream holds %d entries (%v); want the newest 5", n, err)
	}
}

func TestRetentionFlags(t *testing.T) {
	t.Parallel()
	env, _, _ := testEnv(nil)
	fs := newFlagSet("worker", env)
	var r retention
	r.register(fs)
	if err := parseFlags(fs, nil, env); err != nil {
		t.Fatal(err)
	}
	if r.tasks != 30*24*time.Hour || r.traces != 30*24*time.Hour || r.audit != 90*24*time.Hour || r.auditEntries != 0 {
		t.Errorf("defaults: %+v", r)
	}
	if got := fs.Lookup("audit-retention").DefValue; got != "90d" {
		t.Errorf("--audit-retention's default reads %q; want 90d", got)
	}
	for _, tt := range []struct {
		args []string
		want string // "" for accepted
	}{
		{[]string{"--task-retention", "0"}, ""},
		{[]string{"--audit-retention", "0"}, ""},
		{[]string{"--trace-retention", "90m"}, ""},
		{[]string{"--trace-retention", "0"}, "must be longer than 0"},
		{[]string{"--task-retention", "1w"}, "not a duration such as 30d or 12h"},
		{[]string{"--audit-retention", "-1d"}, "not a number of days"},
		{[]string{"--audit-retention", "-5h"}, "negative"},
	} {
		fs := newFlagSet("worker", env)
		var r retention
		r.register(fs)
		err := parseFlags(fs, tt.args, env)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: %v; want %q", tt.args, err, tt.want)
		}
	}
}
