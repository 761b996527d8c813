package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/workspace"
)

// A review set reads a pull request's head and proposes findings: the
// read tools, report_finding (called once per finding) and finish_review.
// Nothing is written to the tree; a finding's test is held in its
// arguments, and the host runs it in a sandbox of its own after the loop.

// Finding is what report_finding accepted: a problem at a line of the
// pull request's head, with a test that shows it when it is about
// behaviour.
type Finding struct {
	Severity app.Severity `json:"severity"`
	Path     string       `json:"path"`
	Line     int          `json:"line"`
	Title    string       `json:"title"`
	Body     string       `json:"body"`
	Test     *FindingTest `json:"test,omitempty"`
}

// FindingTest is a test file the model wrote to prove a finding: it must
// fail on the head and, where the base has the code, pass there.
type FindingTest struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Limits of what one review may propose.
const (
	maxFindingBody  = 4 << 10
	maxFindingTest  = 32 << 10
	MaxFindingCalls = 20 // accepted findings per review; more are refused
)

func (f Finding) validate() error {
	var problems []string
	if app.SeverityOf(string(f.Severity)) == "" {
		problems = append(problems, "severity must be high, medium or low")
	}
	if strings.TrimSpace(f.Path) == "" || f.Line < 1 {
		problems = append(problems, "path and line (from 1) locate the finding on the pull request's head")
	}
	if strings.TrimSpace(f.Title) == "" || strings.TrimSpace(f.Body) == "" {
		problems = append(problems, "title and body are required")
	}
	if len(f.Body) > maxFindingBody {
		problems = append(problems, fmt.Sprintf("body is %d bytes; at most %d", len(f.Body), maxFindingBody))
	}
	if t := f.Test; t != nil {
		switch {
		case !workspace.IsTestFile(t.Path):
			problems = append(problems, fmt.Sprintf("test.path %q is not a test file by its language's conventions (such as x_test.go, test_x.py, x.test.js)", t.Path))
		case strings.TrimSpace(t.Content) == "":
			problems = append(problems, "test.content is empty")
		case len(t.Content) > maxFindingTest:
			problems = append(problems, fmt.Sprintf("test.content is %d bytes; at most %d", len(t.Content), maxFindingTest))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// reportFinding checks that the finding's line exists on the head and
// accepts it; the loop's transcript keeps it, and FindingsOf reads it back.
func reportFinding(ctx context.Context, s *Set, f Finding) Result {
	p, b, fail, ok := s.readNamed(ctx, f.Path)
	if !ok {
		return fail
	}
	if n := strings.Count(strings.TrimSuffix(string(b), "\n"), "\n") + 1; f.Line > n {
		return failed(p, "%s has %d lines; line %d is past the end", p, n, f.Line)
	}
	if t := f.Test; t != nil {
		if _, err := cleanPath(t.Path); err != nil {
			return failed(t.Path, "test.path: %v", err)
		}
	}
	s.findings++
	if s.findings > MaxFindingCalls {
		return failed(p, "a review holds at most %d findings; keep the most severe and call finish_review", MaxFindingCalls)
	}
	return Result{Outcome: OK, Target: fmt.Sprintf("%s:%d", p, f.Line), Output: findingAccepted}
}

// findingAccepted is report_finding's answer to an accepted finding, by
// which FindingsOf tells it from a refused one.
const findingAccepted = "recorded: the host will run its test, if any, on the head and on the base."

type finishReviewArgs struct {
	Summary string `json:"summary"`
}

func (a finishReviewArgs) validate() error {
	if strings.TrimSpace(a.Summary) == "" {
		return errors.New("summary is required: one or two sentences on the pull request as a whole")
	}
	return nil
}

func finishReview(_ context.Context, _ *Set, a finishReviewArgs) Result {
	return Result{Outcome: OK, Target: "review", Done: true, Summary: strings.TrimSpace(a.Summary), Output: "accepted: the review will be posted."}
}

// reviewRegistry is the read tools, report_finding and finish_review.
func reviewRegistry() []*tool {
	return readTools(
		&tool{name: "report_finding", class: ClassCheck, schema: reportFindingSchema, run: withArgs(reportFinding),
			desc: "Report one finding at a line of the pull request's head. For a finding about behaviour (a bug, a regression, an unhandled case) give test: a complete test file that fails on the head because of the finding; the host runs it on the head and on the base. Call once per finding."},
		&tool{name: "finish_review", class: ClassCheck, schema: finishReviewSchema, run: withArgs(finishReview),
			desc: "End the review with a summary of the pull request. Call it with no finding reported when there is nothing worth a comment."})
}

// FindingsOf returns the findings report_finding accepted in a
// transcript's calls, in order: calls maps a call's id to its tool and
// arguments, accepted tells whether the call's result accepted it.
func FindingsOf(calls []Call, accepted func(id string) string) []Finding {
	var out []Finding
	for _, c := range calls {
		if c.Name != "report_finding" || accepted(c.ID) != findingAccepted {
			continue
		}
		var f Finding
		if json.Unmarshal([]byte(c.Arguments), &f) == nil {
			f.Severity = app.SeverityOf(string(f.Severity))
			out = append(out, f)
		}
	}
	return out
}

// Call is one tool call of a transcript.
type Call struct {
	ID, Name, Arguments string
}

const reportFindingSchema = `{"type":"object","properties":{
"severity":{"type":"string","enum":["high","medium","low"],"description":"high: wrong results, data loss, a security hole; medium: a bug in a less common case; low: a minor issue"},
"path":{"type":"string","description":"the file, relative to the repository root"},
"line":{"type":"integer","minimum":1,"description":"the line of the head the finding is about; it should be a line the pull request changed"},
"title":{"type":"string","description":"the finding in one short sentence"},
"body":{"type":"string","description":"why it is a problem and what to do, in Markdown, briefly"},
"test":{"type":"object","properties":{
 "path":{"type":"string","description":"a new test file's path, following the repository's conventions"},
 "content":{"type":"string","description":"the whole test file; it must fail on the head because of the finding"}},
 "required":["path","content"],"additionalProperties":false}},
"required":["severity","path","line","title","body"],"additionalProperties":false}`

const finishReviewSchema = `{"type":"object","properties":{
"summary":{"type":"string","description":"one or two sentences on the pull request as a whole"}},"required":["summary"],"additionalProperties":false}`
