package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// TestWorkerAndRunMakeTheSameChange walks the sample's scripted fix
// through a worker (webhook, queue, GitHub simulator, real git and
// Docker) and through agentbot run on a checkout of the same repository:
// both make their change through runner/change, so the checks on the
// base, the gate's verdict, the final verification, the reproduction and
// the diff are the same.
func TestWorkerAndRunMakeTheSameChange(t *testing.T) {
	t.Parallel()
	w := startE2E(t, samplePolicy(t, ""))
	id := fixTo(t, w, app.StateSucceeded)
	raw, err := w.Store.LoadProgress(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var worker struct {
		Base         *change.Verification `json:"base_checks"`
		Verified     *change.Verification `json:"verified"`
		Reproduction *change.Reproduction `json:"reproduction"`
	}
	if err := json.Unmarshal(raw, &worker); err != nil {
		t.Fatal(err)
	}
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 {
		t.Fatalf("the worker opened %d pull requests; want 1", len(prs))
	}
	gitDir := filepath.Join(w.SimDir, "acme", "stats.git")
	workerDiff, err := exec.Command("git", "--git-dir", gitDir, "diff", "--binary", "--full-index", "--find-renames", "--no-color",
		"--src-prefix=a/", "--dst-prefix=b/", "main", prs[0].Pull.Head, "--").Output()
	if err != nil {
		t.Fatal(err)
	}

	sample, err := demo.LoadSample(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ostest.WriteTree(t, dir, sample.Files)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	result := filepath.Join(t.TempDir(), "result.json")
	out, err := runScripted(t, filepath.Join(sampleDir, "model.yaml"), "--repo", dir, "--task", w.Title, "--result", result,
		"--sandbox-image", sandboxtest.Image(t), "--sandbox-executor", sandboxtest.Executor(t))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	data, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	var local runResult
	if err := json.Unmarshal(data, &local); err != nil {
		t.Fatal(err)
	}

	if local.Ended != nil || local.Gate != "passed" {
		t.Errorf("run: ended %+v, gate %q; want a change the gate passed, as the worker's pull request is", local.Ended, local.Gate)
	}
	if got, want := string(workerDiff), local.Diff; got != want || want == "" {
		t.Errorf("diffs differ:\n--- worker\n%s\n--- run\n%s", got, want)
	}
	for _, v := range []struct {
		name          string
		worker, local *change.Verification
	}{{"base checks", worker.Base, local.Base}, {"verification", worker.Verified, local.Verified}} {
		if v.worker == nil || v.local == nil {
			t.Fatalf("%s: worker %+v, run %+v; want both", v.name, v.worker, v.local)
		}
		if a, b := checkVerdicts(*v.worker), checkVerdicts(*v.local); !slices.Equal(a, b) || v.worker.Passed != v.local.Passed {
			t.Errorf("%s: worker %v (passed %v), run %v (passed %v)", v.name, a, v.worker.Passed, b, v.local.Passed)
		}
	}
	if !worker.Verified.Passed || worker.Base.Passed {
		t.Errorf("the checks pass on the base or fail with the fix; is this the sample's fix?")
	}
	wr, lr := worker.Reproduction, local.Reproduction
	if wr == nil || lr == nil {
		t.Fatalf("reproduction: worker %+v, run %+v; want both", wr, lr)
	}
	if wr.Mode != lr.Mode || wr.Reproduced != lr.Reproduced || wr.Existing != lr.Existing || !slices.Equal(wr.Tests, lr.Tests) || !slices.Equal(wr.Files, lr.Files) {
		t.Errorf("reproduction: worker %+v, run %+v", *wr, *lr)
	}
	if !wr.Reproduced || !slices.Equal(wr.Tests, []string{"TestSum", "TestMean"}) {
		t.Errorf("the worker's fix is not reproduced by TestSum and TestMean: %+v", *wr)
	}
}

// checkVerdicts is each check's name, command and exit, as both paths
// must agree on them; containers, times and output differ.
func checkVerdicts(v change.Verification) []string {
	var out []string
	for _, c := range v.Checks {
		out = append(out, fmt.Sprintf("%s: %s: %s exit %d", c.Name, c.Run, passFail(c.Passed), c.ExitCode))
	}
	for _, c := range v.NotRun {
		out = append(out, c.Name+": not run")
	}
	return out
}
