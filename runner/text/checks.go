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

// checksSection is the checks as the check run, the status comment and the pull
// request report them: the verification's, labelled as such, or the
// loop's when the change never reached verification.
func checksSection(r Report) string {
	st, v := r.Loop, r.Verified
	if base := r.BaseChecks; v == nil && len(st.Checks) == 0 && base != nil {
		return fmt.Sprintf("The agent ran no check. On the base commit `%s`, before it started:\n\n%s", ShortSHA(r.Base), runs(base))
	}
	if v == nil {
		return checksTable(st)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Verified in a fresh sandbox (`%s`, in which no agent command ran), on the tree that is committed:\n\n", ShortID(v.Container))
	b.WriteString(runs(v))
	if v.Incident() {
		b.WriteString("\n⚠️ **The agent's sandbox said the checks pass**, and they do not in a fresh one: " +
			"something the agent left in its sandbox made them pass. The agent's last run of the checks:\n\n" + checksTable(st))
	}
	return b.String()
}

// checksTable lists the latest result of each check, in the order first run.
func checksTable(st *agent.State) string {
	if len(st.Checks) == 0 {
		return "No check was run.\n"
	}
	var b strings.Builder
	b.WriteString("| check | command | result | time |\n| --- | --- | --- | --- |\n")
	for _, c := range Latest(st.Checks) {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %.1fs |\n", c.Name, c.Run, resultCell(c), float64(c.Millis)/1000)
	}
	return b.String()
}

// runs is a run of the checks as a table, with those it did not run.
func runs(v *change.Verification) string {
	var b strings.Builder
	b.WriteString("| check | command | result | time |\n| --- | --- | --- | --- |\n")
	for _, c := range v.Checks {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %.1fs |\n", c.Name, c.Run, resultCell(c), float64(c.Millis)/1000)
	}
	for _, c := range v.NotRun {
		fmt.Fprintf(&b, "| %s | `%s` | ⏭ not run | |\n", c.Name, c.Run)
	}
	return b.String()
}

// verification says, in a failure report, how the verification failed.
func verification(v *change.Verification) string {
	if len(v.Checks) == 0 {
		return ""
	}
	c := v.Checks[len(v.Checks)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "In a fresh sandbox, **%s** (`%s`) failed with exit %d", c.Name, c.Run, c.ExitCode)
	if c.TimedOut {
		b.WriteString(", timed out")
	}
	fmt.Fprintf(&b, ":\n\n%s\n", app.CodeBlock(change.Tail(c.Output, outputExcerpt), "", app.IssueRef{}))
	return b.String()
}

// resultCell is a check run's result in a table cell.
func resultCell(c tools.CheckRun) string {
	switch {
	case c.Passed:
		return "✅ pass"
	case c.TimedOut:
		return "❌ timed out"
	}
	return fmt.Sprintf("❌ fail (exit %d)", c.ExitCode)
}

// Results is checks' results in one line, for the trace and the audit
// log.
func Results(runs []tools.CheckRun) string {
	if len(runs) == 0 {
		return "no check ran"
	}
	parts := make([]string, len(runs))
	for i, c := range runs {
		parts[i] = c.Name + " " + bare(resultCell(c))
	}
	return strings.Join(parts, ", ")
}

// bare is a resultCell without its mark.
func bare(result string) string {
	return strings.TrimPrefix(strings.TrimPrefix(result, "✅ "), "❌ ")
}

// Latest is the latest run of each check, in the order first run.
func Latest(all []tools.CheckRun) []tools.CheckRun {
	var order []string
	latest := map[string]tools.CheckRun{}
	for _, c := range all {
		if _, seen := latest[c.Name]; !seen {
			order = append(order, c.Name)
		}
		latest[c.Name] = c
	}
	out := make([]tools.CheckRun, len(order))
	for i, name := range order {
		out[i] = latest[name]
	}
	return out
}

// Trace is the loop's steps as text: each tool call with the start of its
// result, so refusals and failures can be read after the fact; the check
// run shows it when no trace is stored.
func Trace(st *agent.State) string {
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
			fmt.Fprintf(&b, "step %d: %s\n", step, Head(text, traceResult))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "step %d: %s %s\n    → %s\n", step, c.Name, Head(c.Arguments, traceResult),
				strings.ReplaceAll(Head(results[c.ID], traceResult), "\n", "\n      "))
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

// FailedCheck is the check run of a fix that ended without a pull
// request, or with a draft.
func FailedCheck(r Report, f Failure) app.CheckOutput {
	return app.CheckOutput{Title: "No pull request: " + Reason(r.Loop, f), Summary: failedText(r, f)}
}

// DoneCheck is the check run of a fix whose pull request is pr.
func DoneCheck(r Report, pr app.PullRequest) app.CheckOutput {
	return app.CheckOutput{Title: fmt.Sprintf("Pull request #%d", pr.Number), Summary: checkSummary(r)}
}

// AnsweredCheck is the check run of an answered question.
func AnsweredCheck(r Report) app.CheckOutput {
	return app.CheckOutput{Title: "Answered; nothing was changed", Summary: usage(r.Loop)}
}

// NoAnswerCheck is the check run of a question with no answer.
func NoAnswerCheck(r Report) app.CheckOutput {
	return app.CheckOutput{Title: "No answer: " + Reason(r.Loop, Failure{Stop: r.Loop.Stop}), Summary: NoAnswer(r)}
}

// ReviewCheck is the check run of a review that posted findings, proven
// of them proven.
func ReviewCheck(r Report, posted []Finding, proven int) app.CheckOutput {
	summary := "No findings."
	if len(posted) > 0 {
		summary = findingsList(r.Request, posted)
	}
	return app.CheckOutput{Name: app.ReviewCheckName, Title: "Review: " + findingsTitle(len(posted), proven), Summary: summary + "\n\n" + usage(r.Loop)}
}

// NoReviewCheck is the check run of a review that did not end.
func NoReviewCheck(r Report) app.CheckOutput {
	return app.CheckOutput{Name: app.ReviewCheckName, Title: "No review: " + Reason(r.Loop, Failure{Stop: r.Loop.Stop}), Summary: NoReview(r)}
}
