package runner_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// reproPolicy's check runs every script under tests/, so that a test the
// model adds is a test file by convention and the check needs no Go build.
const reproPolicy = `version: 1
checks:
  - {name: test, run: "for t in tests/*.sh; do [ -e \"$t\" ] || continue; sh \"$t\" || exit 1; done"}
paths: {allow: ["**/*.go", "tests/**"]}
`

// testFirst adds a test, sees it fail, then fixes Sum; test is the test
// script's content.
func testFirst(test string) llmtest.Script {
	return llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "write_file", Arguments: llmtest.Arguments(`{"path":"tests/sum_first.sh","content":"` + test + `\n"}`)}}},
		{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: `{}`}}},
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: fixEdit}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Fix Sum dropping the first sample"}`}}},
	}}
}

const (
	// failingTest fails while Sum skips its first sample.
	failingTest = `! grep -q 'i := 1' stats.go`
	// passingTest passes on the base: it shows nothing.
	passingTest = `grep -q 'func Sum' stats.go`
)

func TestAFailingTestFirstIsReproduced(t *testing.T) {
	t.Parallel()
	w := newWorld(t, reproPolicy, testFirst(failingTest))
	rec := w.recorded(t)
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "R1")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("R1"); r.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", r.State, r.Step, w.status("R1"))
	}
	prs := w.sim.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests; want 1", len(prs))
	}
	base, head := branchSHA(t, w, "main"), branchSHA(t, w, prs[0].Pull.Head)
	want := "✅ **Reproduced:** the tests in `tests/sum_first.sh` fail on `" + base[:7] + "` (check **test**"
	if body := prs[0].Body; !strings.Contains(body, want) || !strings.Contains(body, "pass on `"+head[:7]+"` in the final verification") ||
		strings.Contains(body, "unproven") {
		t.Errorf("the pull request does not say the fix is reproduced on %s and passes on %s:\n%s", base[:7], head[:7], body)
	}
	runs := rec.trace("R1", app.TraceCheck)
	var repro []string
	for _, e := range runs {
		if strings.HasPrefix(e.Name, "reproduce ") {
			repro = append(repro, e.Name+" "+e.Outcome)
		}
	}
	if len(repro) != 1 || repro[0] != "reproduce test failed" {
		t.Errorf("reproduction in the trace %q; want the test check failing", repro)
	}
	if left := w.sandboxesLeft(t, "R1-reproduce"); left != "" {
		t.Errorf("the reproduction sandbox is still there: %s", left)
	}
}

func TestATestThatPassesOnTheBaseIsNotReproduced(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, mode string
		pr         bool
	}{
		{"preferred", "", true},
		{"required", "quality: {reproduce: required}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, reproPolicy+tt.mode, testFirst(passingTest))
			if err := w.runner.ProcessTask(t.Context(), w.task(t, "N1")); err != nil {
				t.Fatal(err)
			}
			base := branchSHA(t, w, "main")[:7]
			why := "The new and changed tests pass on " + base + ", without the fix, so they do not show the problem"
			prs := w.sim.PullRequests(repo)
			r := w.store.record("N1")
			if !tt.pr {
				status := w.status("N1")
				if r.State != app.StateFailed || len(prs) != 0 {
					t.Fatalf("task ended %s with %d pull requests; want failed and none", r.State, len(prs))
				}
				if !strings.Contains(status, "❌ **No pull request.** The change is not reproduced: the new and changed tests pass on "+base) ||
					!strings.Contains(status, "quality.reproduce: required") {
					t.Errorf("the status comment does not say why there is no pull request:\n%s", status)
				}
				return
			}
			if r.State != app.StateSucceeded || len(prs) != 1 {
				t.Fatalf("task ended %s with %d pull requests; want succeeded and one:\n%s", r.State, len(prs), w.status("N1"))
			}
			if body := prs[0].Body; !strings.Contains(body, "⚠️ **Not reproduced: the fix is unproven.** "+why) || strings.Contains(body, "Reproduced:") {
				t.Errorf("the pull request does not say the fix is unproven:\n%s", body)
			}
		})
	}
}

// branchSHA is the commit a branch of the world's repository points at.
func branchSHA(t *testing.T, w *world, branch string) string {
	t.Helper()
	sha, err := w.sim.BranchSHA(repo, branch)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}
