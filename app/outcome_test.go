package app

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app/apptest"
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

// payload reads a shared GitHub webhook example and lets edit change it.
func payload(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(apptest.Fixtures(t), "github-webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDetectReverts(t *testing.T) {
	const merge = "c4295bd74fb0f4fda03689c3df3f2803b658fd85"
	push := func(ref, message string) []byte {
		return payload(t, "push/with-new-branch.payload.json", func(m map[string]any) {
			m["ref"] = ref
			m["commits"].([]any)[0].(map[string]any)["message"] = message
		})
	}
	pull := func(action string, merged bool, base, title, body string) []byte {
		return payload(t, "pull_request/closed.payload.json", func(m map[string]any) {
			m["action"] = action
			pr := m["pull_request"].(map[string]any)
			pr["merged"], pr["title"], pr["body"] = merged, title, body
			pr["base"].(map[string]any)["ref"] = base
		})
	}
	revertMsg := "Revert \"Fix the off-by-one\"\n\nThis reverts commit " + merge + ".\n"
	cases := []struct {
		name    string
		event   string
		payload []byte
		undoes  bool // undoes PR #7 merged as merge
		reverts int
	}{
		{"a revert commit pushed to the default branch", "push", push("refs/heads/master", revertMsg), true, 1},
		{"a revert of another commit", "push", push("refs/heads/master", "Revert \"x\"\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567."), false, 1},
		{"an abbreviated sha", "push", push("refs/heads/master", "this reverts commit C4295BD7"), true, 1},
		{"a revert pushed to another branch", "push", push("refs/heads/topic", revertMsg), false, 0},
		{"an ordinary commit", "push", push("refs/heads/master", "Fix the build"), false, 0},
		{"a merged revert PR naming the PR", "pull_request", pull("closed", true, "master", `Revert "Fix the off-by-one"`, "Reverts Codertocat/Hello-World#7"), true, 1},
		{"a merged revert PR naming the merge commit", "pull_request", pull("closed", true, "master", `Revert "Fix the off-by-one"`, "Undoes "+merge[:12]+": it broke prod."), true, 1},
		{"a revert PR naming another repository's PR", "pull_request", pull("closed", true, "master", `Revert "x"`, "Reverts someone/else#7"), false, 0},
		{"a revert PR closed unmerged", "pull_request", pull("closed", false, "master", `Revert "Fix the off-by-one"`, "Reverts Codertocat/Hello-World#7"), false, 0},
		{"a revert PR into another branch", "pull_request", pull("closed", true, "release", `Revert "Fix the off-by-one"`, "Reverts #7"), false, 0},
		{"a merged PR that is no revert", "pull_request", pull("closed", true, "master", "Fix #7 again", "Follows #7"), false, 0},
		{"a revert PR opened, not merged", "pull_request", pull("opened", false, "master", `Revert "Fix the off-by-one"`, "Reverts #7"), false, 0},
		{"another event", "issues", []byte(`{}`), false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reverts, err := DetectReverts(c.event, c.payload)
			if err != nil {
				t.Fatal(err)
			}
			if len(reverts) != c.reverts {
				t.Fatalf("%d reverts %+v, want %d", len(reverts), reverts, c.reverts)
			}
			undoes := false
			for _, r := range reverts {
				if r.Repo != "Codertocat/Hello-World" {
					t.Errorf("revert of repo %q", r.Repo)
				}
				undoes = undoes || r.Undoes(merge, 7)
			}
			if undoes != c.undoes {
				t.Errorf("undoes PR #7: %v, want %v (%+v)", undoes, c.undoes, reverts)
			}
		})
	}
	for _, event := range []string{"push", "pull_request"} {
		if _, err := DetectReverts(event, []byte(`{"ref": 3`)); ErrorCode(err) != EInvalid {
			t.Errorf("%s with broken JSON: %v, want an invalid error", event, err)
		}
	}
}

func TestDetectMerge(t *testing.T) {
	const sha = "C4295BD74FB0F4FDA03689C3DF3F2803B658FD85"
	pull := func(action string, merged bool, mergeCommit any) []byte {
		return payload(t, "pull_request/closed.payload.json", func(m map[string]any) {
			m["action"] = action
			pr := m["pull_request"].(map[string]any)
			pr["merged"], pr["merge_commit_sha"] = merged, mergeCommit
		})
	}
	got, err := DetectMerge("pull_request", pull("closed", true, sha))
	if err != nil || got == nil || *got != (Merge{PR: 2, Commit: strings.ToLower(sha), Base: "master"}) {
		t.Fatalf("merged: %+v, %v; want PR 2 merged as %s into master", got, err, sha)
	}
	for name, c := range map[string]struct {
		event   string
		payload []byte
	}{
		"closed without merging": {"pull_request", pull("closed", false, sha)},
		"opened":                 {"pull_request", pull("opened", false, nil)},
		"another event":          {"push", pull("closed", true, sha)},
	} {
		if got, err := DetectMerge(c.event, c.payload); got != nil || err != nil {
			t.Errorf("%s: %+v, %v; want no merge", name, got, err)
		}
	}
	for name, p := range map[string][]byte{
		"broken JSON":              []byte(`{"action": 3`),
		"merged without a commit":  pull("closed", true, nil),
		"a merge commit not a sha": pull("closed", true, "main"),
	} {
		if _, err := DetectMerge("pull_request", p); ErrorCode(err) != EInvalid {
			t.Errorf("%s: %v, want an invalid error", name, err)
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

// FuzzDetectReverts feeds arbitrary payloads: an error or an answer, never
// a panic, and every revert names what it undoes.
func FuzzDetectReverts(f *testing.F) {
	f.Add("push", []byte(`{"ref":"refs/heads/main","repository":{"default_branch":"main","full_name":"o/r"},"commits":[{"id":"1","message":"This reverts commit abcdef1."}]}`))
	f.Add("pull_request", []byte(`{"action":"closed","pull_request":{"merged":true,"title":"Revert \"x\"","body":"Reverts o/r#1","base":{"ref":"main"}},"repository":{"default_branch":"main","full_name":"o/r"}}`))
	f.Add("push", []byte(`{"commits":null}`))
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		reverts, err := DetectReverts(event, payload)
		if err != nil {
			return
		}
		for _, r := range reverts {
			if len(r.Reverts) == 0 && len(r.RevertsPRs) == 0 {
				t.Errorf("a revert that undoes nothing: %+v", r)
			}
		}
	})
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
