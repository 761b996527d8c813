package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/agent/agenttest"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/tools/toolstest"
	"github.com/redis/go-redis/v9"
)

// The task's state lives in the queue's Redis store, as in production.
var _ agent.StateStore = (*queue.Store)(nil)

// worker is what a worker process is given.
type worker struct {
	RedisURL string `json:"redis_url"`
	ModelURL string `json:"model_url"`
	Tree     string `json:"tree"`
	Log      string `json:"log"` // every command that reaches the runner is appended here
}

const childEnv = "AGENTBOT_AGENT_TEST_WORKER"

// runWorker runs the task's loop as a worker would.
func runWorker(ctx context.Context, t testing.TB, w worker) (*agent.State, error) {
	opts, err := redis.ParseURL(w.RedisURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	client, err := llm.New(llm.Config{BaseURL: w.ModelURL, Timeout: 5 * time.Minute, Logger: quiet})
	if err != nil {
		return nil, err
	}
	tree := agenttest.OpenTree(t, w.Tree)
	a, err := agent.New(ctx, agent.Config{
		TaskID: "task-kill", Policy: killPolicy(), Model: client, Workspace: tree, Store: queue.NewStore(rdb),
		Runner: toolstest.HostRunner{Dir: w.Tree, OnRun: func(c sandbox.Cmd) { appendLine(w.Log, c.Shell) }},
		System: "s", Task: "t", Logger: quiet,
	})
	if err != nil {
		return nil, err
	}
	return a.Run(ctx)
}

func killPolicy() policy.Policy {
	p := testPolicy()
	p.Tools.Shell = policy.ToolRule{Policy: policy.ApprovalAuto}
	return p
}

func appendLine(file, line string) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// TestKillWorkerAndResume kills a worker process while it waits for the
// model and resumes the task in another worker on a fresh tree: the same
// transcript, the tree restored from the saved diff, no step done twice.
func TestKillWorkerAndResume(t *testing.T) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		var w worker
		if err := json.Unmarshal([]byte(cfg), &w); err != nil {
			t.Fatal(err)
		}
		_, err := runWorker(context.Background(), t, w)
		t.Fatalf("the worker was meant to be killed, but its loop returned: %v", err)
	}

	rds := redistest.Start(t)
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{
		step(call("read_file", `{"path":"calc_test.go"}`)),
		step(call("write_file", `{"path":"NOTES.md","content":"Add is off by one.\n"}`)),
		step(call("run_command", `{"command":"echo step three"}`)),
		// The worker is killed while it waits for this answer.
		{Delay: 10 * time.Minute, ToolCalls: []llmtest.Call{call("run_command", `{"command":"echo never"}`)}},
		step(call("edit_file", fixArgs)),
		step(call("run_checks", `{}`)),
		step(call("finish", finishArg)),
	}})
	base := agenttest.NewTree(t, calcRepo)
	first := base.Clone(t)
	w := worker{RedisURL: rds.URL, ModelURL: srv.URL(), Tree: first.Dir, Log: filepath.Join(t.TempDir(), "commands.log")}
	cfg, _ := json.Marshal(w)

	cmd := exec.Command(os.Args[0], "-test.run=^TestKillWorkerAndResume$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for len(srv.Requests()) < 4 {
		select {
		case err := <-exited:
			t.Fatalf("worker exited early: %v\n%s", err, out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("worker ended with %v, want killed", err)
	}

	second := base.Clone(t)
	w.Tree = second.Dir
	st, err := runWorker(context.Background(), t, w)
	if err != nil {
		t.Fatal(err)
	}
	wantStop(t, st, agent.StopDone, app.StateSucceeded)
	reqs := srv.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d requests, want 7", len(reqs))
	}
	if !sameMessages(reqs[3].Messages, reqs[4].Messages) {
		t.Error("the resumed worker did not send the transcript the killed one had")
	}
	if st.Step != 6 {
		t.Errorf("step %d, want 6: three answered before the kill, three after", st.Step)
	}
	if got := second.Read(t, "NOTES.md"); got != "Add is off by one.\n" {
		t.Errorf("NOTES.md on the new tree = %q: the saved diff was not applied", got)
	}
	log, err := os.ReadFile(w.Log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(log), "echo step three") != 1 || strings.Contains(string(log), "echo never") {
		t.Errorf("commands run:\n%s", log)
	}
	seen := map[string]bool{}
	for _, m := range st.Messages {
		if m.Role == llm.RoleTool {
			if seen[m.ToolCallID] {
				t.Errorf("call %s answered twice", m.ToolCallID)
			}
			seen[m.ToolCallID] = true
		}
	}
}
