package runner

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/tools"
)

// What the runner says on GitHub. Every text quotes the request with "> "
// so that a command inside it is never a command again (ParseCommand skips
// quotes), and says what happened in a sentence a requester can act on.
// What the model wrote, or its code printed, goes through app.Inert or
// app.CodeBlock, so that it can close no other issue, mention nobody and
// not leave its block.

// ownIssue is the one issue or pull request tk's text may close.
func ownIssue(tk *task) app.IssueRef { return app.IssueRef{Repo: tk.Repo, Number: tk.Number} }

// Bounds of the excerpts in a failure report; the trace behind the check
// run keeps the rest.
const (
	outputExcerpt = 3000
	diffExcerpt   = 20000
	traceResult   = 300
)

// quoteRequest is the request as a Markdown quote: who asked what, on
// what; for an automatic review, the event that started it.
func quoteRequest(tk *task) string {
	if a := tk.Auto; a != nil {
		return fmt.Sprintf("An automatic review (`review.auto`) of #%d at `%s`, after @%s's pull_request %s.\n", tk.Number, shortSHA(a.HeadSHA), tk.Requester, a.Action)
	}
	what := tk.Instructions
	if what == "" {
		what = string(tk.Verb)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@%s asked on #%d", tk.Requester, tk.Number)
	if tk.issue.Title != "" {
		// Anyone may open an issue: its title is no safer than the model's.
		fmt.Fprintf(&b, " (%s)", app.Inert(tk.issue.Title, ownIssue(tk)))
	}
	b.WriteString(":\n\n")
	for line := range strings.SplitSeq(what, "\n") {
		b.WriteString("> " + line + "\n")
	}
	if rc := tk.ReviewComment; rc != nil {
		fmt.Fprintf(&b, "\non `%s` line %d\n", rc.Path, rc.Line)
	}
	return b.String()
}

func runningText(tk *task, what string) string {
	return fmt.Sprintf("⏳ **Working on it** — %s.\n\n%s", what, quoteRequest(tk))
}

// threadReply is a task's answer in the review thread it was asked in: the
// status comment's first paragraph, which says how it ended, and where the
// rest is.
func threadReply(tk *task, status string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(status), "\n\n")
	return fmt.Sprintf("%s\n\nThe checks, the trace and the request are in the status comment on #%d.", first, tk.Number)
}

func waitingText(tk *task, behind string) string {
	return fmt.Sprintf("⏳ **Queued** — waiting behind task `%s`, which is running on #%d; this one starts when it ends.\n\n%s",
		behind, tk.Number, quoteRequest(tk))
}

// approvalText shows the call awaiting approval with its arguments as the
// tool would read them: re-encoded JSON, or the raw text quoted when it is
// no JSON at all, which the tool refuses whatever the answer.
func approvalText(tk *task, st *agent.State) string {
	c := st.Pending
	args, ok := app.ShownArguments(c.Arguments)
	with := "with:\n\n" + app.CodeBlock(args, "json", ownIssue(tk))
	if !ok {
		with = "with arguments that are not valid JSON, so the tool will refuse the call even if approved:\n\n" +
			app.CodeBlock(args, "", ownIssue(tk))
	}
	return fmt.Sprintf("✋ **Waiting for approval.** The agent wants to call `%s` %s\nAn approver may answer `%s approve` or `%s deny`.\n\n%s",
		c.Name, with, app.DefaultCommand, app.DefaultCommand, quoteRequest(tk))
}

func doneText(tk *task, st *agent.State, pr app.PullRequest) string {
	return fmt.Sprintf("✅ **Done:** #%d (%s)\n\n%s\n%s\n\n%s", pr.Number, pr.HTMLURL, checksSection(tk, st), usageLine(st), quoteRequest(tk))
}

// reasonLine is why a task stopped, in one line: the stop rule and its
// detail, or the gate's refusal. Details may quote the model or its
// commands, so they close no issue and mention nobody.
func reasonLine(st *agent.State, f failure) string {
	switch {
	case f.stoppedBy != "":
		return "stopped by @" + f.stoppedBy
	case f.setup != nil:
		return app.Inert(f.setup.Error(), app.IssueRef{})
	case f.cannotRun != nil:
		return app.Inert("the checks cannot run: "+f.cannotRun.Cause, app.IssueRef{})
	case f.gate != nil:
		return app.Inert(firstLine(app.ErrorMessage(f.gate)), app.IssueRef{})
	case f.verify != nil:
		return change.VerifyReason(f.verify)
	case f.stop != nil:
		return app.Inert(fmt.Sprintf("%s: %s", f.stop.Reason, f.stop.Detail), app.IssueRef{})
	}
	return string(st.Status)
}

// failureText says truthfully why a task ended without a pull request:
// the reason, the last failing check's output (trimmed), the refusals,
// and the partial diff folded away.
func failureText(tk *task, st *agent.State, f failure) string {
	var b strings.Builder
	if pr := tk.prog.PR; pr != nil {
		fmt.Fprintf(&b, "❌ **The checks did not pass;** the partial change is in draft #%d (%s). %s\n\n", pr.Number, pr.HTMLURL, reasonLine(st, f))
	} else {
		fmt.Fprintf(&b, "❌ **No pull request.** %s\n\n", reasonLine(st, f))
	}
	if f.setup != nil {
		fmt.Fprintf(&b, "The repository's setup (`setup.run` in the policy) failed, so the agent did not start:\n\n%s\n",
			app.CodeBlock(change.Tail(f.setup.Output, outputExcerpt), "", ownIssue(tk)))
	}
	if f.cannotRun != nil {
		b.WriteString(cannotRunText(tk, f.cannotRun))
	}
	if f.gate != nil {
		fmt.Fprintf(&b, "The host's check of the change against the policy refused it:\n\n%s\n", app.CodeBlock(app.ErrorMessage(f.gate), "", ownIssue(tk)))
	}
	if f.verify != nil {
		b.WriteString(verificationText(f.verify))
	} else if c := lastFailure(st); c != nil {
		fmt.Fprintf(&b, "The last failing check was **%s** (`%s`, exit %d", c.Name, c.Run, c.ExitCode)
		if c.TimedOut {
			b.WriteString(", timed out")
		}
		fmt.Fprintf(&b, "):\n\n%s\n", app.CodeBlock(change.Tail(c.Output, outputExcerpt), "", ownIssue(tk)))
	}
	if n := st.Counts; n.BlockedWrites+n.BlockedCommands > 0 {
		fmt.Fprintf(&b, "Safety: the policy refused %d writes and %d commands (see the trace).\n\n", n.BlockedWrites, n.BlockedCommands)
	}
	b.WriteString(checksSection(tk, st) + "\n" + usageLine(st) + "\n\n")
	if a := attemptsSection(tk); a != "" {
		b.WriteString(strings.TrimPrefix(a, "\n\n") + "\n")
	}
	diff := f.diff
	if diff == "" {
		diff = st.Diff
	}
	if diff != "" {
		fmt.Fprintf(&b, "<details><summary>Partial diff</summary>\n\n%s\n</details>\n\n", app.CodeBlock(change.Tail(diff, diffExcerpt), "diff", ownIssue(tk)))
	}
	b.WriteString(quoteRequest(tk))
	return b.String()
}

// lastFailure is the last check run if it failed.
func lastFailure(st *agent.State) *tools.CheckRun {
	if len(st.Checks) == 0 || st.Checks[len(st.Checks)-1].Passed {
		return nil
	}
	return &st.Checks[len(st.Checks)-1]
}

// checksTable lists the latest result of each check, in the order first run.
func checksTable(st *agent.State) string {
	if len(st.Checks) == 0 {
		return "No check was run.\n"
	}
	var order []string
	latest := map[string]int{}
	for i, c := range st.Checks {
		if _, seen := latest[c.Name]; !seen {
			order = append(order, c.Name)
		}
		latest[c.Name] = i
	}
	var b strings.Builder
	b.WriteString("| check | command | result | time |\n| --- | --- | --- | --- |\n")
	for _, name := range order {
		c := st.Checks[latest[name]]
		result := "✅ pass"
		if !c.Passed {
			result = fmt.Sprintf("❌ fail (exit %d)", c.ExitCode)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %.1fs |\n", c.Name, c.Run, result, float64(c.Millis)/1000)
	}
	return b.String()
}

// trace is the loop's steps as text: each tool call with the start of its
// result, so refusals and failures can be read after the fact.
func trace(st *agent.State) string {
	results := map[string]string{}
	for _, m := range st.Messages {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	var b strings.Builder
	step := 0
	for _, m := range st.Messages {
		if m.Role != llm.RoleAssistant {
			continue
		}
		step++
		if text := strings.TrimSpace(m.Content); text != "" {
			fmt.Fprintf(&b, "step %d: %s\n", step, head(text, traceResult))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "step %d: %s %s\n    → %s\n", step, c.Name, head(c.Arguments, traceResult),
				strings.ReplaceAll(head(results[c.ID], traceResult), "\n", "\n      "))
		}
	}
	if st.Stop != nil {
		fmt.Fprintf(&b, "stopped: %s: %s\n", st.Stop.Reason, st.Stop.Detail)
	}
	n := st.Counts
	fmt.Fprintf(&b, "%d tool calls, %d invalid, %d writes refused, %d commands refused (safety events: %d)\n",
		n.ToolCalls, n.InvalidCalls, n.BlockedWrites, n.BlockedCommands, n.BlockedWrites+n.BlockedCommands)
	return b.String()
}

// prTitle is the change's title: the one the model gave finish, which
// the tool holds to tools.MaxTitle characters, or one made from the
// issue's title. Never the summary cut short: a title is written whole.
func prTitle(tk *task, st *agent.State) string {
	if t := strings.TrimSpace(st.Title); t != "" {
		return shortTitle(app.InertPlain(t, ownIssue(tk)))
	}
	title := app.InertPlain(strings.TrimSpace(tk.issue.Title), ownIssue(tk))
	if tk.issue.Pull != nil {
		return shortTitle(title)
	}
	return shortTitle("Fix: " + title)
}

// shortTitle fits a title in tools.MaxTitle characters, cutting at a word
// boundary and saying so.
func shortTitle(t string) string {
	r := []rune(t)
	if len(r) <= tools.MaxTitle {
		return t
	}
	cut := string(r[:tools.MaxTitle-1])
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:-") + "…"
}

// commitMessage is the commit's message: finish's title or, when the model
// gave none, the summary's first line if it fits a subject, then the
// summary and who asked.
func commitMessage(tk *task, st *agent.State) string {
	subject := strings.TrimSpace(st.Title)
	if first := firstLine(st.Summary); subject == "" && first != "" && utf8.RuneCountInString(first) <= tools.MaxTitle {
		subject = first
	}
	if subject == "" {
		subject = prTitle(tk, st)
	}
	msg := app.InertPlain(subject, ownIssue(tk)) + "\n"
	if s := summaryBody(&agent.State{Summary: st.Summary, Title: subject}); s != "" {
		msg += "\n" + app.InertPlain(s, ownIssue(tk)) + "\n"
	}
	if tk.CI != nil {
		// The event's sender pushed the failing head: most often the App.
		return msg + fmt.Sprintf("\nFollows up on failing CI on #%d.\n", tk.Number)
	}
	return msg + fmt.Sprintf("\nAsked by @%s on #%d.\n", tk.Requester, tk.Number)
}

// prBody is the pull request's description, in the order a reviewer
// reads it: what changed and why, the checks with their results, then
// what a reviewer acts on — the reproduction, the tests and checks the
// change touches (tamper), the attempts — then the usage, who asked (the
// request quoted only when it says more than the bare verb), the issue
// link, and last the trace folded away.
func prBody(tk *task, tg target, st *agent.State, tamper app.Tampering) string {
	var b strings.Builder
	b.WriteString("## What changed and why\n\n")
	if s := summaryBody(st); s != "" {
		b.WriteString(app.Inert(s, ownIssue(tk)) + "\n")
	} else {
		b.WriteString("The agent gave no summary; see the diff.\n")
	}
	b.WriteString("\n## Checks\n\n" + checksSection(tk, st))
	b.WriteString(reproductionSection(tk) + tamperingSection(tamper) + attemptsSection(tk) + planSection(tk, st))
	fmt.Fprintf(&b, "\n## Usage\n\n%s.\n", usageLine(st))
	fmt.Fprintf(&b, "\nAsked by @%s on #%d", tk.Requester, tk.Number)
	if what := strings.TrimSpace(tk.Instructions); what != "" {
		b.WriteString(":\n\n")
		for line := range strings.SplitSeq(what, "\n") {
			b.WriteString("> " + line + "\n")
		}
	} else {
		b.WriteString(".\n")
	}
	if rc := tk.ReviewComment; rc != nil {
		fmt.Fprintf(&b, "\non `%s` line %d\n", rc.Path, rc.Line)
	}
	if tk.issue.Pull == nil {
		fmt.Fprintf(&b, "\nFixes #%d\n", tk.Number)
	}
	b.WriteString(proposalLine(tk, tg))
	fmt.Fprintf(&b, "\n<details><summary>Trace</summary>\n\n%s\n</details>\n", app.CodeBlock(change.Tail(trace(st), diffExcerpt), "", ownIssue(tk)))
	return b.String()
}

// summaryBody is finish's summary without a first line that repeats the
// title: models often open the summary with it.
func summaryBody(st *agent.State) string {
	s := strings.TrimSpace(st.Summary)
	first, rest, _ := strings.Cut(s, "\n")
	if t := strings.TrimSpace(st.Title); t != "" && strings.EqualFold(strings.TrimRight(strings.TrimSpace(first), "."), strings.TrimRight(t, ".")) {
		return strings.TrimSpace(rest)
	}
	return s
}

// helpText is the grammar and the repository's policy in short.
func helpText(p policy.Policy) string {
	cmd := p.Trigger.Command
	var b strings.Builder
	fmt.Fprintf(&b, "**agentbot commands**\n\n")
	for _, l := range [][2]string{
		{"fix [instructions]", "fix this issue and open a pull request"},
		{"<feedback>", "on an agent pull request: change it as asked"},
		{"ask <question>", "answer a question about the code, with links to the lines; changes nothing"},
		{"explain [topic]", "explain this issue or pull request, or the topic, from the code; changes nothing"},
		{"review [focus]", "on a pull request: review it; findings about behaviour come with a test the host ran"},
		{"fix-ci", "on an agent pull request: make its failing CI pass"},
		{"setup", "on an issue: infer this repository's policy, prove it in the sandbox and propose it in a pull request"},
		{"retry", "run the last failed fix again"},
		{"stop", "stop the running fix"},
		{"note <text>", "guidance for the running fix, which the agent reads at its next step"},
		{"status", "where the tasks on this issue or pull request are"},
		{"help", "this message"},
	} {
		fmt.Fprintf(&b, "- `%s %s`: %s\n", cmd, l[0], l[1])
	}
	fmt.Fprintf(&b, "\n**This repository's policy** (%s)\n\n", p.Source)
	for _, c := range p.Checks {
		fmt.Fprintf(&b, "- check **%s**: `%s`\n", c.Name, c.Run)
	}
	fmt.Fprintf(&b, "- who may ask: roles %s, users %s\n", strings.Join(p.Trigger.Roles, ", "), strings.Join(p.Trigger.Users, ", "))
	fmt.Fprintf(&b, "- paths: allow %q, deny %q\n", p.Paths.Allow, p.Paths.Deny)
	fmt.Fprintf(&b, "- limits: %d iterations, %d changed lines, %d files\n", p.Limits.Iterations, p.Limits.DiffLines, p.Limits.FilesChanged)
	if n := p.Limits.Attempts; n > 1 {
		fmt.Fprintf(&b, "- %d attempts side by side; the best change that passes is proposed\n", n)
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// head is at most n bytes of s's start, marked when cut.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// cannotRunText says, in a failure report, why the checks cannot run and
// what to add to the policy, with the base run's output.
func cannotRunText(tk *task, cr *CannotRun) string {
	var b strings.Builder
	base := shortSHA(tk.prog.Base)
	fmt.Fprintf(&b, "The checks cannot run in the sandbox as the policy prepares it, so the agent did not start: on `%s`, "+
		"before any change, check **%s** (%s) failed because %s. No change to the code can fix that:\n\n%s\n",
		base, cr.Check, app.CodeSpan(cr.Run, app.IssueRef{}), cr.Cause, app.CodeBlock(cr.Evidence, "", ownIssue(tk)))
	fmt.Fprintf(&b, "**What to add to the policy** (`.github/agent.yml`): %s\n\n", cr.Fix)
	if v := tk.prog.BaseChecks; v != nil && len(v.Checks) > 0 {
		c := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(&b, "<details><summary>%s on %s</summary>\n\n%s\n</details>\n\n", c.Name, base,
			app.CodeBlock(change.Tail(c.Output, outputExcerpt), "", ownIssue(tk)))
	}
	return b.String()
}
