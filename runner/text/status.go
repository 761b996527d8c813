package text

import (
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/tools"
)

// Running is the status comment of a task at work: what it is doing.
func Running(r Request, what string) string {
	return fmt.Sprintf("⏳ **Working on it** — %s.\n\n%s", what, r.Quote())
}

// Waiting is the status comment of a task queued behind task behind,
// which holds the issue.
func Waiting(r Request, behind string) string {
	return fmt.Sprintf("⏳ **Queued** — waiting behind task `%s`, which is running on #%d; this one starts when it ends.\n\n%s",
		behind, r.Task.Number, r.Quote())
}

// ThreadReply is a task's answer in the review thread it was asked in:
// the status comment's first paragraph, which says how it ended, and
// where the rest is.
func ThreadReply(r Request, status string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(status), "\n\n")
	return fmt.Sprintf("%s\n\nThe checks, the trace and the request are in the status comment on #%d.", first, r.Task.Number)
}

// Approval shows the call awaiting approval with its arguments as the
// tool would read them: re-encoded JSON, or the raw text quoted when it is
// no JSON at all, which the tool refuses whatever the answer.
func Approval(r Request, c *llm.ToolCall) string {
	args, ok := app.ShownArguments(c.Arguments)
	with := "with:\n\n" + app.CodeBlock(args, "json", r.Own())
	if !ok {
		with = "with arguments that are not valid JSON, so the tool will refuse the call even if approved:\n\n" +
			app.CodeBlock(args, "", r.Own())
	}
	return fmt.Sprintf("✋ **Waiting for approval.** The agent wants to call `%s` %s\nAn approver may answer `%s approve` or `%s deny`.\n\n%s",
		c.Name, with, app.DefaultCommand, app.DefaultCommand, r.Quote())
}

// Done is the status comment of a fix whose pull request is pr.
func Done(r Report, pr app.PullRequest) string {
	return fmt.Sprintf("✅ **Done:** #%d (%s)\n\n%s\n%s\n\n%s", pr.Number, pr.HTMLURL, checksSection(r), usage(r.Loop), r.Quote())
}

// Reason is why a task stopped, in one line: the stop rule and its
// detail, or the step that refused the change. Details may quote the
// model or its commands, so they close no issue and mention nobody.
func Reason(st *agent.State, f Failure) string {
	switch {
	case f.StoppedBy != "":
		return "stopped by @" + f.StoppedBy
	case f.Setup != nil:
		return app.Inert(f.Setup.Error(), app.IssueRef{})
	case f.CannotRun != nil:
		return app.Inert("the checks cannot run: "+f.CannotRun.Cause, app.IssueRef{})
	case f.Gate != nil:
		return app.Inert(FirstLine(app.ErrorMessage(f.Gate)), app.IssueRef{})
	case f.Verify != nil:
		return change.VerifyReason(f.Verify)
	case f.Stop != nil:
		return app.Inert(fmt.Sprintf("%s: %s", f.Stop.Reason, f.Stop.Detail), app.IssueRef{})
	}
	return string(st.Status)
}

// failedText says truthfully why a task ended without a pull request, or with
// a draft: the reason, the last failing check's output (trimmed), the
// refusals, and the partial diff folded away.
func failedText(r Report, f Failure) string {
	st := r.Loop
	var b strings.Builder
	if pr := r.PR; pr != nil {
		fmt.Fprintf(&b, "❌ **The checks did not pass;** the partial change is in draft #%d (%s). %s\n\n", pr.Number, pr.HTMLURL, Reason(st, f))
	} else {
		fmt.Fprintf(&b, "❌ **No pull request.** %s\n\n", Reason(st, f))
	}
	if f.Setup != nil {
		fmt.Fprintf(&b, "The repository's setup (`setup.run` in the policy) failed, so the agent did not start:\n\n%s\n",
			app.CodeBlock(change.Tail(f.Setup.Output, outputExcerpt), "", r.Own()))
	}
	if f.CannotRun != nil {
		b.WriteString(cannotRun(r, f.CannotRun))
	}
	if f.Gate != nil {
		fmt.Fprintf(&b, "The host's check of the change against the policy refused it:\n\n%s\n", app.CodeBlock(app.ErrorMessage(f.Gate), "", r.Own()))
	}
	if f.Verify != nil {
		b.WriteString(verification(f.Verify))
	} else if c := lastFailure(st); c != nil {
		fmt.Fprintf(&b, "The last failing check was **%s** (`%s`, exit %d", c.Name, c.Run, c.ExitCode)
		if c.TimedOut {
			b.WriteString(", timed out")
		}
		fmt.Fprintf(&b, "):\n\n%s\n", app.CodeBlock(change.Tail(c.Output, outputExcerpt), "", r.Own()))
	}
	if n := st.Counts; n.BlockedWrites+n.BlockedCommands > 0 {
		fmt.Fprintf(&b, "Safety: the policy refused %d writes and %d commands (see the trace).\n\n", n.BlockedWrites, n.BlockedCommands)
	}
	b.WriteString(checksSection(r) + "\n" + usage(st) + "\n\n")
	if a := attempts(r); a != "" {
		b.WriteString(strings.TrimPrefix(a, "\n\n") + "\n")
	}
	diff := f.Diff
	if diff == "" {
		diff = st.Diff
	}
	if diff != "" {
		fmt.Fprintf(&b, "<details><summary>Partial diff</summary>\n\n%s\n</details>\n\n", app.CodeBlock(change.Tail(diff, diffExcerpt), "diff", r.Own()))
	}
	b.WriteString(r.Quote())
	return b.String()
}

// Ended is a status comment's closing sections: what failing CI was
// decided, and the connections setup's egress proxy refused.
func Ended(r Report) string { return ciSection(r) + refusals(r) }

// lastFailure is the last check run if it failed.
func lastFailure(st *agent.State) *tools.CheckRun {
	if len(st.Checks) == 0 || st.Checks[len(st.Checks)-1].Passed {
		return nil
	}
	return &st.Checks[len(st.Checks)-1]
}

// cannotRun says, in a failure report, why the checks cannot run and
// what to add to the policy, with the base run's output.
func cannotRun(r Report, cr *change.CannotRun) string {
	var b strings.Builder
	base := ShortSHA(r.Base)
	fmt.Fprintf(&b, "The checks cannot run in the sandbox as the policy prepares it, so the agent did not start: on `%s`, "+
		"before any change, check **%s** (%s) failed because %s. No change to the code can fix that:\n\n%s\n",
		base, cr.Check, app.CodeSpan(cr.Run, app.IssueRef{}), cr.Cause, app.CodeBlock(cr.Evidence, "", r.Own()))
	fmt.Fprintf(&b, "**What to add to the policy** (`.github/agent.yml`): %s\n\n", cr.Fix)
	if v := r.BaseChecks; v != nil && len(v.Checks) > 0 {
		c := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(&b, "<details><summary>%s on %s</summary>\n\n%s\n</details>\n\n", c.Name, base,
			app.CodeBlock(change.Tail(c.Output, outputExcerpt), "", r.Own()))
	}
	return b.String()
}

// usage is the loop's usage in one sentence.
func usage(st *agent.State) string {
	u := st.Usage
	return fmt.Sprintf("%d iterations, %d tokens (%d prompt, %d cached, %d completion), $%.4f",
		st.Step, u.Total(), u.PromptTokens, u.CachedTokens, u.CompletionTokens, u.CostUSD)
}
