package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// evalCmd runs "agentbot eval" in-process with no model configured, and
// returns stdout, stderr and the error.
func evalCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return evalCmdEnv(t, map[string]string{}, args...)
}

// evalScripted runs "agentbot eval" on suite as make eval does: each
// task's trajectory is served as the model named after the task.
func evalScripted(t *testing.T, suite string, args ...string) (string, string, error) {
	t.Helper()
	return evalCmdEnv(t, scriptedModel(t, suite), append([]string{suite, "--model", eval.TaskPlaceholder}, args...)...)
}

func evalCmdEnv(t *testing.T, vars map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := Env{Getenv: func(k string) string { return vars[k] }, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}
	err := run(context.Background(), append([]string{"eval"}, args...), env)
	return stdout.String(), stderr.String(), err
}

func sandboxArgs(t *testing.T) []string {
	envs, err := sharedEnvs()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--image", sandboxtest.Image(t), "--executor", sandboxtest.Executor(t), "--env-cache-dir", envs}
}

// TestEvalShippedSuite runs the suite agentbot ships through the real loop
// and sandbox with the scripted model, its three tasks at once: every task
// is solved, with real go test checks, and its hidden tests pass.
func TestEvalShippedSuite(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	out, progress, err := evalScripted(t, "../../runner/eval/testdata/suite", append([]string{"--parallel", "3"}, sandboxArgs(t)...)...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, progress, out)
	}
	for _, task := range []string{"errcheck", "pagination", "rounding"} {
		if !strings.Contains(out, task+" ") || !strings.Contains(progress, task+" run 1: solved, hidden pass, 4 iterations") {
			t.Errorf("%s is not reported solved with its hidden tests passing:\n%s\n%s", task, progress, out)
		}
	}
	if e, p, r := strings.Index(out, "\nerrcheck "), strings.Index(out, "\npagination "), strings.Index(out, "\nrounding "); e < 0 || e > p || p > r {
		t.Errorf("the report does not list the tasks in the suite's order:\n%s", out)
	}
	var total []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "total" {
			total = f
		}
	}
	if len(total) != 8 || strings.Join(total[:5], " ") != "total 3 3/3 3/3 4.0" || total[5] == "0" {
		t.Errorf("total row = %q, want 3 runs, 3 solved, 3 passing hidden tests, 4 iterations and tokens counted:\n%s", total, out)
	}
	if !strings.Contains(out, "solved 100% (3/3) of runs; hidden tests passed in 100% (3/3)") {
		t.Errorf("report lacks the summary line:\n%s", out)
	}
	t.Logf("\n%s%s", progress, out)
}

// A task whose fix is right, and one whose trajectory edits the wrong line
// and finishes anyway: the checks stay red, finish is refused and the
// script runs out.
const (
	evalTask   = "title: Greeting says hello\nbody: greeting.txt must say hello.\nchecks: [\"grep -qx hello greeting.txt || { echo \\\"greeting.txt: $(cat greeting.txt)\\\"; exit 1; }\"]\nhidden: [\"sh hidden.sh\"]\n"
	goodScript = `steps:
  - tool_calls: [{name: run_checks, arguments: {}}]
  - tool_calls: [{name: edit_file, arguments: {path: greeting.txt, old_string: "helo", new_string: "hello"}}]
  - tool_calls: [{name: finish, arguments: {summary: "Spell hello."}}]
`
	brokenScript = `steps:
  - tool_calls: [{name: edit_file, arguments: {path: greeting.txt, old_string: "helo", new_string: "hallo"}}]
  - tool_calls: [{name: finish, arguments: {summary: "Spell hello."}}]
`
)

func writeSuite(t *testing.T, tasks map[string]map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, files := range tasks {
		ostest.WriteTree(t, filepath.Join(dir, name), files)
	}
	return dir
}

func greetingTask(script string) map[string]string {
	return map[string]string{
		"task.yaml": evalTask, "repo/greeting.txt": "helo\n", "trajectory.yaml": script,
		"hidden/hidden.sh": "test \"$(cat greeting.txt)\" = hello\n",
	}
}

// TestEvalReportsFailuresAndAggregatesRuns runs a good and a broken
// trajectory twice each, all four runs at once: the JSON report has each
// run in order, the broken task failed, the rates and means over both runs,
// and the command exits 1.
func TestEvalReportsFailuresAndAggregatesRuns(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	suite := writeSuite(t, map[string]map[string]string{"good": greetingTask(goodScript), "broken": greetingTask(brokenScript)})
	out, progress, err := evalScripted(t, suite, append([]string{"--runs", "2", "--parallel", "4", "--json"}, sandboxArgs(t)...)...)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "2 of 4 runs solved") {
		t.Fatalf("eval = %v, want exit 1 saying 2 of 4 runs solved\n%s", err, progress)
	}
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed something else: %v\n%s", err, out)
	}
	if len(rep.Tasks) != 2 || rep.Runs != 2 {
		t.Fatalf("report = %+v, want 2 tasks of 2 runs", rep)
	}
	broken, good := rep.Tasks[0], rep.Tasks[1]
	if good.Task != "good" || good.Solved != 2 || good.HiddenPassed != 2 || good.MeanIterations != 3 || good.MeanTokens == 0 || len(good.Results) != 2 {
		t.Errorf("good = %+v, want 2 of 2 solved in 3 iterations with hidden tests passing", good)
	}
	if broken.Task != "broken" || broken.Solved != 0 || broken.HiddenPassed != 0 || broken.SuccessRate != 0 {
		t.Errorf("broken = %+v, want no run solved", broken)
	}
	for _, tr := range rep.Tasks {
		for i, r := range tr.Results {
			if r.Task != tr.Task || r.Run != i+1 {
				t.Errorf("%s's result %d is %s run %d, want the runs in order", tr.Task, i, r.Task, r.Run)
			}
		}
	}
	for _, r := range broken.Results {
		if r.Solved || r.Hidden != eval.HiddenSkipped || r.Error == "" {
			t.Errorf("broken run %d = %+v, want failed, hidden tests skipped, the error said", r.Run, r)
		}
	}
	if tot := rep.Total; tot.Runs != 4 || tot.Solved != 2 || tot.SuccessRate != 0.5 || tot.HiddenRuns != 4 || tot.HiddenPassed != 2 || tot.MeanSeconds <= 0 {
		t.Errorf("total = %+v", tot)
	}
	if !strings.Contains(progress, "broken run 2: failed (") || !strings.Contains(progress, "good run 2: solved, hidden pass, 3 iterations") {
		t.Errorf("progress lines:\n%s", progress)
	}
}

// TestEvalWithAModelIgnoresTrajectories points eval at a model endpoint
// (a scripted server on loopback standing in for a real model): the task's
// own trajectory, broken here, is ignored, the model named by --model is
// asked, and a task needs no trajectory at all.
func TestEvalWithAModelIgnoresTrajectories(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	script, err := llmtest.Parse([]byte(goodScript))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t, script)
	suite := writeSuite(t, map[string]map[string]string{"good": greetingTask(brokenScript)})
	vars := map[string]string{"AGENTBOT_LLM_BASE_URL": srv.URL()}
	out, progress, err := evalCmdEnv(t, vars, append([]string{suite, "--model", "remote-model", "--json"}, sandboxArgs(t)...)...)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, progress, out)
	}
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if r := rep.Tasks[0].Results[0]; !r.Solved || r.Hidden != eval.HiddenPass || r.Model != "remote-model" {
		t.Errorf("run = %+v, want solved by remote-model", r)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Errorf("the endpoint saw %d requests, want the script's 3", len(reqs))
	}
	for _, r := range reqs {
		if r.Model != "remote-model" {
			t.Errorf("a request asked for model %q, want remote-model", r.Model)
		}
	}

	if err := os.Remove(filepath.Join(suite, "good", eval.TrajectoryFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := evalCmdEnv(t, vars, suite, "--image", "no-such-image:dev", "--executor", sandboxtest.Executor(t)); err == nil || strings.Contains(err.Error(), eval.TrajectoryFile) {
		t.Errorf("eval without a trajectory = %v, want it to get past loading the suite to the missing image", err)
	}
}

func TestEvalRefusesMalformedSuites(t *testing.T) {
	t.Parallel()
	good := greetingTask(goodScript)
	with := func(path, content string) map[string]string {
		files := map[string]string{}
		for p, c := range good {
			files[p] = c
		}
		if content == "" {
			delete(files, path)
		} else {
			files[path] = content
		}
		return files
	}
	tests := []struct {
		name  string
		task  map[string]string
		want  string // $S is the suite directory
		extra []string
	}{
		{"missing task file", with("task.yaml", ""), "$S/a/task.yaml: missing", nil},
		{"bad task YAML", with("task.yaml", "title: t\nbody: b\nchecks: [x]\nhidden: true\n"), "$S/a/task.yaml: line 4: cannot unmarshal", nil},
		{"unknown key", with("task.yaml", "title: t\nbody: b\ncheck: [x]\n"), "$S/a/task.yaml: line 3: field check not found", nil},
		{"bad policy", with("repo/.github/agent.yml", "version: 1\nlimits: {iterations: many}\n"), "$S/a/repo/.github/agent.yml:2", nil},
		{"two suites", good, "want one SUITE_DIR, got 2 arguments", []string{"other"}},
		{"no runs", good, "--runs 0: want 1 or more", []string{"--runs", "0"}},
		{"no parallel runs", good, "--parallel 0: want 1 or more", []string{"--parallel", "0"}},
		{"no model endpoint", good, "no model endpoint: set AGENTBOT_LLM_BASE_URL", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			suite := writeSuite(t, map[string]map[string]string{"a": tt.task})
			_, _, err := evalCmd(t, append([]string{suite}, tt.extra...)...)
			want := strings.ReplaceAll(tt.want, "$S", suite)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("eval = %v, want an error containing %q", err, want)
			}
		})
	}
}
