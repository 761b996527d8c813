package text

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// Help is the grammar and the repository's policy in short.
func Help(p policy.Policy) string {
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

// Listed is a task as "/agent status" lists it.
type Listed struct {
	ID, Requester, Step string
	Verb                app.Verb
	State               app.State
}

// Status is the answer to "/agent status": the tasks on #number, newest
// first, and how many older ones are not listed.
func Status(number int, tasks []Listed, older int) string {
	if len(tasks) == 0 {
		return fmt.Sprintf("No task has been asked on #%d.", number)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Tasks on #%d**, newest first:\n\n", number)
	for _, t := range tasks {
		fmt.Fprintf(&b, "- `%s` %s by @%s: **%s**", t.ID, t.Verb, t.Requester, t.State)
		if t.Step != "" && t.Step != string(t.State) {
			fmt.Fprintf(&b, " — %s", t.Step)
		}
		b.WriteString("\n")
	}
	if older > 0 {
		fmt.Fprintf(&b, "- and %d older; `agentbot tasks list` shows them\n", older)
	}
	return b.String()
}

// NotAvailable refuses a verb this server does not run.
func NotAvailable(verb app.Verb) string {
	return fmt.Sprintf("`%s %s` is not available on this server. `%s help` lists what is.", app.DefaultCommand, verb, app.DefaultCommand)
}

// NoRetry answers "/agent retry" on #number when its latest fix did not
// fail.
func NoRetry(number int) string {
	return fmt.Sprintf("There is no failed fix on #%d to retry: the latest fix did not fail, or there is none.", number)
}

// Stopping answers "/agent stop" that asked task to stop.
func Stopping(task string) string {
	return fmt.Sprintf("Stopping task `%s`; its status comment says when it has stopped.", task)
}

// NothingRunning answers "/agent stop" on #number when no task runs.
func NothingRunning(number int) string { return fmt.Sprintf("No task is running on #%d.", number) }

// NothingAwaits answers "/agent approve" or "/agent deny" on #number when
// no task waits for approval.
func NothingAwaits(number int) string {
	return fmt.Sprintf("No task on #%d is waiting for approval.", number)
}

// Decided answers the approval or denial r asked for of paused, which
// went on and ended final ("" while it waits for approval again).
func Decided(r Request, paused string, final app.State) string {
	verb := "Approved"
	if r.Task.Verb == app.VerbDeny {
		verb = "Denied"
	}
	end := fmt.Sprintf("it ended **%s**", final)
	if final == "" {
		end = "it is waiting for approval again"
	}
	return fmt.Sprintf("%s by @%s: task `%s` went on, and %s; its status comment says more.", verb, r.Task.Requester, paused, end)
}

// Command is a command r's requester may comment, in a block to copy:
// the trigger (the default one when ""), verb when set, and r's
// instructions.
func Command(r Request, trigger string, verb app.Verb) string {
	cmd := cmp.Or(trigger, app.DefaultCommand)
	if verb != "" {
		cmd += " " + string(verb)
	}
	return app.CodeBlock(cmd+" "+strings.TrimSpace(r.Task.Instructions), "", r.Own())
}

// NoNotes refuses a note on a worker that keeps none.
const NoNotes = "This agentbot keeps no notes: its worker was started without a store for them."

// NoFixToNote refuses a note on an issue with no fix, suggesting the fix
// that would read it.
func NoFixToNote(r Request, suggestion string) string {
	return fmt.Sprintf("No fix has been asked on #%d, so no agent will read this note. To start one with it, comment:\n\n%s", r.Task.Number, suggestion)
}

// Noted answers a note kept for task, which is in state; revised says the
// note revised the plan the task waits on.
func Noted(r Request, task string, state app.State, revised bool) string {
	if revised {
		return fmt.Sprintf("📝 **Noted** — task `%s` revised its plan with this note; its status comment shows the plan.\n\n%s", task, r.Quote())
	}
	when := "reads this note at its next step"
	switch state {
	case app.StateQueued:
		when = "has not started; it reads this note at its first step"
	case app.StateAwaitingApproval:
		when = "waits for approval; it reads this note when it goes on"
	}
	return fmt.Sprintf("📝 **Noted** — task `%s` %s; its status comment says when it has.\n\n%s", task, when, r.Quote())
}

// NoteTooLate refuses a note for task, which ended in state: to retry it
// with the note (retry), to comment on its pull request pr, or to ask for
// a new fix, with suggestion the command to comment.
func NoteTooLate(task string, state app.State, retry bool, pr int, suggestion string) string {
	what := "To ask for a new fix with this note, comment:"
	switch {
	case retry:
		what = "To run the fix again with this note, comment:"
	case pr > 0:
		what = fmt.Sprintf("To ask for a change on top of its pull request, comment on #%d:", pr)
	}
	return fmt.Sprintf("Task `%s` already ended (**%s**), so no agent will read this note. %s\n\n%s", task, state, what, suggestion)
}

// PlanStatus is the status comment that shows plan p; approve says it
// waits for "/agent approve" (trigger is the policy's command), until
// p.Deadline when set.
func PlanStatus(r Request, p Plan, approve bool, trigger string) string {
	var b strings.Builder
	title := "The plan"
	if p.Version > 1 {
		title = fmt.Sprintf("The plan, revised (%d)", p.Version)
	}
	if approve {
		cmd := cmp.Or(trigger, app.DefaultCommand)
		fmt.Fprintf(&b, "📋 **%s — waiting for approval.** Nothing has been changed. Comment `%s approve` to go on, `%s note <text>` to revise it, or `%s deny` to stop",
			title, cmd, cmd, cmd)
		if !p.Deadline.IsZero() {
			fmt.Fprintf(&b, "; it waits until %s", p.Deadline.UTC().Format("15:04 MST"))
		}
		b.WriteString(".\n\n")
	} else {
		fmt.Fprintf(&b, "📋 **%s** — the agent is working to it.\n\n", title)
	}
	// The model's text, posted in the App's name: inert.
	b.WriteString(app.Inert(p.Text, r.Own()) + "\n\n")
	fmt.Fprintf(&b, "**Cost estimate:** %s\n\n%s", p.Estimate, r.Quote())
	return b.String()
}

// PlanDenied ends a task whose plan by denied.
func PlanDenied(r Request, by string) string {
	return fmt.Sprintf("⏹️ **Stopped** — @%s denied the plan, so nothing was changed.\n\n%s", by, r.Quote())
}

// PlanExpired ends a task whose plan waited for approval past wallClock.
func PlanExpired(r Request, wallClock time.Duration) string {
	return fmt.Sprintf("⏹️ **Stopped** — the plan waited for approval longer than limits.wall_clock (%s), so nothing was changed. Ask again to start over.\n\n%s",
		wallClock, r.Quote())
}

// Answer is the status comment of an answered question: answer, inert
// already, read at r.Base of the repository at web.
func Answer(r Report, answer, web string) string {
	return fmt.Sprintf("💬 **Answer** (read at [`%s`](%s/tree/%s); nothing was changed)\n\n%s\n\n<sub>%s</sub>\n\n%s",
		ShortSHA(r.Base), web, r.Base, answer, usage(r.Loop), r.Quote())
}

// NoAnswer says why a question got no answer.
func NoAnswer(r Report) string { return nothing("No answer", r) }

// NoReview says why a review did not end.
func NoReview(r Report) string { return nothing("No review", r) }

// nothing is a read-only task's end without its result.
func nothing(what string, r Report) string {
	return fmt.Sprintf("❌ **%s.** %s\n\n<sub>%s</sub>\n\n%s", what, Reason(r.Loop, Failure{Stop: r.Loop.Stop}), usage(r.Loop), r.Quote())
}

// NotAPull refuses verb, which works on pull requests, on issue #number.
func NotAPull(verb app.Verb, trigger string, number int) string {
	if verb == app.VerbFixCI {
		return fmt.Sprintf("`%s fix-ci` works on a pull request; #%d is an issue.", app.DefaultCommand, number)
	}
	return fmt.Sprintf("`%s %s` reviews pull requests, and #%d is an issue.", cmp.Or(trigger, app.DefaultCommand), verb, number)
}

// Reviewed is the status comment of a review of head that posted n
// findings, proven of them proven.
func Reviewed(r Request, head string, n, proven int) string {
	if n == 0 {
		return fmt.Sprintf("🔎 **Reviewed** `%s`: no findings.\n\n%s", ShortSHA(head), r.Quote())
	}
	return fmt.Sprintf("🔎 **Reviewed** `%s`: %s, in the review above.\n\n%s", ShortSHA(head), findingsTitle(n, proven), r.Quote())
}

// FixedOn is the reply in a finding's thread once its test, at path,
// passes on head.
func FixedOn(r Request, head, path string) string {
	return fmt.Sprintf("✅ **Fixed on `%s`.** The test of this finding, %s, passes there in a fresh sandbox: what it showed no longer reproduces.",
		ShortSHA(head), app.CodeSpan(path, r.Own()))
}

// NothingToAddress refuses a review every inline comment of which is on
// a path agentbot may not change, and that gives no instructions.
const NothingToAddress = "Every inline comment of the review is on a path agentbot may not change, and the review gives no instructions; nothing to do."

// NotAddressed is the reply to an inline comment the follow-up refused.
func NotAddressed(why string) string { return "🚫 **Not addressed:** " + why }

// NoFailingCheck refuses "/agent fix-ci" when no check fails on head.
func NoFailingCheck(number int, head string) string {
	return fmt.Sprintf("No check fails on the head of #%d (%s); nothing to fix.", number, head)
}

// CIFollowUpsUsed ends a CI follow-up past pull_request.ci_followups.
func CIFollowUpsUsed(number, max int) string {
	return fmt.Sprintf("CI fails on #%d again, and the %d follow-ups that failing CI may start by itself (`pull_request.ci_followups`) are used. `%s fix-ci` asks for another.",
		number, max, app.DefaultCommand)
}

// CIFailsOnBase ends a CI follow-up whose failing checks fail on base too.
func CIFailsOnBase(number int, base string) string {
	return fmt.Sprintf("**No follow-up:** the failing checks fail on %s too, so #%d did not break them.", base, number)
}

// ReviewReply is the answer to an inline comment of a review the task
// followed up on: what changed in r.Pushed, or, when the task ended
// otherwise (final), the first paragraph of its status.
func ReviewReply(r Report, path string, final app.State, changed bool, status string) string {
	if final != app.StateSucceeded || r.Pushed == "" || r.PR == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(status), "\n\n")
		return "Nothing changed: " + first
	}
	link := fmt.Sprintf("[%s](%s/commits/%s)", ShortSHA(r.Pushed), r.PR.HTMLURL, r.Pushed)
	why := app.Inert(FirstLine(r.Loop.Summary), r.Own())
	if changed {
		return fmt.Sprintf("✅ Changed `%s` in %s: %s", path, link, why)
	}
	return fmt.Sprintf("`%s` is unchanged in %s, which addresses the review as: %s", path, link, why)
}

// SetupOnPull refuses "/agent setup" on a pull request.
func SetupOnPull(trigger string) string {
	return fmt.Sprintf("`%s setup` works on an issue: it reads the default branch and opens a pull request of its own.", cmp.Or(trigger, app.DefaultCommand))
}

// NothingInferred ends "/agent setup" when no policy could be inferred.
func NothingInferred(r Request, err error) string {
	return fmt.Sprintf("❌ **No policy to propose:** %s. Write `%s` by hand; `agentbot config schema` lists its keys.",
		app.Inert(err.Error(), r.Own()), policy.PolicyPath)
}

// PolicyRefused ends "/agent setup" whose inferred policy, yaml, the
// server config refuses with err.
func PolicyRefused(r Request, err error, yaml string) string {
	return fmt.Sprintf("❌ **The inferred policy does not hold under this server's config**, so it was not proposed:\n\n%s\n%s",
		app.CodeBlock(app.ErrorMessage(err), "", r.Own()), inferred(r, yaml))
}

// PolicyUnchanged ends "/agent setup" when the policy already says what
// it would propose.
const PolicyUnchanged = "`" + policy.PolicyPath + "` exists and already has what agentbot infers (image, setup and checks): nothing to propose."

// SetupFails ends "/agent setup" whose inferred setup fails: body is the
// proof's report, yaml the policy.
func SetupFails(r Request, body, yaml string) string {
	return "❌ **The inferred setup fails**, so no pull request was opened.\n\n" + body + inferred(r, yaml)
}

// PolicyProposed is the status of "/agent setup" that opened pr with the
// policy, body the proof's report.
func PolicyProposed(pr int, body string) string {
	return fmt.Sprintf("✅ Opened #%d with `%s`, proved in the sandbox.\n\n%s", pr, policy.PolicyPath, body)
}

// inferred is the inferred policy, folded away.
func inferred(r Request, yaml string) string {
	return fmt.Sprintf("\n<details><summary>The policy agentbot inferred</summary>\n\n%s\n</details>\n", app.CodeBlock(yaml, "yaml", r.Own()))
}

// ProposedCheck is the check run of "/agent setup" that proposed the
// policy, body the proof's report.
func ProposedCheck(body string) app.CheckOutput {
	return app.CheckOutput{Title: "Proposed " + policy.PolicyPath, Summary: body}
}

// PolicyTitle is the title of the pull request that proposes a policy.
const PolicyTitle = "Add agentbot's policy (" + policy.PolicyPath + ")"

// PolicyCommit is the message of the commit that adds a policy.
const PolicyCommit = "Add " + policy.PolicyPath + ", agentbot's policy for this repository\n\nInferred from the tree and proved in the sandbox; see the pull request."

// What a plan says of its cost when it cannot be estimated.
const (
	NoHistory         = "No outcome history is kept, so there is no estimate."
	HistoryUnreadable = "The outcome history could not be read, so there is no estimate."
)

// Estimate is what similar tasks cost, from the steps, tokens and cost of
// each task on repo that finished in the last days: their median and
// range.
func Estimate(repo string, days int, steps, tokens, cost []float64) string {
	if len(steps) == 0 {
		return fmt.Sprintf("No task on %s has finished in the last %d days, so there is no estimate.", repo, days)
	}
	return fmt.Sprintf("From %d finished tasks on %s in the last %d days: %s steps, %s tokens, $%s (median, and the range).",
		len(steps), repo, days, spread(steps, "%.0f"), spread(tokens, "%.0f"), spread(cost, "%.2f"))
}

// spread is the median of xs and their range, in format f.
func spread(xs []float64, f string) string {
	slices.Sort(xs)
	mid := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		mid = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	if xs[0] == xs[len(xs)-1] {
		return fmt.Sprintf(f, mid)
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", mid, xs[0], xs[len(xs)-1])
}
