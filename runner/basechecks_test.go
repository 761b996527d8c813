package runner_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// demoPolicy is the demo's own policy: the checks build and test the Go
// module, and the demo's recorded fix changes no test.
func demoPolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../deploy/demo/repo/.github/agent.yml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkPolicy is a policy whose one check runs run.
func checkPolicy(run string) string {
	return fmt.Sprintf("version: 1\nchecks:\n  - {name: test, run: %q}\npaths: {allow: [\"**/*.go\"]}\n", run)
}

// goDependency is a Go file and module that need a module the sandbox's
// module cache does not have, with its go.sum entries, so that go asks
// for it instead of refusing the go.sum.
var goDependency = map[string]string{
	"dep.go": "package stats\n\nimport _ \"example.invalid/dep\"\n",
	"go.mod": "module example.com/stats\n\ngo 1.22\n\nrequire example.invalid/dep v1.0.0\n",
	"go.sum": "example.invalid/dep v1.0.0 h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n" +
		"example.invalid/dep v1.0.0/go.mod h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
}

// TestChecksThatCannotRunStopTheTaskBeforeTheModel gives each task checks
// that fail on the base for a cause no change to the code removes: the
// task fails before the model is asked anything, and its status comment
// names the cause and the policy line to add.
func TestChecksThatCannotRunStopTheTaskBeforeTheModel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, run string
		files     map[string]string
		cause     string
		fix       string
	}{
		{"missing command", "agentbot-no-such-tool --all", nil, "the command `agentbot-no-such-tool` is not installed in the sandbox", "sandbox image"},
		{"go module lookup", "GOPROXY=off GOFLAGS=-mod=mod go test ./...", goDependency,
			"a Go module the code needs is not in the sandbox's module cache", "Add `go mod download` to `setup.run`, with `setup.network: true`."},
		{"python dependency", "python3 -c 'import agentbot_no_such_module'", nil, "the Python module `agentbot_no_such_module` is not installed", "`python3 -m pip install -e .`"},
		{"node package", `node -e "require('agentbot-no-such-package')"`, nil, "the Node package `agentbot-no-such-package` is not installed", "`npm ci`"},
		{"no network", "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://agentbot-test.invalid/\")'", nil,
			"the check reaches for the network, and the sandbox has none", "`setup.allow_hosts`"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Any step the model took would be a failed edit: it must take none.
			w := newWorld(t, checkPolicy(tt.run), llmtest.Script{Steps: []llmtest.Step{{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: fixEdit}}}}})
			if tt.files != nil {
				if _, err := w.sim.Commit(repo, "main", "grace", "Add a dependency", tt.files); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.runner.ProcessTask(t.Context(), w.task(t, "C1")); err != nil {
				t.Fatal(err)
			}
			status := w.status("C1")
			if r := w.store.record("C1"); r.State != app.StateFailed {
				t.Fatalf("task ended %s (%s); want failed:\n%s", r.State, r.Step, status)
			}
			if n := len(w.model.Requests()); n != 0 {
				t.Errorf("the model was asked %d times; want never", n)
			}
			if !strings.Contains(status, "❌ **No pull request.** the checks cannot run: "+tt.cause) ||
				!strings.Contains(status, "so the agent did not start") || !strings.Contains(status, tt.fix) {
				t.Errorf("the status comment does not name the cause %q and the fix %q:\n%s", tt.cause, tt.fix, status)
			}
			if left := w.sandboxesLeft(t, "C1-base"); left != "" {
				t.Errorf("the base checks' sandbox is still there: %s", left)
			}
		})
	}
}

// TestChecksThatCannotRunInTheSandboxStopTheTask runs the checks of a Go
// module whose dependency setup did not download in real sandboxes: the
// image's GOPROXY=off refuses the lookup, and a proxy set by the check
// finds no network. Either stops the task before the model's first step.
func TestChecksThatCannotRunInTheSandboxStopTheTask(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ id, name, run, cause string }{
		{"D1", "module lookup disabled", "go test ./...", "a Go module the code needs is not in the sandbox's module cache"},
		{"D2", "no network", "GOPROXY=https://proxy.golang.org go test ./...", "the check reaches for the network, and the sandbox has none"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newDockerWorld(t, checkPolicy(tt.run), llmtest.Script{Steps: []llmtest.Step{{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: fixEdit}}}}})
			if _, err := w.sim.Commit(repo, "main", "grace", "Add a dependency", goDependency); err != nil {
				t.Fatal(err)
			}
			if err := w.runner.ProcessTask(t.Context(), w.task(t, tt.id)); err != nil {
				t.Fatal(err)
			}
			status := w.status(tt.id)
			if r := w.store.record(tt.id); r.State != app.StateFailed || len(w.model.Requests()) != 0 {
				t.Fatalf("task ended %s after %d model requests; want failed before any:\n%s", r.State, len(w.model.Requests()), status)
			}
			if !strings.Contains(status, "the checks cannot run: "+tt.cause) || !strings.Contains(status, "**What to add to the policy**") {
				t.Errorf("the status comment does not name the cause %q and the fix:\n%s", tt.cause, status)
			}
			if left := w.sandboxesLeft(t, tt.id+"-base"); left != "" {
				t.Errorf("the base checks' container is still there: %s", left)
			}
		})
	}
}

// TestAFailingTestIsNoReasonToStop runs the demo, whose TestSum fails on
// the base: that is the normal case, and the loop runs.
func TestAFailingTestIsNoReasonToStop(t *testing.T) {
	t.Parallel()
	w := newWorld(t, demoPolicy(t), demoScript(t))
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "F1")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("F1"); r.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", r.State, r.Step, w.status("F1"))
	}
}

// TestAnExistingTestFailingOnTheBaseReproducesTheFix is the demo: TestSum
// fails on the base commit and passes with the change, which adds no
// test. The pull request says it is reproduced by that test, with its
// output, in a section that comes before the trace, which is last.
func TestAnExistingTestFailingOnTheBaseReproducesTheFix(t *testing.T) {
	t.Parallel()
	w := newWorld(t, demoPolicy(t), demoScript(t))
	rec := w.recorded(t)
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "E1")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("E1"); r.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", r.State, r.Step, w.status("E1"))
	}
	prs := w.sim.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests; want 1", len(prs))
	}
	body := prs[0].Body
	base, head := branchSHA(t, w, "main")[:7], branchSHA(t, w, prs[0].Pull.Head)[:7]
	want := "✅ **Reproduced by an existing test:** `TestSum`, `TestMean` fail on `" + base + "` before any change (check **test**, `go test ./...`: fail (exit 1)), and pass on `" + head + "`"
	if !strings.Contains(body, want) || strings.Contains(body, "unproven") || !strings.Contains(body, "--- FAIL: TestSum") {
		t.Errorf("the pull request does not name TestSum as the reproduction, with its output:\n%s", body)
	}
	repro, trace := strings.Index(body, "## Reproduction"), strings.Index(body, "<details><summary>Trace</summary>")
	if repro < 0 || trace < repro || strings.Contains(body[trace:], "\n## ") {
		t.Errorf("the reproduction is not before the trace, or the trace is not last:\n%s", body)
	}
	var base0 []string
	for _, e := range rec.trace("E1", app.TraceCheck) {
		if strings.HasPrefix(e.Name, "base ") {
			base0 = append(base0, e.Name+" "+e.Outcome)
		}
	}
	if strings.Join(base0, ", ") != "base build passed, base test failed" {
		t.Errorf("base checks in the trace: %q", base0)
	}
}

// TestBaseChecksLeaveNothingInTheAgentsTree: the checks on the base run
// over a fresh tree, so a file a check writes there (here, only when it
// fails, as the base's test does) is not in the tree the agent changes and
// the gate judges. The model fixes Sum without running the checks first.
func TestBaseChecksLeaveNothingInTheAgentsTree(t *testing.T) {
	t.Parallel()
	w := newWorld(t, checkPolicy("go test ./... || { echo failed > zz_failed.txt; exit 1; }"),
		steps(llmtest.Call{Name: "edit_file", Arguments: fixEdit}, finishCall))
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "L1")); err != nil {
		t.Fatal(err)
	}
	if r := w.store.record("L1"); r.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s); want the fix, without the base run's file:\n%s", r.State, r.Step, w.status("L1"))
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 1 {
		t.Errorf("%d pull requests; want 1", len(prs))
	}
}
