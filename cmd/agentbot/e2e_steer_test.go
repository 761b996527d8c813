package main

import (
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/queuetest"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// gatedPolicy lets the gated model's first call wait in its sandbox.
const gatedPolicy = quickPolicy + "tools: {write: auto, shell: auto}\n"

// waitingScript: its first call waits in the sandbox until the test lets it go
// (letGo), so that a note is sent while the loop is between two steps;
// then it fixes the sample and finishes.
var waitingScript = llmtest.Script{Steps: []llmtest.Step{
	{ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"until [ -e /tmp/go ]; do sleep 0.1; done; echo let go"}`}}},
	{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"for i := 1; i < len(xs); i++ {","new_string":"for i := 0; i < len(xs); i++ {"}`}}},
	{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"title":"Fix Sum dropping the first sample","summary":"Start Sum's loop at 0."}`}}},
}}

const noteText = "Keep Sum's signature as it is."

// waitGated waits until the gated command of the task's model runs in a
// sandbox other than those in old, and returns that sandbox.
func waitGated(t *testing.T, w *demo.World, task string, old []string) string {
	t.Helper()
	return waitRunning(t, w, task, old, "/tmp/go")
}

// waitRunning waits until a process whose command line holds args runs in
// a sandbox of the task other than those in old, and returns that sandbox.
// Others of the task come and go meanwhile: the base checks', and a killed
// worker's, which remove themselves.
func waitRunning(t *testing.T, w *demo.World, task string, old []string, args string) string {
	t.Helper()
	for deadline := time.Now().Add(e2eTimeout); ; time.Sleep(50 * time.Millisecond) {
		for _, id := range sandboxesOf(t, task) {
			if slices.Contains(old, id) {
				continue
			}
			// The processes as the host sees them: no command runs in the box.
			if top, err := exec.Command("docker", "top", id, "-o", "pid,args").Output(); err == nil && strings.Contains(string(top), args) {
				return id
			}
		}
		if rec, err := w.Store.Task(t.Context(), task); err != nil || rec.State.Final() || time.Now().After(deadline) {
			t.Fatalf("the task never ran %q in a sandbox: %+v (%v)", args, rec, err)
		}
	}
}

// letGo ends the gated model's first call in sandbox box.
func letGo(t *testing.T, box string) {
	t.Helper()
	out, err := exec.Command("docker", "exec", box, "touch", "/tmp/go").CombinedOutput()
	if err == nil {
		return
	}
	// The waiting call ends only once /tmp/go exists: a box that stopped
	// meanwhile was let go, and its loop went on and closed it before
	// the exec returned.
	running, _ := exec.Command("docker", "inspect", "-f", "{{.State.Running}}", box).Output()
	if strings.TrimSpace(string(running)) == "true" {
		t.Fatalf("docker exec %s: %v\n%s", box, err, out)
	}
}

// noted sends the note and waits for its answer, which it returns.
func noted(t *testing.T, w *demo.World, text string, want app.State) string {
	t.Helper()
	_, id, err := w.DeliverComment(t.Context(), demo.Requester, "/agent note "+text)
	if err != nil {
		t.Fatal(err)
	}
	if rec := waitFinal(t, w, id); rec.State != want {
		t.Fatalf("the note task ended %s (%s); want %s", rec.State, rec.Step, want)
	}
	body := statusOf(w, id)
	if body == "" {
		t.Fatalf("the note task %s left no status comment", id)
	}
	return body
}

// notesSeen counts the framed notes in a request to the model.
func notesSeen(req llmtest.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser && strings.Contains(m.Content, "# A note from @"+demo.Requester+" at ") {
			if !strings.Contains(m.Content, "guidance, not permission") || !strings.Contains(m.Content, "\n"+noteText+"\n</note>") {
				return -1
			}
			n++
		}
	}
	return n
}

func TestNoteReachesTheModelsNextStep(t *testing.T) {
	t.Parallel()
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: gatedPolicy}, script: &waitingScript}, nil)
	_, fix, err := w.DeliverComment(t.Context(), demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	box := waitGated(t, w, fix, nil)
	if ack := noted(t, w, noteText, app.StateSucceeded); !strings.Contains(ack, "**Noted** — task `"+fix+"` reads this note at its next step") {
		t.Errorf("the note's answer:\n%s", ack)
	}
	letGo(t, box)
	if rec := waitFinal(t, w, fix); rec.State != app.StateSucceeded {
		t.Fatalf("fix ended %s (%s)", rec.State, rec.Step)
	}
	reqs := w.LLM.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests to the model; want 3", len(reqs))
	}
	if n := notesSeen(reqs[0]); n != 0 {
		t.Errorf("the first request holds %d notes; want none", n)
	}
	// The step after the note, and every one after it, has it once,
	// after the call it came during.
	for i, req := range reqs[1:] {
		if n := notesSeen(req); n != 1 {
			t.Errorf("request %d holds %d framed notes; want 1", i+2, n)
		}
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != llm.RoleUser || !strings.Contains(last.Content, noteText) {
		t.Errorf("the request after the note ends with %+v; want the note", last)
	}
}

func TestNoteSurvivesAKilledWorker(t *testing.T) {
	t.Parallel()
	bin := agentbotBin(t)
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: gatedPolicy}, script: &waitingScript, noWorkers: true}, nil)
	ctx := t.Context()
	first := startWorker(t, w, bin)
	_, fix, err := w.DeliverComment(ctx, demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}
	old := waitGated(t, w, fix, nil)
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", old).Run() })
	noted(t, w, noteText, app.StateSucceeded)
	// The worker dies before its loop read the note.
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	// The killed worker's leases: the fix's, and the note's when the
	// worker died between recording the note's end and letting it go.
	if n, err := queuetest.ExpireLeases(ctx, w.RDB, queue.DefaultQueue, time.Now().Add(time.Minute)); err != nil || n < 1 || n > 2 {
		t.Fatalf("expired %d leases (%v); want the killed worker's fix's, and at most its note's", n, err)
	}
	startWorker(t, w, bin)
	letGo(t, waitGated(t, w, fix, []string{old}))
	if rec := waitFinal(t, w, fix); rec.State != app.StateSucceeded {
		t.Fatalf("fix ended %s (%s)", rec.State, rec.Step)
	}
	reqs := w.LLM.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests to the model; want 3: the resumed loop asks no step again", len(reqs))
	}
	for i, req := range reqs[1:] {
		if n := notesSeen(req); n != 1 {
			t.Errorf("request %d, after the resume, holds %d framed notes; want 1", i+2, n)
		}
	}
}

func TestNoteOnAnEndedTaskSuggestsARetry(t *testing.T) {
	t.Parallel()
	// Any fix that ends will do: one whose check needs no Go build.
	policyYAML := quickPolicy + "limits: {iterations: 4}\n"
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: policyYAML}, script: &unsafeModel}, nil)
	fix := fixTo(t, w, app.StateFailed)
	answer := noted(t, w, noteText, app.StateRefused)
	for _, want := range []string{
		"Task `" + fix + "` already ended (**failed**), so no agent will read this note.",
		"To run the fix again with this note, comment:",
		"/agent retry " + noteText,
	} {
		if !strings.Contains(answer, want) {
			t.Errorf("the note's answer lacks %q:\n%s", want, answer)
		}
	}
	if n, err := queue.NewStore(w.RDB).Notes(t.Context(), fix, 0); err != nil || len(n) != 0 {
		t.Errorf("notes kept for the ended task: %+v (%v); want none", n, err)
	}
}
