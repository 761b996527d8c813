package runner

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/tools"
)

func reportTask(title, instructions string) *task {
	return &task{Task: &app.Task{ID: "T1", Repo: "acme/stats", Number: 7, Verb: app.VerbFix, Requester: "ada", Instructions: instructions},
		issue: app.IssueInfo{Title: title}}
}

func TestPRTitle(t *testing.T) {
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
			got := prTitle(reportTask(tt.issue, ""), &agent.State{Title: tt.title, Summary: tt.summary})
			if got != tt.want {
				t.Errorf("prTitle = %q; want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > tools.MaxTitle {
				t.Errorf("title of %d characters", n)
			}
		})
	}
}

func TestPRBody(t *testing.T) {
	t.Parallel()
	st := &agent.State{
		Title:   "Start Sum's loop at the first sample",
		Summary: "Start Sum's loop at the first sample.\n\nThe loop began at index 1, so Sum([1 2 3]) was 5.",
		Checks:  []tools.CheckRun{{Name: "test", Run: "go test ./...", Passed: true, Millis: 1200}},
	}
	body := prBody(reportTask("Sum is wrong", ""), target{}, st, app.Tampering{})
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
	body = prBody(reportTask("Sum is wrong", "keep the public API\nand add a test"), target{}, st, app.Tampering{})
	if !strings.Contains(body, "Asked by @ada on #7:\n\n> keep the public API\n> and add a test\n") {
		t.Errorf("the request with instructions is not quoted:\n%s", body)
	}
}

func TestCommitMessage(t *testing.T) {
	t.Parallel()
	tk := reportTask("Sum is wrong", "")
	got := commitMessage(tk, &agent.State{Summary: "Document Sum of no samples\n\nSum returns 0 for none."})
	if want := "Document Sum of no samples\n\nSum returns 0 for none.\n\nAsked by @ada on #7.\n"; got != want {
		t.Errorf("without a title:\n%q\nwant\n%q", got, want)
	}
	got = commitMessage(tk, &agent.State{Title: "Start at zero", Summary: "Start at zero\n\nThe loop began at 1."})
	if want := "Start at zero\n\nThe loop began at 1.\n\nAsked by @ada on #7.\n"; got != want {
		t.Errorf("with a title:\n%q\nwant\n%q", got, want)
	}
	got = commitMessage(tk, &agent.State{Summary: strings.Repeat("a very long first line ", 10)})
	if subject, _, _ := strings.Cut(got, "\n"); subject != "Fix: Sum is wrong" {
		t.Errorf("a summary too long for a subject gave %q", subject)
	}
}
