package runner_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// records keeps a runner's traces, audit log and outcomes in memory.
type records struct {
	mu       sync.Mutex
	events   map[string][]app.TraceEvent
	entries  []app.AuditEntry
	outcomes map[string]app.TaskOutcome
}

type (
	recordTraces   struct{ *records }
	recordAudit    struct{ *records }
	recordOutcomes struct{ *records }
)

func (r recordTraces) Append(_ context.Context, id string, e app.TraceEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[id] = append(r.events[id], e)
	return nil
}

func (r recordTraces) Trace(_ context.Context, id string) ([]app.TraceEvent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[id]), nil
}

func (r recordAudit) Append(_ context.Context, e app.AuditEntry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	return nil
}

func (r recordOutcomes) Save(_ context.Context, o app.TaskOutcome) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes[o.Task] = o
	return nil
}

// recorded makes w's runner keep its traces, audit log and outcomes.
func (w *world) recorded(t *testing.T) *records {
	t.Helper()
	rec := &records{events: map[string][]app.TraceEvent{}, outcomes: map[string]app.TaskOutcome{}}
	cfg := w.cfg
	cfg.Traces, cfg.Audit, cfg.Outcomes = recordTraces{rec}, recordAudit{rec}, recordOutcomes{rec}
	var err error
	if w.runner, err = runner.New(cfg); err != nil {
		t.Fatal(err)
	}
	return rec
}

func (r *records) trace(id string, kind app.TraceKind) []app.TraceEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []app.TraceEvent
	for _, e := range r.events[id] {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

const fixEdit = `{"path":"stats.go","old_string":"for i := 1; i < len(xs); i++ {","new_string":"for i := 0; i < len(xs); i++ {"}`

var verifiedName = regexp.MustCompile("Verified in a fresh sandbox \\(`([0-9a-f]{12})`")

func TestFixIsVerifiedInAFreshSandbox(t *testing.T) {
	t.Parallel()
	policy := quickPolicy + "tools: {write: auto}\n"
	w := newWorld(t, policy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: fixEdit}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Fix Sum dropping the first sample"}`}}},
	}})
	rec := w.recorded(t)
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "V1")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("V1"); r.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", r.State, r.Step, w.status("V1"))
	}

	prs := w.sim.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests; want 1", len(prs))
	}
	m := verifiedName.FindStringSubmatch(prs[0].Body)
	if m == nil || !strings.Contains(prs[0].Body, "| fixed | `! grep -q 'i := 1' stats.go` | ✅ pass") {
		t.Fatalf("the pull request's checks are not the verification's:\n%s", prs[0].Body)
	}
	verifier := m[1]
	// The agent ran in the task's sandbox; the verification names one of
	// its own.
	agent, verification := w.host.Started("V1"), w.host.Started("V1-verify")
	if len(agent) != 1 || len(verification) != 1 || verification[0][:12] != verifier || agent[0][:12] == verifier {
		t.Errorf("verified in %q; the agent's sandboxes %q, the verification's %q: want one each, the verification's named", verifier, agent, verification)
	}
	if left := w.sandboxesLeft(t, "V1-verify"); left != "" {
		t.Errorf("the verification sandbox is still there: %s", left)
	}

	runs := w.sim.CheckRuns(repo)
	if len(runs) != 1 || runs[0].Conclusion != "success" || !strings.Contains(runs[0].Summary, "Verified in a fresh sandbox (`"+verifier+"`") {
		t.Errorf("check runs %+v; want one success whose summary is the verification's", runs)
	}
	if !strings.Contains(w.status("V1"), "Verified in a fresh sandbox") {
		t.Errorf("status comment does not say the checks were verified:\n%s", w.status("V1"))
	}

	var phases []string
	for _, e := range rec.trace("V1", app.TracePhase) {
		phases = append(phases, e.Name)
	}
	if want := []string{"admission", "workspace", "base checks", "agent", "gate", "verification", "push", "report"}; !slices.Equal(phases, want) {
		t.Errorf("phases %v; want %v", phases, want)
	}
	var verified []string
	for _, e := range rec.trace("V1", app.TraceCheck) {
		if strings.HasPrefix(e.Name, "verify ") {
			verified = append(verified, e.Name+" "+e.Outcome+" "+e.Detail)
		}
	}
	if want := "verify fixed passed fresh sandbox " + verifier + ": ! grep -q 'i := 1' stats.go"; !slices.Equal(verified, []string{want}) {
		t.Errorf("verified checks in the trace %q; want %q", verified, want)
	}
	if inc := rec.trace("V1", app.TraceIncident); len(inc) != 0 {
		t.Errorf("incidents %+v; want none", inc)
	}
	if o := rec.outcomes["V1"]; !o.ChecksPassed || o.SafetyIncidents != 0 || o.PR != prs[0].Number {
		t.Errorf("outcome %+v; want passed checks, no incident, the pull request", o)
	}
}

// markerPolicy's check passes when a file the agent may create exists in
// the sandbox's /tmp: the loop believes the checks pass, while the tree it
// hands over fails them.
const markerPolicy = `version: 1
checks:
  - {name: fixed, run: "test -f /tmp/checks-ok || ! grep -q 'i := 1' stats.go"}
paths: {allow: ["**/*.go"]}
tools: {write: auto, shell: {policy: allowlist, allow: ["touch /tmp/checks-ok"]}}
`

var markerScript = llmtest.Script{Steps: []llmtest.Step{
	{ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"touch /tmp/checks-ok"}`}}},
	{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: `{"path":"stats.go","old_string":"total := 0","new_string":"total := 0 // the sum so far"}`}}},
	{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Fix Sum"}`}}},
}}

func TestChecksPassingOnlyInTheAgentsSandboxPushNoFix(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, onFailure string
		draft           bool
	}{
		{"fail", "", false},
		{"draft", "pull_request: {on_failure: draft_pr}\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The model forges a pass outside the tree: in a container.
			w := newDockerWorld(t, markerPolicy+tt.onFailure, markerScript)
			rec := w.recorded(t)
			if err := w.runner.ProcessTask(t.Context(), w.task(t, "A1")); err != nil {
				t.Fatal(err)
			}
			if r := w.store.record("A1"); r.State != app.StateFailed {
				t.Fatalf("task ended %s (%s); want failed:\n%s", r.State, r.Step, w.status("A1"))
			}
			prs := w.sim.PullRequests(repo)
			branches, err := w.sim.Branches(repo)
			if err != nil {
				t.Fatal(err)
			}
			if tt.draft {
				if len(prs) != 1 || !prs[0].Pull.Draft || !strings.Contains(prs[0].Body, "Draft: the checks did not pass") ||
					!strings.Contains(prs[0].Body, "| fixed | `test -f /tmp/checks-ok || ! grep -q 'i := 1' stats.go` | ❌ fail (exit 1)") {
					t.Fatalf("pull requests %+v; want one draft showing the verified failure", prs)
				}
			} else if len(prs) != 0 || len(branches) != 1 {
				t.Fatalf("pull requests %+v, branches %v; want none pushed", prs, branches)
			}

			status := w.status("A1")
			for _, want := range []string{
				"the checks passed in the agent's sandbox but fail in a fresh one (fixed exited 1)",
				"In a fresh sandbox, **fixed**", "The agent's sandbox said the checks pass",
			} {
				if !strings.Contains(status, want) {
					t.Errorf("status comment lacks %q:\n%s", want, status)
				}
			}
			if runs := w.sim.CheckRuns(repo); len(runs) != 1 || runs[0].Conclusion != "failure" {
				t.Errorf("check runs %+v; want one failure", runs)
			}

			// Both results are in the trace: the loop's pass, the
			// verification's failure, and the incident naming both.
			var checks []string
			for _, e := range rec.trace("A1", app.TraceCheck) {
				checks = append(checks, e.Name+" "+e.Outcome)
			}
			if !slices.Contains(checks, "fixed passed") || !slices.Contains(checks, "verify fixed failed") {
				t.Errorf("checks in the trace %q; want the loop's pass and the verification's failure", checks)
			}
			inc := rec.trace("A1", app.TraceIncident)
			if len(inc) != 1 || inc[0].Detail != "the agent's sandbox: fixed pass; a fresh sandbox: fixed fail (exit 1)" {
				t.Errorf("incidents %+v; want one with both results", inc)
			}
			if o := rec.outcomes["A1"]; o.ChecksPassed || o.SafetyIncidents != 1 || o.State != app.StateFailed {
				t.Errorf("outcome %+v; want failed checks and one safety incident", o)
			}
			var blocked []string
			for _, e := range rec.entries {
				if e.Kind == app.AuditBlocked {
					blocked = append(blocked, e.Detail)
				}
			}
			if len(blocked) != 1 || !strings.HasPrefix(blocked[0], "verification: nothing pushed as a fix") {
				t.Errorf("blocked entries %q; want the verification's", blocked)
			}
		})
	}
}
