package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestServeRefusesBadScaleSettings(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis-url", "redis://127.0.0.1:1/0", "--redis-min-replicas", "-1"}, "--redis-min-replicas"},
		{[]string{"--redis-url", "redis://127.0.0.1:1?master_name=m&addr=nohostport"}, "parse redis sentinel url"},
		{[]string{"--redis-url", "redis://127.0.0.1:1/0", "--max-per-installation", "-2"}, "--max-per-installation -2"},
	} {
		env, _, _ := testEnv(map[string]string{"AGENTBOT_WEBHOOK_SECRET": "s"})
		err := run(t.Context(), append([]string{"serve", "--addr", "127.0.0.1:0", "--no-workers", "--admin-addr", "off"}, tt.args...), env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %v = %v; want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestMaxPerInstallation(t *testing.T) {
	for _, tt := range []struct {
		concurrency, flag, want int
		err                     string
	}{
		{concurrency: 2, want: 1},
		{concurrency: 8, want: 4},
		{concurrency: 1, want: 1}, // never 0, which would run nothing
		{concurrency: 8, flag: 3, want: 3},
		{concurrency: 2, flag: -1, err: "--max-per-installation -1: must not be negative"},
	} {
		c := workerConfig{concurrency: tt.concurrency, perInstallation: tt.flag}
		got, err := c.maxPerInstallation()
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("concurrency %d, flag %d: error %v; want %q", tt.concurrency, tt.flag, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("concurrency %d, flag %d: %d, %v; want %d", tt.concurrency, tt.flag, got, err, tt.want)
		}
	}
}

func TestTasksListThroughSentinels(t *testing.T) {
	d := redistest.StartSentinel(t, 1)
	rdb, err := queue.Connect(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	task := app.Task{ID: "s1", Delivery: "d1", Event: "issue_comment", InstallationID: 1, Repo: "octo/hello",
		Number: 4, Verb: app.VerbFix, Requester: "alice", ReceivedAt: time.Now().UTC()}
	if _, err := queue.NewClient(rdb).Enqueue(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	env, out, _ := testEnv(nil)
	if err := run(t.Context(), []string{"tasks", "list", "--redis-url", d.URL}, env); err != nil {
		t.Fatalf("tasks list through the sentinels: %v", err)
	}
	if !strings.Contains(out.String(), "s1") {
		t.Errorf("tasks list through the sentinels:\n%s\nwant task s1", out)
	}
}
