package prompts

import (
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// ReviewData is what the system prompt of /agent review states.
type ReviewData struct {
	Limits      policy.Limits
	Checks      []policy.Check
	MinSeverity app.Severity
}

// Review renders the system prompt of /agent review: read, report
// findings with tests, finish; nothing is changed.
func Review(d ReviewData) (string, error) { return render("review.tmpl", d) }

// ReviewTaskData is a review's first user message: the task, and the pull
// request's diff.
type ReviewTaskData struct {
	Task       TaskData
	Base, Head string // short commit ids the diff runs between
	// Again is set when Base is the head an earlier review read: only
	// what changed since is shown.
	Again   bool
	Diff    string
	DiffCut bool
}

// reviewDiffBytes caps the diff shown; the model reads the rest.
const reviewDiffBytes = 48 << 10

// ReviewTask renders a review's task message, the diff capped.
func ReviewTask(d ReviewTaskData) (string, error) {
	if len(d.Diff) > reviewDiffBytes {
		d.Diff, d.DiffCut = d.Diff[:reviewDiffBytes], true
	}
	d.Diff = strings.TrimRight(strings.ReplaceAll(d.Diff, "```", "`\u200b``"), "\n")
	return render("review_task.tmpl", d)
}

// ReviewGuidanceFiles are the files a review's guidance is read from,
// on the base branch: a pull request does not write its own reviewer's
// instructions.
var ReviewGuidanceFiles = []string{"AGENTS.md", "REVIEW.md", ".github/copilot-instructions.md", "CLAUDE.md"}

// ReviewGuidance picks a review's guidance from files (path to content,
// from ReviewGuidanceFiles): the "## Review" section of AGENTS.md, and
// the other files whole, each capped.
func ReviewGuidance(files map[string]string) []Doc {
	var out []Doc
	for _, p := range ReviewGuidanceFiles {
		text, ok := files[p]
		if ok && p == "AGENTS.md" {
			text, ok = reviewSection(text)
		}
		if !ok || strings.TrimSpace(text) == "" {
			continue
		}
		d := Doc{Path: p, Text: strings.TrimRight(text, "\n")}
		if len(d.Text) > guidanceBytes {
			d.Text, d.Cut = d.Text[:guidanceBytes], true
		}
		out = append(out, d)
	}
	return out
}

// reviewSection is the "## Review" section of a Markdown file, up to the
// next heading of its level or above.
func reviewSection(md string) (string, bool) {
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if !strings.EqualFold(strings.TrimSpace(l), "## Review") {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if t := strings.TrimSpace(lines[j]); strings.HasPrefix(t, "# ") || strings.HasPrefix(t, "## ") {
				end = j
				break
			}
		}
		return strings.Join(lines[i+1:end], "\n"), true
	}
	return "", false
}
