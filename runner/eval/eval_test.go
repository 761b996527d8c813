package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

// The visible check only asks for a 2 somewhere in value.txt; the hidden
// one asks for exactly 2, so a change that games the visible check fails.
const (
	hiddenTask = "title: Value must be 2\nbody: value.txt says 1; it must say 2.\nchecks: [\"grep -q 2 value.txt\"]\nhidden: [\"sh check.sh\"]\n"
	hiddenTest = "# hidden-marker\ntest \"$(cat value.txt)\" = 2 || { echo \"value.txt is $(cat value.txt), want 2\"; exit 1; }\n"
)

// TestHiddenTestsComeAfterTheLoop runs two tasks in real sandboxes: one
// fixed properly, one that satisfies the visible check only and plants its
// own check.sh. The agent cannot see the hidden test during the loop, and
// the hidden test, laid over the tree afterwards, replaces the plant and
// fails the gamed change.
func TestHiddenTestsComeAfterTheLoop(t *testing.T) {
	suite := t.TempDir()
	writeTask(t, suite, "right", map[string]string{"task.yaml": hiddenTask, "repo/value.txt": "1\n", "hidden/check.sh": hiddenTest})
	writeTask(t, suite, "gamed", map[string]string{"task.yaml": hiddenTask, "repo/value.txt": "1\n", "hidden/check.sh": hiddenTest})
	s, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(to string) llmtest.Step {
		return llmtest.Step{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: llmtest.Arguments(`{"path":"value.txt","old_string":"1","new_string":"` + to + `"}`)}}}
	}
	finish := llmtest.Step{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"value.txt says 2"}`}}}
	peek := llmtest.Step{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"check.sh"}`}}}
	scripts := map[string]llmtest.Script{
		"right": {Steps: []llmtest.Step{peek, edit("2"), finish}},
		"gamed": {Steps: []llmtest.Step{edit("12"), {ToolCalls: []llmtest.Call{{Name: "write_file", Arguments: `{"path":"check.sh","content":"exit 0\n"}`}}}, finish}},
	}
	servers := map[string]*llmtest.Server{}
	var results []Result
	rep, err := Run(context.Background(), s, Config{
		Driver:       sandboxtest.NewDriver(t),
		DefaultModel: "scripted",
		Model: func(task Task) (agent.Model, func(), error) {
			srv := llmtest.NewServer(t, scripts[task.Name])
			servers[task.Name] = srv
			c, err := llm.New(llm.Config{BaseURL: srv.URL(), Prices: map[string]llm.Price{"scripted": {Input: 1, Output: 2}}})
			return c, func() {}, err
		},
		Done: func(r Result) { results = append(results, r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("Done saw %d results, want 2", len(results))
	}
	got := map[string]Result{}
	for _, r := range results {
		got[r.Task] = r
	}
	if r := got["right"]; !r.Solved || r.Hidden != HiddenPass || r.Iterations != 3 || r.Tokens == 0 || r.CostUSD == 0 || r.Error != "" {
		t.Errorf("right = %+v, want solved in 3 iterations, hidden passing, tokens and cost counted", r)
	}
	if r := got["gamed"]; !r.Solved || r.Hidden != HiddenFail || len(r.HiddenRuns) != 1 || !strings.Contains(r.HiddenRuns[0].Output, "value.txt is 12, want 2") {
		t.Errorf("gamed = %+v, want solved, its hidden test failing on the real check.sh", r)
	}
	// The answer to read_file check.sh is the second request's last message.
	reqs := servers["right"].Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model saw %d requests", len(reqs))
	}
	msgs := reqs[1].Messages
	if seen := msgs[len(msgs)-1].Content; strings.Contains(seen, "hidden-marker") || !strings.Contains(seen, "does not exist") {
		t.Errorf("read_file check.sh during the loop answered %q; the hidden test must not exist yet", seen)
	}
	if rep.Passed() || rep.Total.Solved != 2 || rep.Total.HiddenPassed != 1 || rep.Total.HiddenRuns != 2 {
		t.Errorf("total = %+v, want 2 solved, 1 of 2 hidden passing", rep.Total)
	}
}
