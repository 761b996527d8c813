package text

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/tools"
)

// What a hostile model or repository writes into a review or a setup's
// report stays inert, and the report keeps its own structure after it.
func TestReviewAndSetupTextsAreInert(t *testing.T) {
	t.Parallel()
	r := hostileReport()
	rv := Review{Request: r.Request, Head: "0123456789abcdef", Base: "fedcba9876543210", Summary: hostile}
	f := Finding{Finding: tools.Finding{Severity: app.SeverityHigh, Path: "stats.go", Line: 3, Title: hostile, Body: hostile,
		Test: &tools.FindingTest{Path: "stats_test.go", Content: hostile}},
		Tested: true, Proven: true, Reproduces: true,
		Run: &change.Verification{Checks: []tools.CheckRun{{Name: "test", Run: "go test ./...", ExitCode: 1, Output: hostile}}}}

	comment := FindingComment(rv, f)
	assertInert(t, "a finding's comment", comment, "proven by a test", "<summary>Test `stats_test.go`: fails on 0123456, passes on the base fedcba9</summary>")
	if !strings.Contains(comment, "for a fix of this finding whose reproduction is its test.") {
		t.Errorf("the comment does not say its test is a fix's reproduction:\n%s", comment)
	}
	assertInert(t, "the review's body", ReviewBody(rv, nil, []Finding{f}), "Also found:", "Proven findings come with a test")
	assertInert(t, "the findings' list", findingsList(r.Request, []Finding{f, {Finding: tools.Finding{Title: hostile}}}), "unproven")
	if task := FindingTask(r.Request, f); !strings.Contains(task, "Add it as it is, at that path") {
		t.Errorf("the finding's task for the model:\n%s", task)
	}

	s := Setup{Request: r.Request, Base: "0123456789abcdef",
		Proposal: policyinit.Proposal{Toolchains: []policyinit.Toolchain{{Name: "go", Evidence: []string{hostile}}}},
		Policy:   policy.Policy{Setup: policy.Setup{Run: []string{"go mod download"}, Network: true}, Sandbox: policy.SandboxSpec{Image: "agentbot-sandbox:dev"}},
		Failed:   &change.SetupFailure{Output: hostile},
		Refused:  []egress.Refusal{{Host: "evil.example", Port: 443, Reason: hostile}},
	}
	body := SetupBody(s)
	assertInert(t, "the setup's report", body, "<strong>Detected</strong>", "<strong>Setup's network</strong>")
	if !strings.Contains(body, `- "evil.example"`) {
		t.Errorf("the setup's report does not give the server config's line for a refused host:\n%s", body)
	}
}

// The attempts' table and the reproduction's doubts quote reasons that
// may hold the model's words.
func TestAttemptsAndDoubtsAreInert(t *testing.T) {
	t.Parallel()
	r := hostileReport()
	r.Attempts = &Attempts{Ran: 2, Each: []Attempt{{N: 1, Model: "m", Why: hostile}, {N: 2, Model: "m @mallory", Why: "the gate refused"}}}
	r.Reproduction = &change.Reproduction{Why: "no test", Unsure: []string{hostile}}
	assertInert(t, "the failure's attempts", failedText(r, Failure{}), "<h2>Attempts</h2>")
	assertInert(t, "the pull request's attempts and reproduction", Body(r), "<h2>Attempts</h2>", "<h2>Reproduction</h2>")
}
