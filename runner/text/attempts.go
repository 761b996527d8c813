package text

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
)

// Attempts is what became of a task's attempts under limits.attempts, as
// the task's progress keeps it for the pull request and the reports.
type Attempts struct {
	Ran    int       `json:"ran"`
	Passed int       `json:"passed"`
	Winner int       `json:"winner,omitempty"` // the attempt proposed; 0 when none passed
	Why    string    `json:"why,omitempty"`    // why the winner won
	Draft  int       `json:"draft,omitempty"`  // the attempt proposed as a draft when none passed
	Each   []Attempt `json:"each"`
	// Tokens and Cost are every attempt's, added up.
	Tokens int64   `json:"tokens"`
	Cost   float64 `json:"cost_usd"`
}

// Attempt is one attempt, a line of the pull request's table.
type Attempt struct {
	N           int      `json:"n"`
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature,omitempty"` // nil: the endpoint's default
	Passed      bool     `json:"passed"`
	Why         string   `json:"why,omitempty"` // why it did not pass
	Reproduced  bool     `json:"reproduced,omitempty"`
	Lines       int      `json:"lines"`
	Files       int      `json:"files"`
	Tokens      int64    `json:"tokens"`
	Cost        float64  `json:"cost_usd"`
}

// Proposed is the attempt whose change is the pull request: the winner,
// or the draft; 0 for none.
func (a *Attempts) Proposed() int { return cmp.Or(a.Winner, a.Draft) }

// Line is the attempt's verdict in a line.
func (s Attempt) Line() string {
	if !s.Passed {
		return "not proposed: " + s.Why
	}
	proof := ""
	if s.Reproduced {
		proof = ", reproduced"
	}
	files := "files"
	if s.Files == 1 {
		files = "file"
	}
	return fmt.Sprintf("passed%s: %d lines in %d %s, %d tokens", proof, s.Lines, s.Files, files, s.Tokens)
}

// attempts is the attempts as a section of the pull request's body or a
// failure's report, or "" for a task of one attempt.
func attempts(r Report) string {
	a := r.Attempts
	if a == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n## Attempts\n\n")
	if a.Winner > 0 {
		fmt.Fprintf(&b, "**%d attempts ran, %d passed;** attempt %d is this change, because %s.\n\n", a.Ran, a.Passed, a.Winner, a.Why)
	} else if a.Draft > 0 {
		fmt.Fprintf(&b, "**%d attempts ran, none passed.** This draft is attempt %d's change.\n\n", a.Ran, a.Draft)
	} else {
		fmt.Fprintf(&b, "**%d attempts ran, none passed.** The report above is attempt 1's.\n\n", a.Ran)
	}
	b.WriteString("| attempt | model | result | tokens | cost |\n| --- | --- | --- | --- | --- |\n")
	for _, s := range a.Each {
		model := app.CodeSpan(s.Model, app.IssueRef{})
		if s.Temperature != nil {
			model += fmt.Sprintf(" at temperature %v", *s.Temperature)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | $%.4f |\n", s.N, model,
			cell(s.Line(), r.Own()), s.Tokens, s.Cost)
	}
	b.WriteString("\nEvery attempt's diff is in the trace.\n")
	return b.String()
}
