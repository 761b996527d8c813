package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
)

func TestTasksListAndShow(t *testing.T) {
	rs, rdb := testRedis(t)
	c := queue.NewClient(rdb)
	now := time.Now().UTC().Truncate(time.Second)
	for i, task := range []app.Task{
		{ID: "a1", Delivery: "d1", Event: "issue_comment", InstallationID: 1, Repo: "octo/hello", Number: 4,
			Verb: app.VerbStatus, Requester: "alice", ReceivedAt: now},
		{ID: "b2", Delivery: "d2", Event: "pull_request_review_comment", InstallationID: 1, Repo: "octo/hello", Number: 5,
			IsPR: true, Verb: app.VerbFix, Instructions: "rename x\nto y", Requester: "bob", ReceivedAt: now.Add(time.Minute),
			ReviewComment: &app.ReviewComment{ID: 9, Path: "main.go", Line: 12}},
	} {
		if _, err := c.Enqueue(t.Context(), task); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	if err := queue.NewStore(rdb).SetState(t.Context(), "b2", app.StateRunning, "step 3"); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"AGENTBOT_REDIS_URL": rs.URL}
	tasks := func(args ...string) string {
		t.Helper()
		env, out, _ := testEnv(vars)
		if err := run(t.Context(), append([]string{"tasks"}, args...), env); err != nil {
			t.Fatalf("tasks %v: %v", args, err)
		}
		return out.String()
	}

	var list []map[string]any
	if err := json.Unmarshal([]byte(tasks("list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0]["id"] != "b2" || list[1]["id"] != "a1" {
		t.Fatalf("tasks list --json = %v; want b2 then a1", list)
	}
	for _, field := range []string{"id", "delivery", "repo", "number", "is_pr", "verb", "instructions", "requester", "state", "created_at"} {
		if _, ok := list[1][field]; !ok {
			t.Errorf("tasks list --json lacks %q: %v", field, list[1])
		}
	}

	var shown map[string]any
	if err := json.Unmarshal([]byte(tasks("show", "b2", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "b2", "repo": "octo/hello", "number": 5.0, "is_pr": true, "verb": "fix",
		"instructions": "rename x\nto y", "requester": "bob", "state": "running", "step": "step 3", "delivery": "d2"}
	for k, v := range want {
		if shown[k] != v {
			t.Errorf("tasks show b2 --json: %s = %v; want %v", k, shown[k], v)
		}
	}

	table := tasks("list")
	for _, want := range []string{"a1", "queued", "octo/hello#4 (issue)", "b2", "running", "octo/hello#5 (PR)"} {
		if !strings.Contains(table, want) {
			t.Errorf("tasks list lacks %q:\n%s", want, table)
		}
	}
	text := tasks("show", "b2")
	for _, want := range []string{"running step 3", "main.go:12", "  to y"} {
		if !strings.Contains(text, want) {
			t.Errorf("tasks show lacks %q:\n%s", want, text)
		}
	}

	env, _, _ := testEnv(vars)
	if err := run(t.Context(), []string{"tasks", "show", "zz"}, env); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("tasks show of a missing id = %v; want not found", err)
	}
	for _, args := range [][]string{{"tasks"}, {"tasks", "show"}, {"tasks", "list", "extra"}, {"tasks", "drop"}} {
		if err := run(t.Context(), args, env); exitCode(err) != 2 || !strings.Contains(err.Error(), "--help') ") && !strings.HasSuffix(err.Error(), "--help')") {
			t.Errorf("%v = %v; want a usage error", args, err)
		}
	}
}
