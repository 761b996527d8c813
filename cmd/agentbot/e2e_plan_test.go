package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// planAnswer is an answer tool call whose plan names files.
func planAnswer(t *testing.T, change string, files ...string) llmtest.Step {
	t.Helper()
	plan := "## Change\n\n" + change + "\n\n## Files\n\n"
	for _, f := range files {
		plan += "- `" + f + "`\n"
	}
	plan += "\n## Reproducing test\n\nTestSum already fails.\n\n## Checks\n\n- fixed\n"
	args, err := json.Marshal(map[string]string{"answer": plan})
	if err != nil {
		t.Fatal(err)
	}
	return llmtest.Step{ToolCalls: []llmtest.Call{{Name: "answer", Arguments: llmtest.Arguments(args)}}}
}

// waitStep waits until task id is in state st with step.
func waitStep(t *testing.T, w *demo.World, id string, st app.State, step string) {
	t.Helper()
	for deadline := time.Now().Add(e2eTimeout); ; time.Sleep(50 * time.Millisecond) {
		rec, err := w.Store.Task(t.Context(), id)
		if err == nil && rec.State == st && rec.Step == step {
			return
		}
		if err != nil || rec.State.Final() || time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s), %v; want %s (%s)", id, rec.State, rec.Step, err, st, step)
		}
	}
}

func TestPlanWaitsForApprovalAndANoteRevisesIt(t *testing.T) {
	t.Parallel()
	script := llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"stats.go"}`}}},
		planAnswer(t, "Start Sum's loop at 0.", "stats.go"),
		planAnswer(t, "Start Sum's loop at 0, and keep its signature.", "stats_test.go"),
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"for i := 1; i < len(xs); i++ {","new_string":"for i := 0; i < len(xs); i++ {"}`}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"title":"Fix Sum dropping the first sample","summary":"Start Sum's loop at 0."}`}}},
	}}
	policyYAML := quickPolicy + "quality: {plan: approve}\ntrigger: {approvers: [ada]}\n"
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: policyYAML}, script: &script}, nil)
	ctx := t.Context()
	_, fix, err := w.DeliverComment(ctx, demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	const waiting = "waiting for /agent approve of the plan"
	waitStep(t, w, fix, app.StateAwaitingApproval, waiting)
	status := statusOf(w, fix)
	for _, want := range []string{"**The plan — waiting for approval.** Nothing has been changed.", "`/agent approve`", "Start Sum's loop at 0.",
		"**Cost estimate:** No task on acme/stats has finished"} {
		if !strings.Contains(status, want) {
			t.Errorf("the status comment lacks %q:\n%s", want, status)
		}
	}
	// Waiting, it wrote nothing, ran nothing and holds no sandbox.
	for i, req := range w.LLM.Requests() {
		if names := req.ToolNames(); slices.ContainsFunc(names, func(n string) bool { return n == "edit_file" || n == "write_file" || n == "run_checks" }) {
			t.Errorf("request %d, before approval, offered %v", i+1, names)
		}
	}
	if left := sandboxesOf(t, fix); len(left) != 0 {
		t.Errorf("sandboxes while the plan waits: %q", left)
	}
	if b, _ := w.Sim.Branches(w.Repo); len(b) != 1 {
		t.Errorf("branches %v before approval; want main only", b)
	}

	noted(t, w, noteText, app.StateSucceeded)
	waitStep(t, w, fix, app.StateAwaitingApproval, waiting)
	reqs := w.LLM.Requests()
	if len(reqs) != 3 || notesSeen(reqs[2]) != 1 || !strings.Contains(reqs[2].Messages[1].Content, "<plan>\n## Change\n\nStart Sum's loop at 0.") {
		t.Fatalf("%d requests; want the third to revise the plan with the note:\n%+v", len(reqs), reqs[len(reqs)-1].Messages)
	}
	if status := statusOf(w, fix); !strings.Contains(status, "The plan, revised (2) — waiting for approval.") || !strings.Contains(status, "keep its signature") {
		t.Errorf("the status comment after the note:\n%s", status)
	}

	_, approve, err := w.DeliverComment(ctx, demo.Requester, "/agent approve")
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, w, approve)
	if rec := waitFinal(t, w, fix); rec.State != app.StateSucceeded {
		t.Fatalf("fix ended %s (%s)", rec.State, rec.Step)
	}
	reqs = w.LLM.Requests()
	if len(reqs) != 5 || !strings.Contains(reqs[3].Messages[1].Content, "## Your plan, which @ada approved") {
		t.Errorf("%d requests; want the loop's first to hold the approved plan", len(reqs))
	}
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "## Departures from the approved plan") || !strings.Contains(prs[0].Body, "did not name these changed files: `stats.go`") {
		t.Errorf("pull requests %+v; want one that names the file the plan did not", prs)
	}
}
