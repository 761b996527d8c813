package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/agent/agenttest"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/redis/go-redis/v9"
)

const benchSteps = 30

// benchModel plays a 30-step trajectory in-process: reads, searches,
// listings, symbol lookups, edits and checks, then finish. It reports prompt
// tokens as four bytes a token of what it was sent, and times itself so the
// benchmark can take the model's time out.
type benchModel struct {
	mu      sync.Mutex
	spent   time.Duration
	prompts int64
	calls   int
}

func (m *benchModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	start := time.Now()
	defer func() {
		m.mu.Lock()
		m.spent += time.Since(start)
		m.mu.Unlock()
	}()
	i := 0
	size := 0
	for _, msg := range req.Messages {
		size += len(msg.Content)
		if msg.Role == llm.RoleAssistant {
			i++
		}
	}
	m.mu.Lock()
	m.prompts += int64(size / 4)
	m.calls++
	m.mu.Unlock()
	name, args := benchCall(i)
	return llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: name, Arguments: args}}},
		Usage:   llm.Usage{PromptTokens: int64(size / 4), CompletionTokens: 30},
	}, nil
}

func benchCall(i int) (string, string) {
	if i == benchSteps-1 {
		return "finish", `{"summary":"done"}`
	}
	switch i % 6 {
	case 0:
		return "read_file", fmt.Sprintf(`{"path":"pkg/file%02d.go"}`, i)
	case 1:
		return "search", fmt.Sprintf(`{"pattern":"func F%d_%d\\(","context":2}`, i, i)
	case 2:
		return "list_files", fmt.Sprintf(`{"path":"pkg","depth":1,"glob":"pkg/file%d*.go"}`, i%10)
	case 3:
		return "find_symbol", fmt.Sprintf(`{"name":"F%d_%d"}`, i, i)
	case 4:
		return "edit_file", fmt.Sprintf(`{"path":"calc.go","old_string":"// rev %d\n","new_string":"// rev %d\n"}`, i/6, i/6+1)
	}
	return "run_checks", `{}`
}

// digestModel answers digest requests at once.
type digestModel struct{}

func (m *digestModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "pkg/fileNN.go: 40 functions F0..F39 returning their index"}}, nil
}

// benchRunner passes every check at once; its time is the checks' own.
type benchRunner struct{}

func (benchRunner) Run(context.Context, sandbox.Cmd) (sandbox.Result, error) {
	return sandbox.Result{Stdout: []byte("ok  \texample.com/calc\t0.004s\n")}, nil
}

func benchTree(b *testing.B) *agenttest.Tree {
	files := map[string]string{
		"go.mod":  calcRepo["go.mod"],
		"calc.go": "package calc\n\n// rev 0\nfunc Add(a, b int) int { return a + b }\n",
	}
	for f := range 300 {
		var sb strings.Builder
		sb.WriteString("package pkg\n\n")
		for i := range 40 {
			// Each function is defined once and called from the next file.
			fmt.Fprintf(&sb, "// F%d_%d returns %d.\nfunc F%d_%d() int { return %d + F%d_%d() }\n\n", f, i, i, f, i, i, (f+1)%300, i)
		}
		files[fmt.Sprintf("pkg/file%02d.go", f)] = sb.String()
	}
	return agenttest.NewTree(b, files)
}

// BenchmarkLoop measures the harness's own time per step on a scripted
// 30-step task (everything but the model's and the checks' time: tools,
// git diffs, state saves to Redis, bookkeeping) and the prompt tokens sent
// per step, with the default window and with a window small enough that old
// results get digested.
func BenchmarkLoop(b *testing.B) {
	rds := redistest.Start(b)
	opts, err := redis.ParseURL(rds.URL)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	for _, window := range []int{128_000, 3_000} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			// Every round (b.N, -count) starts from an empty store, or it
			// would resume the previous round's finished tasks.
			if err := rdb.FlushDB(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
			var overhead time.Duration
			var tokens, steps int64
			for n := range b.N {
				b.StopTimer()
				tree := benchTree(b)
				model := &benchModel{}
				a, err := agent.New(context.Background(), agent.Config{
					TaskID: fmt.Sprintf("bench-%d", n), Policy: testPolicy(), Model: model, Fast: &digestModel{},
					Runner: benchRunner{}, Workspace: tree, Store: queue.NewStore(rdb), System: "s", Task: "t",
					ContextWindow: window, Logger: quiet,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				st, err := a.Run(context.Background())
				total := time.Since(start)
				if err != nil || st.Stop == nil || st.Stop.Reason != agent.StopDone || st.Step != benchSteps {
					b.Fatalf("%v, %+v after %d steps", err, st.Stop, st.Step)
				}
				overhead += total - model.spent
				tokens += model.prompts
				steps += int64(st.Step)
			}
			b.ReportMetric(float64(overhead.Microseconds())/1000/float64(steps), "overhead-ms/step")
			b.ReportMetric(float64(tokens)/float64(steps), "prompt-tokens/step")
			b.ReportMetric(0, "ns/op")
		})
	}
}
