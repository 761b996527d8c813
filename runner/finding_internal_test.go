package runner

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/tools"
)

// A finding's task asks for its test unchanged only when the review saw
// the test fail on the head; a test that showed nothing is a start, and a
// finding without one asks for one.
func TestFindingText(t *testing.T) {
	t.Parallel()
	test := &tools.FindingTest{Path: "mean_test.go", Content: "package stats\n\nfunc TestMeanOfTwo(t *testing.T) {}\n"}
	finding := func(test *tools.FindingTest, proof *Proof) *reviewed {
		return &reviewed{Finding: tools.Finding{Severity: app.SeverityMedium, Path: "stats.go", Line: 18, Title: "Mean divides in integers",
			Body: "Mean([1 2]) is 1.", Test: test}, Proof: proof}
	}
	for _, c := range []struct {
		name   string
		f      *reviewed
		want   []string
		repro  bool // the test is the fix's reproduction
		suffix string
	}{
		{"proven", finding(test, &Proof{Proven: true}), []string{"✅ proven by a test", "Its test, `mean_test.go`, fails on this pull request's head. Add it as it is", "func TestMeanOfTwo"},
			true, " whose reproduction is its test"},
		{"pre-existing", finding(test, &Proof{PreExisting: true}), []string{"♻️ pre-existing", "Add it as it is"}, true, " whose reproduction is its test"},
		{"test passes", finding(test, &Proof{Why: "the test passes on the head abc1234"}),
			[]string{"⚠️ unproven", "The review's test, `mean_test.go`, did not show it (the test passes on the head abc1234). Start from it", "func TestMeanOfTwo"}, false, ""},
		{"no test", finding(nil, nil), []string{"⚠️ unproven", "The finding came without a test"}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := reportTask("Simplify Mean", "")
			task := text.FindingTask(tk.request(), findingView(*c.f))
			for _, want := range append(c.want, "`stats.go` line 18", "Mean divides in integers", "Mean([1 2]) is 1.") {
				if !strings.Contains(task, want) {
					t.Errorf("the task lacks %q:\n%s", want, task)
				}
			}
			if (failingTest(c.f) != nil) != c.repro || strings.Contains(task, "Add it as it is") != c.repro {
				t.Errorf("the test as the reproduction: %v; want %v:\n%s", failingTest(c.f) != nil, c.repro, task)
			}
			comment := text.FindingComment(text.Review{Request: tk.request()}, findingView(*c.f))
			if !strings.Contains(comment, "for a fix of this finding"+c.suffix+".") {
				t.Errorf("the comment does not say how to fix the finding with %q:\n%s", c.suffix, comment)
			}
		})
	}
}

// A finding repeated by a later review (same file, and the same title or
// the same test, wherever the lines moved) is not posted again; another
// finding in the same file, or the same title in another file, is.
func TestRepeatsAnOpenFinding(t *testing.T) {
	test := &tools.FindingTest{Path: "stats_test.go", Content: "package stats\n"}
	open := []reviewed{{Finding: tools.Finding{Path: "stats.go", Line: 12, Title: "Mean divides by zero", Test: test}, CommentID: 7}}
	for _, c := range []struct {
		f    tools.Finding
		want bool
	}{
		{tools.Finding{Path: "stats.go", Line: 30, Title: " mean divides by zero "}, true},
		{tools.Finding{Path: "stats.go", Line: 30, Title: "Mean fails on an empty slice", Test: &tools.FindingTest{Path: test.Path, Content: test.Content}}, true},
		{tools.Finding{Path: "stats.go", Line: 12, Title: "Sum overflows"}, false},
		{tools.Finding{Path: "stats.go", Line: 12, Title: "Sum overflows", Test: &tools.FindingTest{Path: test.Path, Content: "package stats // other\n"}}, false},
		{tools.Finding{Path: "mean.go", Line: 12, Title: "Mean divides by zero"}, false},
	} {
		if got := repeats(open, c.f); got != c.want {
			t.Errorf("repeats(%+v) = %v; want %v", c.f, got, c.want)
		}
	}
	if repeats(nil, open[0].Finding) {
		t.Error("a finding repeats one when none is open")
	}
}

func reportTask(title, instructions string) *task {
	return &task{Task: &app.Task{ID: "T1", Repo: "acme/stats", Number: 7, Verb: app.VerbFix, Requester: "ada", Instructions: instructions},
		issue: app.IssueInfo{Title: title}}
}
