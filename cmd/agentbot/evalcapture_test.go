package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// A repository whose Add subtracts; its existing test checks Sub only.
var calcFiles = map[string]string{
	"go.mod":            "module calc\n\ngo 1.22\n",
	"calc.go":           "package calc\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Sub(a, b int) int { return a - b }\n",
	"calc_test.go":      "package calc\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"Sub(3, 1) != 2\")\n\t}\n}\n",
	".github/agent.yml": "version: 1\nchecks:\n  - {name: test, run: \"go test ./...\"}\n",
}

// mergedFix opens and merges, with a merge commit, a pull request that
// fixes Add and adds its test to calc_test.go, after an unrelated commit
// on main; it returns the simulator, the App's flags and the pull request.
func mergedFix(t *testing.T) (*githubsim.Server, []string, int) {
	t.Helper()
	sim, err := githubsim.New(githubsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	const repo = "acme/calc"
	if err := sim.AddRepo(sim.AddInstallation("acme"), repo, calcFiles); err != nil {
		t.Fatal(err)
	}
	base, err := sim.BranchSHA(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.CreateBranch(repo, "fix-add", base); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Commit(repo, "fix-add", "octocat", "Add adds", map[string]string{
		"calc.go":      strings.Replace(calcFiles["calc.go"], "Add(a, b int) int { return a - b }", "Add(a, b int) int { return a + b }", 1),
		"calc_test.go": calcFiles["calc_test.go"] + "\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 1) != 2 {\n\t\tt.Fatal(\"Add(1, 1) != 2\")\n\t}\n}\n",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Commit(repo, "main", "octocat", "Document", map[string]string{"README.md": "# calc\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.AddIssue(repo, "octocat", "Add subtracts", "Add(1, 1) is 0; it must be 2."); err != nil {
		t.Fatal(err)
	}
	pr, err := sim.AddPullRequest(repo, githubsim.PullOptions{Author: "octocat", Title: "Add adds", Body: "Fixes #1.", Head: "fix-add"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Merge(repo, pr, githubsim.MergeCommit, "octocat"); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(key, sim.App().PrivateKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--app-id", strconv.FormatInt(sim.App().ID, 10), "--private-key-file", key, "--github-url", sim.APIURL()}
	return sim, flags, pr
}

// TestEvalCaptureReplaysAMergedPullRequest: the captured task runs under
// "agentbot eval" with the scripted model; its hidden test passes when the
// trajectory makes the merged change and fails on the snapshot left alone.
func TestEvalCaptureReplaysAMergedPullRequest(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	_, flags, pr := mergedFix(t)
	suite := filepath.Join(t.TempDir(), "suite")
	out, stderr, err := evalCmd(t, append([]string{"capture", "acme/calc#" + strconv.Itoa(pr), "--out", suite}, flags...)...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stderr, out)
	}
	for _, want := range []string{"issue: acme/calc#1", "hidden test: calc_test.go", "replayed by trajectory.yaml: calc.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("capture output lacks %q:\n%s", want, out)
		}
	}
	task := filepath.Join(suite, "calc-"+strconv.Itoa(pr))
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(task, p)); return string(b) }
	// The snapshot is main as it was merged onto: the unrelated commit
	// is in it, the fix and the new test are not.
	if read("repo/README.md") != "# calc\n" || !strings.Contains(read("repo/calc.go"), "a - b }\n\nfunc Sub") ||
		strings.Contains(read("repo/calc_test.go"), "TestAdd") || !strings.Contains(read("hidden/calc_test.go"), "TestAdd") {
		t.Errorf("snapshot or hidden tests are wrong:\n%s", out)
	}
	if !strings.Contains(read("task.yaml"), "Add subtracts") {
		t.Errorf("task.yaml lacks the issue:\n%s", read("task.yaml"))
	}

	// Left alone, the snapshot passes its own checks but not the hidden
	// test: a copy of the task whose trajectory touches only the README
	// (an empty change is no change to propose) runs beside it.
	alone := filepath.Join(suite, "left-alone")
	if err := os.CopyFS(alone, os.DirFS(task)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alone, "trajectory.yaml"), []byte("steps:\n"+
		"  - tool_calls: [{name: edit_file, arguments: {path: README.md, old_string: \"# calc\", new_string: \"# calc, left alone\"}}]\n"+
		"  - tool_calls: [{name: finish, arguments: {summary: \"Nothing to do.\"}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, progress, err := evalScripted(t, suite, append([]string{"--parallel", "2"}, sandboxArgs(t)...)...)
	if !strings.Contains(progress, filepath.Base(task)+" run 1: solved, hidden pass") {
		t.Errorf("the merged change does not pass the hidden test: %v\n%s\n%s", err, progress, out)
	}
	if err == nil || !strings.Contains(progress, "left-alone run 1: solved, hidden fail") {
		t.Errorf("the snapshot passes the hidden test: %v\n%s\n%s", err, progress, out)
	}
}

func TestEvalCaptureRefusesBadInput(t *testing.T) {
	t.Parallel()
	sim, flags, pr := mergedFix(t)
	open, err := sim.AddPullRequest("acme/calc", githubsim.PullOptions{Author: "octocat", Title: "Open", Head: "fix-add"})
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(t.TempDir(), "suite")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acme/calc", "--out", suite}, "want OWNER/REPO#NUMBER"},
		{[]string{"acme/calc#0", "--out", suite}, "1 or more"},
		{[]string{"acme/calc#" + strconv.Itoa(pr)}, "--out SUITE_DIR is required"},
		{[]string{"acme/calc#" + strconv.Itoa(open), "--out", suite}, "is not merged"},
		{[]string{"acme/calc#99", "--out", suite}, "was not found"},
		{[]string{"other/repo#1", "--out", suite}, "not installed on other/repo"},
		{[]string{"acme/calc#" + strconv.Itoa(pr), "--out", suite, "--name", "../up"}, "task name"},
	} {
		out, stderr, err := evalCmd(t, append(append([]string{"capture"}, tc.args...), flags...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("eval capture %q: %v (%s%s), want an error saying %q", tc.args, err, out, stderr, tc.want)
		}
	}
	if _, err := os.Stat(suite); err == nil {
		if entries, _ := os.ReadDir(suite); len(entries) != 0 {
			t.Errorf("failed captures left %v behind", entries)
		}
	}
}
