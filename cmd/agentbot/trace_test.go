package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
)

func TestTraceCommand(t *testing.T) {
	t.Parallel()
	rs, rdb := testRedis(t)
	tr := queue.NewTraces(rdb, time.Hour)
	for _, e := range []app.TraceEvent{
		{Kind: app.TraceModelCall, Step: 1, Name: "plugsky-coder", Duration: 2 * time.Second, PromptTokens: 1000, CompletionTokens: 50, Cost: 0.01, Outcome: "ok"},
		{Kind: app.TraceToolCall, Step: 1, Name: "patch", Args: `{"path":"stats.go"}`, Outcome: "ok"},
		{Kind: app.TraceCheck, Step: 2, Name: "test", Outcome: "passed", Detail: "go test ./..."},
	} {
		if err := tr.Append(t.Context(), "t1", e); err != nil {
			t.Fatal(err)
		}
	}
	trace := func(args ...string) (string, error) {
		env, out, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
		err := cmdTrace(t.Context(), args, env)
		return out.String(), err
	}

	table, err := trace("t1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 steps, 1 model calls (1000+50 tokens, $0.0100), 1 tool calls, checks 1 passed 0 failed", "plugsky-coder", `{"path":"stats.go"}`, "go test ./..."} {
		if !strings.Contains(table, want) {
			t.Errorf("trace t1 lacks %q:\n%s", want, table)
		}
	}

	jsonl, err := trace("t1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(jsonl), "\n")
	var first app.TraceEvent
	if len(lines) != 3 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.PromptTokens != 1000 {
		t.Errorf("trace t1 --json printed:\n%s", jsonl)
	}

	md, err := trace("--markdown", "t1")
	if err != nil || !strings.Contains(md, "### Trace of task `t1`") || !strings.Contains(md, "<details>") {
		t.Errorf("trace --markdown t1: %v\n%s", err, md)
	}

	// "agentbot tasks trace ID" is the same command.
	env, out, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
	if err := run(t.Context(), []string{"tasks", "trace", "t1", "--json"}, env); err != nil || out.String() != jsonl {
		t.Errorf("tasks trace t1 --json: %v\n%s\nwant:\n%s", err, out, jsonl)
	}

	if _, err := trace("nope"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("trace of an unknown task: %v, want not found", err)
	}
	for _, bad := range [][]string{{}, {"t1", "t2"}, {"t1", "--json", "--markdown"}} {
		if out, err := trace(bad...); err == nil || out != "" {
			t.Errorf("trace %q: err %v, printed %q; want an error and nothing printed", bad, err, out)
		}
	}
}
