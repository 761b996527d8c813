package text

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/tools"
)

// Title is the change's title: the one the model gave finish, which the
// tool holds to tools.MaxTitle characters, or one made from the issue's
// title. Never the summary cut short: a title is written whole.
func Title(r Report) string {
	if t := strings.TrimSpace(r.Loop.Title); t != "" {
		return shortTitle(app.InertPlain(t, r.Own()))
	}
	title := app.InertPlain(strings.TrimSpace(r.Issue.Title), r.Own())
	if r.Issue.Pull != nil {
		return shortTitle(title)
	}
	return shortTitle("Fix: " + title)
}

// DraftTitle is the title of a draft: the issue's, marked.
func DraftTitle(r Report) string {
	return shortTitle("Draft: " + app.InertPlain(r.Issue.Title, r.Own()))
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

// CommitMessage is the commit's message: finish's title or, when the
// model gave none, the summary's first line if it fits a subject, then
// the summary and who asked.
func CommitMessage(r Report) string {
	st := r.Loop
	subject := strings.TrimSpace(st.Title)
	if first := FirstLine(st.Summary); subject == "" && first != "" && utf8.RuneCountInString(first) <= tools.MaxTitle {
		subject = first
	}
	if subject == "" {
		subject = Title(r)
	}
	msg := app.InertPlain(subject, r.Own()) + "\n"
	if s := summaryBody(&agent.State{Summary: st.Summary, Title: subject}); s != "" {
		msg += "\n" + app.InertPlain(s, r.Own()) + "\n"
	}
	if r.Task.CI != nil {
		// The event's sender pushed the failing head: most often the App.
		return msg + fmt.Sprintf("\nFollows up on failing CI on #%d.\n", r.Task.Number)
	}
	return msg + fmt.Sprintf("\nAsked by @%s on #%d.\n", r.Task.Requester, r.Task.Number)
}

// Body is the pull request's description, in the order a reviewer reads
// it: what changed and why, the checks with their results, then what a
// reviewer acts on — the reproduction, the tests and checks the change
// touches (tampering), the attempts, the plan — then the usage, who asked
// (the request quoted only when it says more than the bare verb), the
// issue link, and last the trace folded away.
func Body(r Report) string {
	t, st := r.Task, r.Loop
	var b strings.Builder
	b.WriteString("## What changed and why\n\n")
	if s := summaryBody(st); s != "" {
		b.WriteString(app.Inert(s, r.Own()) + "\n")
	} else {
		b.WriteString("The agent gave no summary; see the diff.\n")
	}
	b.WriteString("\n## Checks\n\n" + checksSection(r))
	b.WriteString(reproduction(r) + tampering(r.Tampering) + attempts(r) + plan(r))
	fmt.Fprintf(&b, "\n## Usage\n\n%s.\n", usage(st))
	fmt.Fprintf(&b, "\nAsked by @%s on #%d", t.Requester, t.Number)
	if what := strings.TrimSpace(t.Instructions); what != "" {
		b.WriteString(":\n\n")
		for line := range strings.SplitSeq(what, "\n") {
			b.WriteString("> " + line + "\n")
		}
	} else {
		b.WriteString(".\n")
	}
	if rc := t.ReviewComment; rc != nil {
		fmt.Fprintf(&b, "\non `%s` line %d\n", rc.Path, rc.Line)
	}
	if r.Issue.Pull == nil {
		fmt.Fprintf(&b, "\nFixes #%d\n", t.Number)
	}
	if r.Proposed {
		fmt.Fprintf(&b, "\nProposed to %s, the branch of #%d, which agentbot does not push to: merging this pull request brings the change there.\n",
			app.CodeSpan(r.Issue.Pull.Head, r.Own()), t.Number)
	}
	fmt.Fprintf(&b, "\n<details><summary>Trace</summary>\n\n%s\n</details>\n", app.CodeBlock(change.Tail(Trace(st), diffExcerpt), "", r.Own()))
	return b.String()
}

// DraftBody is the description of a draft: why the checks did not pass,
// then Body.
func DraftBody(r Report, f Failure) string {
	return fmt.Sprintf("⚠️ **Draft: the checks did not pass** (%s). The policy asks for the partial change as a draft.\n\n%s",
		Reason(r.Loop, f), Body(r))
}

// checkSummary is the summary of a fix's check run once its pull request
// is open.
func checkSummary(r Report) string {
	return checksSection(r) + "\n" + usage(r.Loop) + reproduction(r) + tampering(r.Tampering) + attempts(r)
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

// tampering is the tampering report as a section, or "" when the change
// touches no sensitive file.
func tampering(t app.Tampering) string {
	if t.Empty() {
		return ""
	}
	return "\n\n" + t.Markdown()
}

// plan is the pull request's account of where the work departed from the
// approved plan: the files it changed that the plan did not name.
func plan(r Report) string {
	p := r.Plan
	if p == nil || p.ApprovedBy == "" {
		return ""
	}
	var off []string
	for _, f := range r.Loop.Touched {
		if !slices.Contains(p.Files, f) {
			off = append(off, "`"+f+"`")
		}
	}
	if len(off) == 0 {
		return fmt.Sprintf("\n## Plan\n\n@%s approved the plan; the change keeps to its files.\n", p.ApprovedBy)
	}
	return fmt.Sprintf("\n## Departures from the approved plan\n\n@%s approved a plan that did not name these changed files: %s.\n",
		p.ApprovedBy, strings.Join(off, ", "))
}
