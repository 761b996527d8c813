package prompts

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

func TestReviewGuidance(t *testing.T) {
	docs := ReviewGuidance(map[string]string{
		"AGENTS.md":                       "# Agents\n\nBuild with make.\n\n## Review\n\nFlag every unchecked error.\n\n## Style\n\nTabs.\n",
		"REVIEW.md":                       "Prefer small functions.\n",
		".github/copilot-instructions.md": "Use slog.\n",
	})
	var got []string
	for _, d := range docs {
		got = append(got, d.Path+": "+strings.TrimSpace(d.Text))
	}
	want := []string{"AGENTS.md: Flag every unchecked error.", "REVIEW.md: Prefer small functions.", ".github/copilot-instructions.md: Use slog."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("guidance:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if docs := ReviewGuidance(map[string]string{"AGENTS.md": "# Agents\n\nBuild with make.\n"}); len(docs) != 0 {
		t.Errorf("AGENTS.md without a Review section gave %+v", docs)
	}
}

func TestReviewPrompts(t *testing.T) {
	sys, err := Review(ReviewData{Limits: policy.Limits{Iterations: 20}, Checks: []policy.Check{{Name: "test", Run: "go test ./..."}}, MinSeverity: app.SeverityMedium})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"report_finding", "finish_review", "at severity medium or above", "- test: `go test ./...`", "20 steps"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	task, err := ReviewTask(ReviewTaskData{Task: TaskData{Repo: "acme/x", Title: "Fix it", Instructions: "Review this pull request."},
		Base: "aaaaaaa", Head: "bbbbbbb", Diff: "+x := \"```\"\n" + strings.Repeat("+y\n", reviewDiffBytes)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(task, "## The pull request's diff (aaaaaaa..bbbbbbb)") || !strings.Contains(task, "[the diff is longer than what is shown") ||
		strings.Count(task, "```") != 2 {
		t.Errorf("task message:\n%s", task[:min(len(task), 600)])
	}
}
