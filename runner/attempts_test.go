package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// byModel answers each request with the scripted model of its name, so
// that attempts running side by side each follow their own script.
type byModel map[string]agent.Model

func (m byModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	c, ok := m[req.Model]
	if !ok {
		return llm.Response{}, fmt.Errorf("no scripted model %q", req.Model)
	}
	return c.Complete(ctx, req)
}

// scriptedModels serves each script as the model of its name, at price.
func scriptedModels(t *testing.T, price llm.Price, scripts map[string]llmtest.Script) (byModel, map[string]*llmtest.Server) {
	t.Helper()
	models, servers := byModel{}, map[string]*llmtest.Server{}
	for name, s := range scripts {
		srv := llmtest.NewServer(t, s)
		c, err := llm.New(llm.Config{BaseURL: srv.URL(), Prices: map[string]llm.Price{name: price}})
		if err != nil {
			t.Fatal(err)
		}
		models[name], servers[name] = c, srv
	}
	return models, servers
}

func steps(calls ...llmtest.Call) llmtest.Script {
	var s llmtest.Script
	for _, c := range calls {
		s.Steps = append(s.Steps, llmtest.Step{ToolCalls: []llmtest.Call{c}})
	}
	return s
}

var (
	checksCall = llmtest.Call{Name: "run_checks", Arguments: `{}`}
	finishCall = llmtest.Call{Name: "finish", Arguments: `{"summary":"Fix Sum dropping the first sample"}`}
)

// bestOfPolicy runs three attempts, of models a, b and c.
const bestOfPolicy = quickPolicy + "limits: {attempts: 3}\nmodel: {attempts: [a, b, c]}\n"

// threeAttempts are the models of bestOfPolicy: a fails the checks, b
// passes with a change of 40 lines and c with one of 3.
func threeAttempts(t *testing.T) byModel {
	t.Helper()
	var extra strings.Builder
	extra.WriteString(`package stats\n`)
	for i := range 37 {
		fmt.Fprintf(&extra, `// note %d\n`, i)
	}
	models, _ := scriptedModels(t, llm.Price{}, map[string]llmtest.Script{
		// a edits a comment and the check fails the same way again.
		"a": steps(checksCall,
			llmtest.Call{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"// Sum returns the sum of xs.","new_string":"// Sum adds xs up."}`},
			checksCall),
		// b fixes Sum and adds a file of 38 lines: 40 lines changed.
		"b": steps(llmtest.Call{Name: "write_file", Arguments: llmtest.Arguments(`{"path":"extra.go","content":"` + extra.String() + `"}`)},
			llmtest.Call{Name: "edit_file", Arguments: fixEdit}, finishCall),
		// c fixes Sum with a comment: 3 lines changed.
		"c": steps(llmtest.Call{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"for i := 1; i < len(xs); i++ {",` +
			`"new_string":"// Every sample counts.\n\tfor i := 0; i < len(xs); i++ {"}`}, finishCall),
	})
	return models
}

// wonByAttempt3 is what the pull request of threeAttempts says.
const wonByAttempt3 = "**3 attempts ran, 2 passed;** attempt 3 is this change, because it changes 3 lines against attempt 2's 40."

func TestBestOfThreeProposesTheSmallestChangeThatPasses(t *testing.T) {
	t.Parallel()
	models := threeAttempts(t)
	// bestOfPolicy, with temperatures in turn for the table to show.
	policy := quickPolicy + "limits: {attempts: 3}\nmodel: {attempts: [a, b, c], temperatures: [0, 0.7]}\n"
	w := newWorldWith(t, policy, llmtest.Script{}, func(c *runner.Config) { c.Model = models })
	rec := w.recorded(t)
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "B1")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("B1"); r.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", r.State, r.Step, w.status("B1"))
	}
	prs := w.sim.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests; want 1", len(prs))
	}
	body := prs[0].Body
	if want := wonByAttempt3; !strings.Contains(body, want) {
		t.Errorf("the pull request does not say %q:\n%s", want, body)
	}
	for _, row := range []string{"| 1 | `a` at temperature 0 | not proposed: same_failure: ", "| 2 | `b` at temperature 0.7 | passed, reproduced: 40 lines in 2 files",
		"| 3 | `c` at temperature 0 | passed, reproduced: 3 lines in 1 file,"} {
		if !strings.Contains(body, row) {
			t.Errorf("the pull request's table has no row %q:\n%s", row, body)
		}
	}
	attempts := rec.trace("B1", app.TraceAttempt)
	if len(attempts) != 3 {
		t.Fatalf("%d attempts in the trace; want 3: %+v", len(attempts), attempts)
	}
	for _, tt := range []struct {
		outcome, model, diff string
	}{
		{"failed", "a", "+// Sum adds xs up."},
		{"passed", "b", "+// note 36"},
		{"chosen", "c", "// Every sample counts."},
	} {
		e, found := attemptEvent(attempts, tt.model)
		if !found || e.Outcome != tt.outcome || !strings.Contains(e.Result, tt.diff) {
			t.Errorf("attempt of model %s in the trace: %+v; want %s with its diff (%q)", tt.model, e, tt.outcome, tt.diff)
		}
	}
	// The attempts' own steps are told apart in the trace.
	for _, e := range rec.trace("B1", app.TraceToolCall) {
		if e.Attempt < 1 || e.Attempt > 3 {
			t.Errorf("tool call %s of step %d is of no attempt (%d)", e.Name, e.Step, e.Attempt)
		}
	}
}

// With pull_request.on_failure: draft_pr, a task none of whose attempts
// passed still proposes a change: the first attempt's that has one, as a
// draft saying so.
func TestBestOfWithNoneThatPassesProposesADraft(t *testing.T) {
	t.Parallel()
	// a and b each edit a comment: the checks stay red for both.
	models, _ := scriptedModels(t, llm.Price{}, map[string]llmtest.Script{
		"a": steps(checksCall,
			llmtest.Call{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"// Sum returns the sum of xs.","new_string":"// Sum sums xs."}`},
			checksCall),
		"b": steps(checksCall,
			llmtest.Call{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"// Sum returns the sum of xs.","new_string":"// Sum adds xs up."}`},
			checksCall),
	})
	policy := quickPolicy + "limits: {attempts: 2}\nmodel: {attempts: [a, b]}\npull_request: {on_failure: draft_pr}\n"
	w := newWorldWith(t, policy, llmtest.Script{}, func(c *runner.Config) { c.Model = models })
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "D1")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("D1"); r.State != app.StateFailed {
		t.Fatalf("task ended %s (%s); want failed with a draft:\n%s", r.State, r.Step, w.status("D1"))
	}
	prs := w.sim.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests; want one draft", len(prs))
	}
	if !prs[0].Pull.Draft {
		t.Error("the pull request is not a draft")
	}
	for _, want := range []string{"Draft: the checks did not pass", "**2 attempts ran, none passed.** This draft is attempt 1's change."} {
		if !strings.Contains(prs[0].Body, want) {
			t.Errorf("the draft does not say %q:\n%s", want, prs[0].Body)
		}
	}
}

func attemptEvent(events []app.TraceEvent, model string) (app.TraceEvent, bool) {
	for _, e := range events {
		if e.Name == model {
			return e, true
		}
	}
	return app.TraceEvent{}, false
}

func TestBestOfStopsEveryAttemptOnceTheirCostReachesTheCap(t *testing.T) {
	t.Parallel()
	// Every answer costs $1: 100,000 prompt tokens at $10 a million.
	price := llm.Price{Input: 10}
	models, servers := scriptedModels(t, price, searchScripts(100_000, "a", "b", "c"))
	w := newWorldWith(t, quickPolicy+"limits: {attempts: 3, cost_usd: 2.5}\nmodel: {attempts: [a, b, c]}\n", llmtest.Script{},
		func(c *runner.Config) { c.Model = models })
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "C1")); err != nil {
		t.Fatal(err)
	}
	r := w.store.record("C1")
	if r.State != app.StateFailed || !strings.HasPrefix(r.Step, "cost: ") {
		t.Fatalf("task ended %s (%s); want failed on the cost:\n%s", r.State, r.Step, w.status("C1"))
	}
	// An attempt asks only while the sum is below $2.50, that is after at
	// most two answers, and each has at most one question in flight.
	asked := 0
	for _, srv := range servers {
		asked += len(srv.Requests())
	}
	if asked < 3 || asked > 5 {
		t.Errorf("the attempts asked %d times in all; want 3 to 5 with $2.50 at $1 an answer", asked)
	}
	if s := w.status("C1"); !strings.Contains(s, "**3 attempts ran, none passed.**") {
		t.Errorf("the status comment does not say the attempts failed:\n%s", s)
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 0 {
		t.Errorf("%d pull requests; want none", len(prs))
	}
}

func TestBestOfResumedAfterItsPushProposesTheSameAttempt(t *testing.T) {
	t.Parallel()
	// The worker dies as it saves the push, or the pull request: the
	// task runs again from its saved progress.
	for _, dies := range []string{`"pushed"`, `"pr"`} {
		t.Run(dies, func(t *testing.T) {
			w := newWorldWith(t, bestOfPolicy, llmtest.Script{}, func(c *runner.Config) { c.Model = threeAttempts(t) })
			died := false
			w.store.fail = func(key string, state []byte) bool {
				if key == "R1:progress" && strings.Contains(string(state), dies) && !died {
					died = true
					return true
				}
				return false
			}
			tk := w.task(t, "R1")
			if err := w.runner.ProcessTask(t.Context(), tk); err == nil || !died {
				t.Fatalf("ProcessTask = %v; want the failed save", err)
			}
			pushed := branchSHA(t, w, "agent/1-sum-drops-the-first-sample")
			// The attempts resume from their final states: the scripts
			// have no step left for them.
			if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
				t.Fatalf("resumed task: %v", err)
			}
			if r := w.store.record("R1"); r.State != app.StateSucceeded {
				t.Fatalf("task ended %s (%s):\n%s", r.State, r.Step, w.status("R1"))
			}
			if now := branchSHA(t, w, "agent/1-sum-drops-the-first-sample"); now != pushed {
				t.Errorf("the branch moved from %s to %s; want the winner's commit kept", pushed, now)
			}
			prs := w.sim.PullRequests(repo)
			if len(prs) != 1 || !strings.Contains(prs[0].Body, wonByAttempt3) {
				t.Fatalf("%d pull requests; want one saying %q: %+v", len(prs), wonByAttempt3, prs)
			}
		})
	}
}

func TestBestOfStopEndsEveryAttempt(t *testing.T) {
	t.Parallel()
	scripts := map[string]llmtest.Script{}
	for _, name := range []string{"a", "b", "c"} {
		var s llmtest.Script
		for i := range 40 {
			s.Steps = append(s.Steps, llmtest.Step{Delay: 100 * time.Millisecond,
				ToolCalls: []llmtest.Call{{Name: "search", Arguments: llmtest.Arguments(fmt.Sprintf(`{"pattern":"%s%d"}`, name, i))}}})
		}
		scripts[name] = s
	}
	models, _ := scriptedModels(t, llm.Price{}, scripts)
	w := newWorldWith(t, bestOfPolicy, llmtest.Script{}, func(c *runner.Config) { c.Model = models })
	tk := w.task(t, "S1")
	// Asked before the task starts, the stop is seen at the loops' first
	// look for one, well before their scripts end.
	if err := w.store.RequestStop(t.Context(), "S1", "ada"); err != nil {
		t.Fatal(err)
	}
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("S1"); r.State != app.StateStopped {
		t.Fatalf("task ended %s (%s); want stopped:\n%s", r.State, r.Step, w.status("S1"))
	}
	for n := 1; n <= 3; n++ {
		if left := w.sandboxesLeft(t, fmt.Sprintf("S1-attempt-%d", n)); left != "" {
			t.Errorf("attempt %d's sandbox is still there: %s", n, left)
		}
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 0 {
		t.Errorf("%d pull requests; want none", len(prs))
	}
}
