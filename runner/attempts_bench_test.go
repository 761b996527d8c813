package runner_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// BenchmarkAttempts measures a fix from its start to its pull request
// with one attempt and with three (limits.attempts: 3), one after the
// other on the same repository — the demo package with two module
// dependencies — and the same prepared environment, which a first task
// builds off the clock: a setup that downloads the modules (moddownload),
// or one that also compiles the tests, so that the environment holds
// the build cache every attempt's checks then share (buildcache). The aim:
// three attempts within 1.5× of one. Run it with -benchtime=1x.
func BenchmarkAttempts(b *testing.B) {
	// Every attempt fixes Sum, then finishes: the steps answer a loop's
	// first question and the rule every later one, whichever attempt asks.
	// Each step's fix differs by a comment, so that no two attempts make
	// the same change and each is verified on its own.
	script := llmtest.Script{Rules: []llmtest.Rule{{Contains: "stats.go", Step: llmtest.Step{ToolCalls: []llmtest.Call{finishCall}}}}}
	for k := range 8 {
		fix := fmt.Sprintf(`{"path":"stats.go","old_string":"for i := 1; i < len(xs); i++ {","new_string":"for i := 0; i < len(xs); i++ { // fix %d"}`, k)
		script.Steps = append(script.Steps, llmtest.Step{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: llmtest.Arguments(fix)}}})
	}
	for _, bc := range []struct{ name, setupTail string }{
		{"moddownload", ""},
		{"buildcache", " && go test -run '^$' ./..."},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var one, three time.Duration
			for i := range b.N {
				b.StopTimer()
				w := newEnvWorld(b, script)
				policy := strings.Replace(w.files[policy.PolicyPath], `go mod download"`, `go mod download`+bc.setupTail+`"`, 1)
				w.setPolicy(b, policy)
				if detail := w.fixIssue(b, fmt.Sprintf("W%d", i)); !strings.HasPrefix(detail, "setup: built ") {
					b.Fatalf("the first task's setup: %q", detail)
				}
				b.StartTimer()
				one += w.timedFix(b, fmt.Sprintf("O%d", i))
				b.StopTimer()
				w.setPolicy(b, policy+"limits: {attempts: 3}\n")
				b.StartTimer()
				three += w.timedFix(b, fmt.Sprintf("T%d", i))
				b.StopTimer()
				if events, _ := w.traces.Trace(b.Context(), fmt.Sprintf("T%d", i)); !hasAttempts(events, 3) {
					b.Fatal("the three-attempt task did not trace three attempts")
				}
			}
			b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms-1-attempt/op")
			b.ReportMetric(float64(three.Milliseconds())/float64(b.N), "ms-3-attempts/op")
			b.ReportMetric(float64(three)/float64(one), "3-vs-1")
		})
	}
}

// setPolicy commits policy to the default branch.
func (w *envWorld) setPolicy(b *testing.B, policyYAML string) {
	b.Helper()
	if _, err := w.sim.Commit(repo, "main", "grace", "Policy", map[string]string{policy.PolicyPath: policyYAML}); err != nil {
		b.Fatal(err)
	}
}

// timedFix runs a fix that must succeed over the prepared environment,
// and returns how long it took.
func (w *envWorld) timedFix(b *testing.B, id string) time.Duration {
	b.Helper()
	start := time.Now()
	if detail := w.fixIssue(b, id); !strings.HasPrefix(detail, "setup: cached ") {
		b.Fatalf("task %s's setup: %q; want the prepared environment", id, detail)
	}
	return time.Since(start)
}

// hasAttempts reports whether events trace n attempts.
func hasAttempts(events []app.TraceEvent, n int) bool {
	seen := 0
	for _, e := range events {
		if e.Kind == app.TraceAttempt {
			seen++
		}
	}
	return seen == n
}
