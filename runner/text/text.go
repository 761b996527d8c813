// Package text renders everything agentbot says on GitHub about a task —
// status comments, pull request titles, bodies and commit messages, check
// run summaries, replies in review threads — from typed views of the task
// (Request, Report, Failure). The runner decides what happened; this
// package decides how it reads, so that one voice and one set of rules hold
// for every text:
//
//   - the request is quoted with "> ", so that a command inside it is never
//     a command again (app.ParseCommand skips quotes);
//   - what the model wrote, or its code printed, goes through app.Inert,
//     app.InertPlain or app.CodeBlock, so that it closes no other issue,
//     mentions nobody and does not leave its block;
//   - each text says what happened in a sentence its reader can act on.
package text

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
)

// Request is the request a text answers: the task, and the issue or pull
// request it was asked on.
type Request struct {
	Task  *app.Task
	Issue app.IssueInfo
}

// Own is the one issue or pull request the request's texts may close.
func (r Request) Own() app.IssueRef { return app.IssueRef{Repo: r.Task.Repo, Number: r.Task.Number} }

// Quote is the request as a Markdown quote: who asked what, on what; for
// an automatic review or a follow-up on failing CI, the event that
// started it, which nobody asked for in words.
func (r Request) Quote() string {
	t := r.Task
	if a := t.Auto; a != nil {
		return fmt.Sprintf("An automatic review (`review.auto`) of #%d at `%s`, after @%s's pull_request %s.\n", t.Number, ShortSHA(a.HeadSHA), t.Requester, a.Action)
	}
	if ci := t.CI; ci != nil {
		what := "A check"
		if ci.Name != "" {
			what = "Check " + app.CodeSpan(ci.Name, r.Own())
		}
		return fmt.Sprintf("%s failed on #%d at `%s` (%s): a follow-up on failing CI (`pull_request.ci_followups`).\n", what, t.Number, ShortSHA(ci.HeadSHA), ci.Kind)
	}
	what := t.Instructions
	if what == "" {
		what = string(t.Verb)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@%s asked on #%d", t.Requester, t.Number)
	if r.Issue.Title != "" {
		// Anyone may open an issue: its title is no safer than the model's.
		fmt.Fprintf(&b, " (%s)", app.Inert(r.Issue.Title, r.Own()))
	}
	b.WriteString(":\n\n")
	for line := range strings.SplitSeq(what, "\n") {
		b.WriteString("> " + line + "\n")
	}
	if rc := t.ReviewComment; rc != nil {
		fmt.Fprintf(&b, "\non `%s` line %d\n", rc.Path, rc.Line)
	}
	return b.String()
}

// Report is what a task's change came to, as its texts show it.
type Report struct {
	Request
	Loop   *agent.State // the loop's end; a state of its own when the loop never ran
	Base   string       // the commit the task works from
	Pushed string       // the commit pushed, once pushed
	PR     *app.PullRequest
	// BaseChecks are the checks' run on Base before the loop; Verified the
	// final verification of the tree pushed.
	BaseChecks, Verified *change.Verification
	Reproduction         *change.Reproduction
	Attempts             *Attempts
	Plan                 *Plan
	Tampering            app.Tampering
	CI                   []CIFailure
	Egress               Egress
	// Proposed is set for a change proposed to the branch of a person's
	// pull request, which agentbot does not push to.
	Proposed bool
}

// Failure says why a task ends without a fix: the loop's stop, a stop
// someone asked for, or the step of the change that refused or failed it.
type Failure struct {
	Stop      *agent.Stop
	StoppedBy string // the login that asked /agent stop
	Gate      error  // the host gate's refusal, or a change that reproduces nothing
	Diff      string // the gate's diff, when the gate refused
	Setup     *change.SetupFailure
	CannotRun *change.CannotRun    // the checks cannot run on the base, so the agent did not start
	Verify    *change.Verification // the checks failed in the final verification
}

// Plan is the plan a fix wrote before it changed anything.
type Plan struct {
	Version    int    // 1 for the first, one more for each revision
	Text       string // the model's plan, as it wrote it
	Files      []string
	Estimate   string
	Deadline   time.Time // when a plan awaiting approval expires; zero for never
	ApprovedBy string
}

// Bounds of the excerpts a text quotes; the trace behind the check run
// keeps the rest.
const (
	outputExcerpt       = 3000
	diffExcerpt         = 20000
	traceResult         = 300
	reproductionExcerpt = 1500
)

// ShortSHA is a commit id as a pull request shows it.
var ShortSHA = change.ShortSHA

// ShortID is a container id as docker ps shows it.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// FirstLine is s's first line, trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// Head is at most n bytes of s's start, marked when cut.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

func codeList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = app.CodeSpan(n, app.IssueRef{})
	}
	return strings.Join(quoted, ", ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// cell is text that may hold the model's words as a table's cell: on one
// line, inert, with no column of its own.
func cell(s string, own app.IssueRef) string {
	return strings.ReplaceAll(strings.ReplaceAll(app.Inert(oneLine(s), own), "\n", " "), "|", `\|`)
}
