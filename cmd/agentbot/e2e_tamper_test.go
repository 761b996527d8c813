package main

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// tamperingModel makes the checks pass by skipping one test and deleting
// another instead of fixing Sum.
var tamperingModel = llmtest.Script{Steps: []llmtest.Step{
	{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"stats_test.go","old_string":"func TestSum(t *testing.T) {\n","new_string":"func TestSum(t *testing.T) {\n\tt.Skip(\"flaky\")\n"}`}}},
	{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"stats_test.go","old_string":"func TestMean(t *testing.T) {\n\tif got := Mean([]int{2, 4, 6}); got != 4 {\n\t\tt.Errorf(\"Mean(2, 4, 6) = %v; want 4\", got)\n\t}\n}\n","new_string":""}`}}},
	{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: `{}`}}},
	{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"The tests pass now."}`}}},
}}

// tamperablePolicy's check fails, as the sample's go test does, until Sum
// is fixed or the tests that catch its bug are skipped and removed; it needs
// no Go build. It names the tests by a glob, as go test does by package, so
// that they are tests to the report, not files a check names.
const tamperablePolicy = `version: 1
checks:
  - {name: test, run: "! grep -q 'i := 1' stats.go || { grep -q 't.Skip' *_test.go && ! grep -q 'func TestMean' *_test.go; }"}
paths: {allow: ["**/*.go"]}
`

// Checks that pass because the change weakened the tests are shown as
// such: the pull request and the check run name the removed test and the
// added skip in their own section.
func TestTamperingIsShownInThePullRequestAndCheckRun(t *testing.T) {
	t.Parallel()
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: tamperablePolicy}, script: &tamperingModel}, nil)
	_, id, err := w.DeliverComment(t.Context(), demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, id); rec.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s)", rec.State, rec.Step)
	}
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests; want 1", len(prs))
	}
	var summary string
	for _, c := range w.Sim.CheckRuns(w.Repo) {
		summary += c.Summary
	}
	for where, text := range map[string]string{"pull request body": prs[0].Body, "check run summary": summary} {
		for _, want := range []string{"## Tests, checks and CI changed", "| `stats_test.go` | test |",
			"test removed: `TestMean` in `stats_test.go`", "skip added in `stats_test.go`: `t.Skip(\"flaky\")`"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", where, want, text)
			}
		}
	}
}
