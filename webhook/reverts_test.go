package webhook_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/webhook"
)

func TestDetectReverts(t *testing.T) {
	const merge = "c4295bd74fb0f4fda03689c3df3f2803b658fd85"
	push := func(ref, message string) []byte {
		return fixture(t, "push/with-new-branch.payload.json", func(m map[string]any) {
			m["ref"] = ref
			m["commits"].([]any)[0].(map[string]any)["message"] = message
		})
	}
	pull := func(action string, merged bool, base, title, body string) []byte {
		return fixture(t, "pull_request/closed.payload.json", func(m map[string]any) {
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
			reverts, err := webhook.DetectReverts(c.event, c.payload)
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
		if _, err := webhook.DetectReverts(event, []byte(`{"ref": 3`)); app.ErrorCode(err) != app.EInvalid {
			t.Errorf("%s with broken JSON: %v, want an invalid error", event, err)
		}
	}
}

func TestDetectMerge(t *testing.T) {
	const sha = "C4295BD74FB0F4FDA03689C3DF3F2803B658FD85"
	pull := func(action string, merged bool, mergeCommit any) []byte {
		return fixture(t, "pull_request/closed.payload.json", func(m map[string]any) {
			m["action"] = action
			pr := m["pull_request"].(map[string]any)
			pr["merged"], pr["merge_commit_sha"] = merged, mergeCommit
		})
	}
	got, err := webhook.DetectMerge("pull_request", pull("closed", true, sha))
	if err != nil || got == nil || *got != (app.Merge{PR: 2, Commit: strings.ToLower(sha), Base: "master"}) {
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
		if got, err := webhook.DetectMerge(c.event, c.payload); got != nil || err != nil {
			t.Errorf("%s: %+v, %v; want no merge", name, got, err)
		}
	}
	for name, p := range map[string][]byte{
		"broken JSON":              []byte(`{"action": 3`),
		"merged without a commit":  pull("closed", true, nil),
		"a merge commit not a sha": pull("closed", true, "main"),
	} {
		if _, err := webhook.DetectMerge("pull_request", p); app.ErrorCode(err) != app.EInvalid {
			t.Errorf("%s: %v, want an invalid error", name, err)
		}
	}
}

// FuzzDetectReverts feeds arbitrary payloads: an error or an answer, never
// a panic, and every revert names what it undoes.
func FuzzDetectReverts(f *testing.F) {
	f.Add("push", []byte(`{"ref":"refs/heads/main","repository":{"default_branch":"main","full_name":"o/r"},"commits":[{"id":"1","message":"This reverts commit abcdef1."}]}`))
	f.Add("pull_request", []byte(`{"action":"closed","pull_request":{"merged":true,"title":"Revert \"x\"","body":"Reverts o/r#1","base":{"ref":"main"}},"repository":{"default_branch":"main","full_name":"o/r"}}`))
	f.Add("push", []byte(`{"commits":null}`))
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		reverts, err := webhook.DetectReverts(event, payload)
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
