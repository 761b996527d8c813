package text

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/tools"
)

func TestReproductionSection(t *testing.T) {
	t.Parallel()
	r := hostileReport()
	if s := reproduction(r); s != "" {
		t.Errorf("a section without a reproduction: %q", s)
	}
	r.Pushed = "feedc0ffee00112233445566778899aabbccddee"
	r.Reproduction = &change.Reproduction{Mode: policy.ReproducePreferred, Base: "0123456789abcdef0123456789abcdef01234567",
		Files: []string{"stats_test.go", "tests/`@mallory`fixes #99.sh"}, Tests: []string{"TestSum"}, Reproduced: true,
		Run: &change.Verification{Container: "c0ffee", Checks: []tools.CheckRun{
			{Name: "test", Run: "go test -run '^(TestSum)$' ./...", ExitCode: 1, Output: "--- FAIL: TestSum\n" + hostile},
		}}}
	s := reproduction(r)
	for _, want := range []string{
		"✅ **Reproduced:** `TestSum` fails on `0123456` (check **test**, `go test -run '^(TestSum)$' ./...`: fail (exit 1); output below), and passes on `feedc0f` in the final verification.",
		"--- FAIL: TestSum",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the section lacks %q:\n%s", want, s)
		}
	}
	assertInert(t, "the reproduction section", s, "<summary>test on 0123456</summary>")
	if !strings.Contains(checkSummary(r), s) || !strings.Contains(Body(r), s) {
		t.Errorf("the check run's summary or the pull request's body lacks the reproduction")
	}

	r.Reproduction = &change.Reproduction{Mode: policy.ReproducePreferred, Base: "0123456789", Why: "the change adds or changes no test"}
	if s := reproduction(r); !strings.Contains(s, "⚠️ **Not reproduced: the fix is unproven.** The change adds or changes no test.") {
		t.Errorf("an unproven fix is not said to be:\n%s", s)
	}
}

func TestEndedSaysTheCIDecisionsAndTheRefusedHosts(t *testing.T) {
	t.Parallel()
	r := Report{Request: Request{Task: &app.Task{Repo: "octo/hello", Number: 7, Verb: app.VerbFixCI},
		Issue: app.IssueInfo{Pull: &app.PullInfo{Head: "agent/3-x", Base: "main"}}}}
	if got := Ended(r); got != "" {
		t.Errorf("a task with neither: %q", got)
	}
	r.CI = []CIFailure{
		{Check: "test", Decision: app.CIFollowUp},
		{Check: "lint", Decision: app.CIFailsOnBase, BaseRun: "https://x/runs/9", By: "t0"},
		{Check: "vet", Decision: app.CIFollowUp, By: "t0"},
		{Check: "race", Decision: app.CIFollowUpsUsed},
		{Check: "x` @mallory `y", Decision: app.CIFollowUp},
	}
	for i := range maxRefusalsShown + 2 {
		r.Egress.Refused = append(r.Egress.Refused, egress.Refusal{Host: fmt.Sprintf("h%d.example @mallory", i), Port: 443, Reason: "not allowed"})
	}
	r.Egress.More = 3
	got := Ended(r)
	for _, want := range []string{
		"- `test`: a follow-up addresses it\n",
		"- `lint`: this check fails on main too ([its latest run there](https://x/runs/9)), as task `t0` answered\n",
		"- `vet`: a follow-up addresses it, as task `t0` answered\n",
		"- `race`: no follow-up, the automatic follow-ups are used",
		"**Setup's network:**", "h0.example", "- … and 2 more (see the trace)", "- … and 3 more, past the",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the sections lack %q:\n%s", want, got)
		}
	}
	assertInert(t, "the closing sections", got, "Failing checks:")
	r.Task.Verb = app.VerbSetup
	if strings.Contains(Ended(r), "Setup's network") {
		t.Errorf("/agent setup's status lists the refusals its own report says")
	}
}

// A follow-up that failing CI started says so: nobody asked for it.
func TestQuoteOfAFollowUpOnFailingCI(t *testing.T) {
	t.Parallel()
	r := Request{Task: &app.Task{Repo: "octo/hello", Number: 2, Requester: "agentbot[bot]", Verb: app.VerbFixCI,
		CI: &app.CIEvent{Kind: "check_run", Name: "test` @mallory", HeadSHA: "0123456789abcdef"}}}
	got := r.Quote()
	if want := "failed on #2 at `0123456` (check_run): a follow-up on failing CI (`pull_request.ci_followups`)."; !strings.Contains(got, want) || strings.Contains(got, "asked") {
		t.Errorf("Quote = %q; want it to say %q and no one asked", got, want)
	}
	assertInert(t, "the quote of a CI follow-up", got, "<code>")
}
