package app

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// fileDiff is a unified diff of one file replacing the lines removed by
// the lines added.
func fileDiff(file string, removed, added []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", file, file, file, file)
	fmt.Fprintf(&b, "@@ -1,%d +1,%d @@\n", len(removed), len(added))
	for _, l := range removed {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range added {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// numbered returns n lines "prefix 1" … "prefix n".
func numbered(prefix string, n int) []string {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("%s %d", prefix, i+1))
	}
	return lines
}

func TestDiffSurvival(t *testing.T) {
	agentAdds := fileDiff("calc.go", nil, numbered("agent", 10))
	agentEdits := fileDiff("calc.go", numbered("old", 4), numbered("agent", 4))
	cases := []struct {
		name          string
		agent, merged string
		want          Survival
	}{
		{"merged untouched", agentAdds, agentAdds, Survival{10, 10}},
		{"half its lines rewritten", agentAdds,
			fileDiff("calc.go", nil, append(numbered("agent", 5), numbered("reviewer", 5)...)), Survival{5, 10}},
		{"every line rewritten", agentAdds, fileDiff("calc.go", nil, numbered("reviewer", 10)), Survival{0, 10}},
		{"a reviewer added lines of their own", agentAdds,
			fileDiff("calc.go", nil, append(numbered("agent", 10), numbered("reviewer", 7)...)), Survival{10, 10}},
		{"two removed lines restored", agentEdits,
			fileDiff("calc.go", numbered("old", 2), numbered("agent", 4)), Survival{6, 8}},
		{"moved to another file", agentAdds, fileDiff("other.go", nil, numbered("agent", 10)), Survival{0, 10}},
		{"moved within the file", agentAdds,
			fileDiff("calc.go", nil, append(numbered("agent", 10)[5:], numbered("agent", 10)[:5]...)), Survival{10, 10}},
		{"a repeated line counts as often as it survives",
			fileDiff("calc.go", nil, []string{"x++", "x++", "x++"}), fileDiff("calc.go", nil, []string{"x++"}), Survival{1, 3}},
		{"blank lines and trailing spaces do not count",
			fileDiff("calc.go", nil, []string{"a := 1", "", "b := 2  "}), fileDiff("calc.go", nil, []string{"a := 1", "b := 2"}), Survival{2, 2}},
		{"an empty diff", "", agentAdds, Survival{0, 0}},
		{"nothing merged of it", agentAdds, "", Survival{0, 10}},
		{"a deleted file stays deleted",
			"diff --git a/old.go b/old.go\ndeleted file mode 100644\n--- a/old.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-package old\n-var X = 1\n",
			"diff --git a/old.go b/old.go\ndeleted file mode 100644\n--- a/old.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-package old\n-var X = 1\n",
			Survival{2, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DiffSurvival(c.agent, c.merged)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("survival %+v, want %+v", got, c.want)
			}
		})
	}
	if s := (Survival{10, 10}); s.Share() != 1 || s.EditDistance() != 0 {
		t.Errorf("untouched: share %v, edit distance %v", s.Share(), s.EditDistance())
	}
	if s := (Survival{5, 10}); s.Share() != 0.5 || s.EditDistance() != 0.5 {
		t.Errorf("half rewritten: share %v, edit distance %v", s.Share(), s.EditDistance())
	}
	if s := (Survival{}); s.Share() != 1 {
		t.Errorf("empty diff share %v, want 1", s.Share())
	}
}

func TestDiffSurvivalRefusesBrokenDiffs(t *testing.T) {
	good := fileDiff("a.go", nil, []string{"x"})
	broken := "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,3 @@\n+only one line\n"
	for _, c := range [][2]string{{broken, good}, {good, broken}} {
		if _, err := DiffSurvival(c[0], c[1]); err == nil {
			t.Errorf("DiffSurvival accepted a hunk shorter than its header")
		}
	}
}

func TestTaskSuccess(t *testing.T) {
	cases := []struct {
		name string
		o    TaskOutcome
		want bool
	}{
		{"checks passed, PR opened", TaskOutcome{ChecksPassed: true, PR: 4}, true},
		{"checks failed", TaskOutcome{PR: 4}, false},
		{"no PR", TaskOutcome{ChecksPassed: true}, false},
		{"a human approved a paused call", TaskOutcome{ChecksPassed: true, PR: 4, HumanHelp: true}, false},
	}
	for _, c := range cases {
		if got := c.o.Succeeded(); got != c.want {
			t.Errorf("%s: succeeded %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAggregateOutcomes(t *testing.T) {
	outcomes := []TaskOutcome{
		{Repo: "o/api", Model: "m1", ChecksPassed: true, PR: 1, Iterations: 4, WallTime: time.Minute, Tokens: 1000, Cost: 0.10,
			Merged: true, Survival: &Survival{10, 10}},
		{Repo: "o/api", Model: "m2", ChecksPassed: true, PR: 2, Iterations: 6, WallTime: 2 * time.Minute, Tokens: 3000, Cost: 0.30,
			Merged: true, Survival: &Survival{5, 10}, Reverted: true},
		{Repo: "o/api", Model: "m1", Iterations: 30, WallTime: 5 * time.Minute, Tokens: 9000, Cost: 0.80, SafetyIncidents: 2},
		{Repo: "o/web", Model: "m1", ChecksPassed: true, PR: 3, HumanHelp: true, Iterations: 2, Cost: 0.05, SafetyIncidents: 1},
	}
	byRepo := AggregateOutcomes(outcomes, OutcomeRepo)
	if len(byRepo) != 2 || byRepo[0].Key != "o/api" || byRepo[1].Key != "o/web" {
		t.Fatalf("by repo: %+v", byRepo)
	}
	api := byRepo[0]
	if api.Tasks != 3 || api.Succeeded != 2 || api.ChecksPassed != 2 || api.Iterations != 40 || api.WallTime != 8*time.Minute ||
		api.Tokens != 13000 || api.Merged != 2 || api.Reverted != 1 || api.Survival != (Survival{15, 20}) ||
		api.SafetyIncidents != 2 || api.IncidentsInPRs != 0 {
		t.Errorf("o/api: %+v", api)
	}
	approx := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if !approx(api.SuccessRate(), 2.0/3) || !approx(api.CostPerSuccess(), 0.60) || !approx(api.RevertRate(), 0.5) || !approx(api.Survival.Share(), 0.75) {
		t.Errorf("o/api rates: success %v, cost per success %v, revert %v, survival %v",
			api.SuccessRate(), api.CostPerSuccess(), api.RevertRate(), api.Survival.Share())
	}
	web := byRepo[1]
	if web.Succeeded != 0 || web.CostPerSuccess() != 0 || web.RevertRate() != 0 || web.IncidentsInPRs != 1 {
		t.Errorf("o/web: %+v", web)
	}

	byModel := AggregateOutcomes(outcomes, OutcomeModel)
	if len(byModel) != 2 || byModel[0].Key != "m1" || byModel[0].Tasks != 3 || byModel[0].Succeeded != 1 || byModel[1].Succeeded != 1 {
		t.Errorf("by model: %+v", byModel)
	}
	if len(AggregateOutcomes(nil, OutcomeRepo)) != 0 {
		t.Errorf("no outcomes gave a summary")
	}
}

// FuzzDiffSurvival feeds arbitrary diffs: an error or a survival with
// 0 <= kept <= total, never a panic.
func FuzzDiffSurvival(f *testing.F) {
	f.Add(fileDiff("a.go", []string{"x"}, []string{"y", "z"}), fileDiff("a.go", nil, []string{"z"}))
	f.Add("diff --git a/a b/a\ndeleted file mode 100644\n--- a/a\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", "")
	f.Fuzz(func(t *testing.T, agent, merged string) {
		s, err := DiffSurvival(agent, merged)
		if err == nil && (s.Kept < 0 || s.Kept > s.Total || s.Share() < 0 || s.Share() > 1) {
			t.Errorf("survival %+v", s)
		}
	})
}
