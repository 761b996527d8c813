package runner_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

func TestPullRequestTitleIsFinishsTitle(t *testing.T) {
	t.Parallel()
	script := demoScript(t)
	last := &script.Steps[len(script.Steps)-1].ToolCalls[0]
	if last.Name != "finish" {
		t.Fatalf("the demo script ends with %s, not finish", last.Name)
	}
	last.Arguments = llmtest.Arguments(`{"title":"Start Sum's loop at the first sample","summary":"Start Sum's loop at the first sample\n\nThe loop began at index 1, so Sum([1 2 3]) was 5."}`)
	w := newWorld(t, quickPolicy, script)
	tk := w.task(t, "T1")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	prs := w.sim.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests; want 1", len(prs))
	}
	pr := prs[0]
	if pr.Title != "Start Sum's loop at the first sample" {
		t.Errorf("title %q; want finish's title", pr.Title)
	}
	if !strings.HasPrefix(pr.Body, "## What changed and why\n\nThe loop began at index 1") || strings.Contains(pr.Body, "> fix") {
		t.Errorf("body:\n%s", pr.Body)
	}
	if !strings.Contains(pr.Body, "Asked by @ada on #1.") || !strings.Contains(pr.Body, "Fixes #1") {
		t.Errorf("body lacks who asked or the issue link:\n%s", pr.Body)
	}
}
