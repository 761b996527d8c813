package text

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/tools"
)

// Review is a review as its texts show it.
type Review struct {
	Request
	Head    string // the commit reviewed
	Base    string // the merge base the head is compared with
	Trigger string // the policy's command; the default one when ""
	Summary string // the model's summary of the review
}

// Finding is a review's finding and what the host proved of it.
type Finding struct {
	tools.Finding
	Tested bool // the host ran its test
	// Proven: the test fails on the head and passes on the base, or the
	// base lacks the code (BaseLacks); PreExisting: it fails on the base
	// too; Why it is not proven otherwise.
	Proven, PreExisting, BaseLacks bool
	Why                            string
	Run                            *change.Verification // the test's run on the head
	// Reproduces: a fix asked in the finding's thread has its failing
	// test as its reproduction.
	Reproduces bool
}

// ReviewBody is the review's own text: the model's summary, and the
// findings that are not inline.
func ReviewBody(r Review, inline, summarized []Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "🔎 **agentbot review** of `%s`: %d inline %s", ShortSHA(r.Head), len(inline), count(len(inline), "comment", "comments"))
	if len(summarized) > 0 {
		fmt.Fprintf(&b, ", %d more below", len(summarized))
	}
	b.WriteString(".\n\n")
	if s := strings.TrimSpace(r.Summary); s != "" {
		b.WriteString(app.Inert(s, r.Own()) + "\n\n")
	}
	if len(summarized) > 0 {
		b.WriteString("**Also found:**\n\n" + findingsList(r.Request, summarized) + "\n")
	}
	b.WriteString("Proven findings come with a test the host ran in a fresh sandbox without network: it fails on the head and passes on the base. Unproven ones are the reviewer's reading.\n")
	return b.String()
}

// FindingComment is a finding's inline comment: severity, proof, the
// model's words made inert, and the test with its failure, collapsed.
func FindingComment(r Review, f Finding) string {
	own := r.Own()
	var b strings.Builder
	// The title is the model's, on a Markdown page: Inert, not InertPlain,
	// which leaves HTML and entities as they are.
	fmt.Fprintf(&b, "**%s** · %s — **%s**\n\n%s\n", severity(f.Severity), proof(f),
		app.Inert(oneLine(f.Title), own), app.Inert(f.Body, own))
	suffix := ""
	if f.Reproduces {
		suffix = " whose reproduction is its test"
	}
	fmt.Fprintf(&b, "\n<sub>Reply `%s fix` in this thread for a fix of this finding%s.</sub>\n", cmp.Or(r.Trigger, app.DefaultCommand), suffix)
	if f.Test == nil || !f.Tested {
		return b.String()
	}
	if !f.Proven && !f.PreExisting {
		fmt.Fprintf(&b, "\nIts test does not show it: %s.\n", f.Why)
	}
	summary := fmt.Sprintf("Test %s", app.CodeSpan(f.Test.Path, own))
	switch {
	case f.Proven && !f.BaseLacks:
		summary += fmt.Sprintf(": fails on %s, passes on the base %s", ShortSHA(r.Head), ShortSHA(r.Base))
	case f.Proven:
		summary += fmt.Sprintf(": fails on %s (the base %s lacks the code)", ShortSHA(r.Head), ShortSHA(r.Base))
	}
	fmt.Fprintf(&b, "\n<details><summary>%s</summary>\n\nAdd it as %s:\n\n%s\n", summary, app.CodeSpan(f.Test.Path, own),
		app.CodeBlock(f.Test.Content, langOf(f.Test.Path), own))
	if v := f.Run; v != nil && len(v.Checks) > 0 {
		c := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(&b, "\n**%s** on `%s` in a fresh sandbox (%s): %s\n\n%s\n", c.Name, ShortSHA(r.Head),
			app.CodeSpan(c.Run, own), bare(resultCell(c)), app.CodeBlock(change.Tail(c.Output, reproductionExcerpt), "", own))
	}
	b.WriteString("</details>\n")
	return b.String()
}

// findingsList is findings as a Markdown list, one line each.
func findingsList(r Request, fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "- **%s** · %s — %s:%d: %s\n", severity(f.Severity), proof(f),
			app.CodeSpan(f.Path, r.Own()), f.Line, app.Inert(oneLine(f.Title), r.Own()))
	}
	return b.String()
}

// findingsTitle is findings in a line: how many, how many proven.
func findingsTitle(n, proven int) string {
	if n == 0 {
		return "No findings"
	}
	return fmt.Sprintf("%d %s, %d proven", n, count(n, "finding", "findings"), proven)
}

// severity is a severity as a review shows it.
func severity(s app.Severity) string {
	switch s {
	case app.SeverityHigh:
		return "🔴 High"
	case app.SeverityMedium:
		return "🟠 Medium"
	}
	return "🟡 Low"
}

// proof says how far a finding is proven, after its severity.
func proof(f Finding) string {
	switch {
	case f.Proven:
		return "✅ proven by a test"
	case f.PreExisting:
		return "♻️ pre-existing: its test fails on the base too"
	}
	return "⚠️ unproven"
}

func count(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// langOf is a code block's language for a test file.
func langOf(path string) string {
	switch {
	case strings.HasSuffix(path, ".go"):
		return "go"
	case strings.HasSuffix(path, ".py"):
		return "python"
	case strings.HasSuffix(path, ".ts"), strings.HasSuffix(path, ".tsx"):
		return "ts"
	case strings.HasSuffix(path, ".js"), strings.HasSuffix(path, ".mjs"), strings.HasSuffix(path, ".cjs"):
		return "js"
	}
	return ""
}

// FindingTask is the task a finding makes, for the model: what the review
// found, where, how far it was proven, and the test to add unchanged.
func FindingTask(r Request, f Finding) string {
	own := r.Own()
	var b strings.Builder
	fmt.Fprintf(&b, "## The review's finding to fix\n\nagentbot's review found, at %s line %d (%s, %s): %s\n\n%s\n",
		app.CodeSpan(f.Path, own), f.Line, severity(f.Severity), proof(f),
		app.InertPlain(oneLine(f.Title), own), strings.TrimSpace(app.CleanText(f.Body)))
	switch t := f.Test; {
	case f.Reproduces:
		fmt.Fprintf(&b, "\nIts test, %s, fails on this pull request's head. Add it as it is, at that path, and change the code so that it passes; "+
			"do not change the test. It is the fix's reproduction.\n\n%s\n", app.CodeSpan(t.Path, own), Fence(t.Content, langOf(t.Path)))
	case t != nil:
		why := "it was not run"
		if f.Why != "" {
			why = f.Why
		}
		fmt.Fprintf(&b, "\nThe review's test, %s, did not show it (%s). Start from it: the change's tests must fail without the fix and pass with it.\n\n%s\n",
			app.CodeSpan(t.Path, own), why, Fence(t.Content, langOf(t.Path)))
	default:
		b.WriteString("\nThe finding came without a test: write one that fails without the fix and passes with it.\n")
	}
	return b.String()
}

// Fence puts s in a fenced block, of language info, whose fence s does
// not hold.
func Fence(s, info string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + info + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}
