package main

import (
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/agent/agenttest"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/tools/toolstest"
)

// TestServerPricesStopATask runs the loop with the workers' model client
// built from a server config with prices: the run's cost is what the
// prices say, and the operator's limits.cost_usd stops it.
func TestServerPricesStopATask(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(file, []byte(`
models:
  - {name: edit-model, prompt: 2, cached_prompt: 0.5, completion: 8}
policy:
  limits: {cost_usd: 5, tokens: 100000000}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	server, err := policy.LoadServerConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	read := llmtest.Step{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: llmtest.Arguments(`{"path":"README"}`)}}}
	srv := llmtest.NewServer(t, llmtest.Script{
		// $3.40 an answer: 0.6M uncached prompt tokens at $2, 0.4M cached
		// at $0.50, 0.25M completion tokens at $8.
		Usage: llmtest.Usage{PromptTokens: 1_000_000, CachedTokens: 400_000, CompletionTokens: 250_000},
		Steps: []llmtest.Step{read, read, read, read},
	})
	env, _, _ := testEnv(map[string]string{"AGENTBOT_LLM_BASE_URL": srv.URL()})
	quiet := slog.New(slog.DiscardHandler)
	model, err := newModel(env, server, quiet)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := policy.BuildPolicy(server)
	if err != nil {
		t.Fatal(err)
	}
	policy.Model.Edit = "edit-model"
	tree := agenttest.NewTree(t, map[string]string{"README": "hello\n"})
	a, err := agent.New(t.Context(), agent.Config{
		TaskID: "priced", Policy: policy, Model: model, Workspace: tree, Store: agenttest.NewStore(),
		Runner: toolstest.HostRunner{Dir: tree.Dir}, System: "You fix bugs.", Task: "Read the README.", Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(st.Usage.CostUSD-6.8) > 1e-9 {
		t.Errorf("cost of two answers = $%v; want $6.80", st.Usage.CostUSD)
	}
	if st.Stop.Reason != agent.StopCost || st.Step != 2 {
		t.Errorf("stopped after %d steps by %q (%s); want the cost limit after 2", st.Step, st.Stop.Reason, st.Stop.Detail)
	}
}
