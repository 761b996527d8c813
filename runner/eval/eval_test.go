package eval

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, func() {
		if dir, err := sharedDir(); err == nil {
			os.RemoveAll(dir)
		}
	})
}

// sharedDir holds the environment cache the evaluations share, as a
// worker's evaluations do: the image's seed is copied once for them all.
var sharedDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "agentbot-eval-envs-") })

// sharedEnvs opens the shared environment cache.
func sharedEnvs(t *testing.T) *envcache.Cache {
	t.Helper()
	dir, err := sharedDir()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := envcache.Open(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return envs
}

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
	t.Parallel()
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
		Envs:         sharedEnvs(t),
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

// gatedModel answers only once its gate opens.
type gatedModel struct {
	agent.Model
	gate <-chan struct{}
}

func (m gatedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	select {
	case <-m.gate:
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	return m.Model.Complete(ctx, req)
}

// TestParallelRunsGoTogetherAndReportInTaskOrder runs three tasks with
// Parallel 3 in real sandboxes. No run gets its model until all three have
// asked for one, so one at a time would never get past the first; task a's
// model answers only once b and c have ended, and the report still lists
// a, b, c.
func TestParallelRunsGoTogetherAndReportInTaskOrder(t *testing.T) {
	t.Parallel()
	const task = "title: Value must be 2\nbody: value.txt says 1; it must say 2.\nchecks: [\"grep -qx 2 value.txt\"]\n"
	suite := t.TempDir()
	names := []string{"a", "b", "c"}
	for _, name := range names {
		writeTask(t, suite, name, map[string]string{"task.yaml": task, "repo/value.txt": "1\n"})
	}
	s, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	script := llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"value.txt","old_string":"1","new_string":"2"}`}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"value.txt says 2"}`}}},
	}}
	var mu sync.Mutex
	started, allStarted := 0, make(chan struct{})
	var ended []string
	othersEnded, open := make(chan struct{}), make(chan struct{})
	close(open)
	rep, err := Run(context.Background(), s, Config{
		Driver:       sandboxtest.NewDriver(t),
		Envs:         sharedEnvs(t),
		DefaultModel: "scripted",
		Parallel:     3,
		Model: func(task Task) (agent.Model, func(), error) {
			mu.Lock()
			if started++; started == len(names) {
				close(allStarted)
			}
			mu.Unlock()
			select {
			case <-allStarted:
			case <-time.After(time.Minute):
				return nil, nil, errors.New("the other runs never started alongside this one")
			}
			c, err := llm.New(llm.Config{BaseURL: llmtest.NewServer(t, script).URL()})
			if task.Name == "a" {
				return gatedModel{Model: c, gate: othersEnded}, func() {}, err
			}
			return gatedModel{Model: c, gate: open}, func() {}, err
		},
		Done: func(r Result) {
			ended = append(ended, r.Task)
			if len(ended) == 2 && !slices.Contains(ended, "a") {
				close(othersEnded)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ended) != 3 || ended[2] != "a" {
		t.Errorf("runs ended in the order %v, want a last", ended)
	}
	for i, tr := range rep.Tasks {
		if tr.Task != names[i] || len(tr.Results) != 1 || tr.Results[0].Task != names[i] || !tr.Results[0].Solved {
			t.Errorf("report task %d = %+v, want %s solved", i, tr, names[i])
		}
	}
	if !rep.Passed() || rep.Total.Runs != 3 || rep.Total.Solved != 3 {
		t.Errorf("total = %+v, want 3 of 3 solved", rep.Total)
	}
}

// TestRunsSeeTheImagesHomeCopyOnWrite: the loop's sandbox and the hidden
// tests' both start from the image's seed of $HOME (its Go build cache),
// and what the loop's checks write there never reaches the hidden tests.
func TestRunsSeeTheImagesHomeCopyOnWrite(t *testing.T) {
	t.Parallel()
	const (
		seeded = `ls "$HOME"/.cache/go-build | grep -q .`
		task   = "title: Value must be 2\nbody: value.txt says 1; it must say 2.\n" +
			"checks: ['" + seeded + ` && touch "$HOME"/left-by-the-loop && grep -qx 2 value.txt']` + "\n" +
			"hidden: [sh hidden.sh]\n"
		hidden = seeded + ` && ! test -e "$HOME"/left-by-the-loop` + "\n"
	)
	suite := t.TempDir()
	writeTask(t, suite, "seeded", map[string]string{"task.yaml": task, "repo/value.txt": "1\n", "hidden/hidden.sh": hidden})
	s, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	script := llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"value.txt","old_string":"1","new_string":"2"}`}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"value.txt says 2"}`}}},
	}}
	rep, err := Run(context.Background(), s, Config{
		Driver:       sandboxtest.NewDriver(t),
		Envs:         sharedEnvs(t),
		DefaultModel: "scripted",
		Model: func(Task) (agent.Model, func(), error) {
			c, err := llm.New(llm.Config{BaseURL: llmtest.NewServer(t, script).URL()})
			return c, func() {}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Tasks[0].Results[0]; !r.Solved || r.Hidden != HiddenPass {
		t.Errorf("run = %+v, want the loop's checks passing on the seeded home and the hidden tests passing without the loop's writes", r)
	}
}

// TestTheSeedIsCopiedOncePerCache: an evaluation keeps the image's seed of
// $HOME in the environment cache it is given, where the next one finds it;
// without a cache, each copies its own.
func TestTheSeedIsCopiedOncePerCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	drv := sandboxtest.NewDriver(t)
	envs, err := envcache.Open(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true} {
		home, err := seedHome(ctx, drv, envs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if home.env.Cached != want {
			t.Errorf("evaluation %d: seed reused %v; want %v", i+1, home.env.Cached, want)
		}
		if err := home.close(); err != nil {
			t.Fatal(err)
		}
	}
	if list, err := envs.List(); err != nil || len(list) != 1 {
		t.Errorf("the cache holds %+v (%v); want the one seed", list, err)
	}
	home, err := seedHome(ctx, drv, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer home.close()
	if home.env.Cached {
		t.Error("without a cache the seed was reused")
	}
}
