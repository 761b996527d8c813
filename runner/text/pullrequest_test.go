package text

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/tools"
)

// report is a fix's report on issue #7 titled title, asked by ada with
// instructions, whose loop ended with st.
func report(title, instructions string, st *agent.State) Report {
	return Report{Request: Request{Task: &app.Task{ID: "T1", Repo: "acme/stats", Number: 7, Verb: app.VerbFix, Requester: "ada", Instructions: instructions},
		Issue: app.IssueInfo{Title: title}}, Loop: st}
}

func TestTitle(t *testing.T) {
	t.Parallel()
	long := "Sum drops the first sample when the slice is long, and Mean inherits the error everywhere it is used"
	tests := []struct {
		name, issue, title, summary, want string
	}{
		{"finish's title", "Sum is wrong", "Start Sum's loop at the first sample", "Changed the loop.", "Start Sum's loop at the first sample"},
		{"from the issue", "Sum is wrong", "", "Start the loop at 0\n\nbecause…", "Fix: Sum is wrong"},
		{"long issue title cut at a word", long, "", "A long summary that must never become the title", "Fix: Sum drops the first sample when the slice is long, and Mean…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Title(report(tt.issue, "", &agent.State{Title: tt.title, Summary: tt.summary}))
			if got != tt.want {
				t.Errorf("Title = %q; want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > tools.MaxTitle {
				t.Errorf("title of %d characters", n)
			}
		})
	}
}

func TestBody(t *testing.T) {
	t.Parallel()
	st := &agent.State{
		Title:   "Start Sum's loop at the first sample",
		Summary: "Start Sum's loop at the first sample.\n\nThe loop began at index 1, so Sum([1 2 3]) was 5.",
		Checks:  []tools.CheckRun{{Name: "test", Run: "go test ./...", Passed: true, Millis: 1200}},
	}
	body := Body(report("Sum is wrong", "", st))
	at := 0
	for _, want := range []string{
		"## What changed and why\n\nThe loop began at index 1",
		"## Checks\n\n| check | command | result | time |", "| test | `go test ./...` | ✅ pass | 1.2s |",
		"## Usage\n\n",
		"Asked by @ada on #7.\n",
		"Fixes #7",
		"<details><summary>Trace</summary>",
	} {
		i := strings.Index(body[at:], want)
		if i < 0 {
			t.Fatalf("body lacks, in order, %q:\n%s", want, body)
		}
		at += i + len(want)
	}
	if strings.Contains(body, "> fix") || strings.Contains(body, "Start Sum's loop at the first sample.") {
		t.Errorf("the bare verb is quoted, or the title repeated:\n%s", body)
	}
	body = Body(report("Sum is wrong", "keep the public API\nand add a test", st))
	if !strings.Contains(body, "Asked by @ada on #7:\n\n> keep the public API\n> and add a test\n") {
		t.Errorf("the request with instructions is not quoted:\n%s", body)
	}
}

func TestCommitMessage(t *testing.T) {
	t.Parallel()
	message := func(st *agent.State) string { return CommitMessage(report("Sum is wrong", "", st)) }
	got := message(&agent.State{Summary: "Document Sum of no samples\n\nSum returns 0 for none."})
	if want := "Document Sum of no samples\n\nSum returns 0 for none.\n\nAsked by @ada on #7.\n"; got != want {
		t.Errorf("without a title:\n%q\nwant\n%q", got, want)
	}
	got = message(&agent.State{Title: "Start at zero", Summary: "Start at zero\n\nThe loop began at 1."})
	if want := "Start at zero\n\nThe loop began at 1.\n\nAsked by @ada on #7.\n"; got != want {
		t.Errorf("with a title:\n%q\nwant\n%q", got, want)
	}
	got = message(&agent.State{Summary: strings.Repeat("a very long first line ", 10)})
	if subject, _, _ := strings.Cut(got, "\n"); subject != "Fix: Sum is wrong" {
		t.Errorf("a summary too long for a subject gave %q", subject)
	}
}

func TestPlanSectionNamesDepartures(t *testing.T) {
	t.Parallel()
	r := report("Sum is wrong", "", &agent.State{Touched: []string{"stats.go"}})
	r.Plan = &Plan{Files: []string{"stats.go"}, ApprovedBy: "ada"}
	if got := plan(r); !strings.Contains(got, "keeps to its files") {
		t.Errorf("a change within the plan: %q", got)
	}
	r.Loop = &agent.State{Touched: []string{"stats.go", "mean.go"}}
	got := plan(r)
	if !strings.Contains(got, "## Departures from the approved plan") || !strings.Contains(got, "`mean.go`") || strings.Contains(got, "`stats.go`") {
		t.Errorf("a change past the plan: %q", got)
	}
	if !strings.Contains(Body(r), got) {
		t.Errorf("the pull request's body lacks the plan's section:\n%s", Body(r))
	}
	r.Plan.ApprovedBy = ""
	if got := plan(r); got != "" {
		t.Errorf("a plan only shown: %q; want no section", got)
	}
}

func TestFenceOutlastsTheText(t *testing.T) {
	t.Parallel()
	if got := Fence("a ```` b", "diff"); got != "`````diff\na ```` b\n`````" {
		t.Errorf("Fence %q", got)
	}
}

func TestEstimateIsMedianAndRange(t *testing.T) {
	t.Parallel()
	if got := spread([]float64{9, 1, 4, 3}, "%.1f"); got != "3.5 (1.0–9.0)" {
		t.Errorf("spread = %q", got)
	}
	if got := spread([]float64{2}, "%.0f"); got != "2" {
		t.Errorf("spread of one = %q", got)
	}
	if got := Estimate("acme/stats", 90, nil, nil, nil); !strings.Contains(got, "No task on acme/stats has finished in the last 90 days") {
		t.Errorf("an estimate without history: %q", got)
	}
	got := Estimate("acme/stats", 90, []float64{3, 5}, []float64{1000, 3000}, []float64{0.01, 0.03})
	if want := "From 2 finished tasks on acme/stats in the last 90 days: 4 (3–5) steps, 2000 (1000–3000) tokens, $0.02 (0.01–0.03)"; !strings.HasPrefix(got, want) {
		t.Errorf("Estimate = %q; want it to start %q", got, want)
	}
}
