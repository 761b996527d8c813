package runner_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// setupTask is a "/agent setup" by ada on the world's issue, recorded as
// intake would record it.
func (w *world) setupTask(t *testing.T, id string) app.Task {
	t.Helper()
	return w.command(t, id, "ada", app.VerbSetup)
}

// fileOn is the file path on branch of the world's repository.
func (w *world) fileOn(t *testing.T, branch, path string) string {
	t.Helper()
	dir, err := w.sim.GitDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "--git-dir", dir, "show", branch+":"+path).CombinedOutput()
	if err != nil {
		t.Fatalf("git show %s:%s: %v\n%s", branch, path, err, out)
	}
	return string(out)
}

// "/agent setup" on a repository without a policy (the demo's Go module,
// whose Sum has a bug) opens a pull request adding .github/agent.yml as
// the inference writes it, whose body says what was detected and how each
// check ran in the sandbox: the build passes, the test fails today.
func TestSetupVerbProposesTheProvedPolicy(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	envs, err := envcache.Open(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newDockerWorldWith(t, "", llmtest.Script{}, func(c *runner.Config) { c.Envs = envs })
	tk := w.setupTask(t, "setup-1")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	pulls := w.sim.PullRequests(repo)
	if len(pulls) != 1 {
		t.Fatalf("%d pull requests, want 1; status:\n%s", len(pulls), w.status(tk.ID))
	}
	pr := pulls[0]
	prop, err := policyinit.Infer(os.DirFS("../deploy/demo/repo"))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.fileOn(t, pr.Pull.Head, policy.PolicyPath); got != prop.YAML() {
		t.Errorf("the pull request's %s:\n%s\nwant the inference:\n%s", policy.PolicyPath, got, prop.YAML())
	}
	for _, want := range []string{
		"- go: go.mod",
		"**Image:** `agentbot-sandbox:dev`",
		"| build | `go build ./...` | ✅ passes |",
		"| test | `go test ./...` | ⚠️ runs, and fails today (exit 1): a task's work |",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the pull request's body lacks %q:\n%s", want, pr.Body)
		}
	}
	if st := w.store.record(tk.ID).State; st != app.StateSucceeded {
		t.Errorf("task state %s, want succeeded; status:\n%s", st, w.status(tk.ID))
	}
	if !strings.Contains(w.status(tk.ID), "Opened #") {
		t.Errorf("the status comment does not link the pull request:\n%s", w.status(tk.ID))
	}
	if left := w.sandboxesLeft(t, tk.ID); left != "" {
		t.Errorf("sandboxes left: %s", left)
	}

	// Asked again once the policy is on the default branch, it proposes
	// nothing.
	if _, err := w.sim.Commit(repo, "main", "ada", "add the policy", map[string]string{policy.PolicyPath: prop.YAML()}); err != nil {
		t.Fatal(err)
	}
	again := w.setupTask(t, "setup-2")
	if err := w.runner.ProcessTask(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	if n := len(w.sim.PullRequests(repo)); n != 1 {
		t.Errorf("%d pull requests after the second setup, want still 1", n)
	}
	if s := w.status(again.ID); !strings.Contains(s, "already has what agentbot infers") {
		t.Errorf("the second setup's status:\n%s", s)
	}
}

// "/agent setup" says which hosts setup needed: those the egress proxy
// connected it to, with the server config's entry that allowed each, in
// the pull request; and those it refused, once each, with the
// setup.allow_hosts lines to add, in the status comment of a setup that
// fails for want of them.
func TestSetupVerbShowsTheHostsSetupNeeded(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	t.Run("reached", func(t *testing.T) {
		t.Parallel()
		fc := pythonFirstContact(t)
		w := newEnvWorldOf(t, llmtest.Script{}, fc.files, fc.image)
		w.onlyRegistries(t, fc.registries)
		tk := w.setupOn(t, "setup-reached")
		pulls := w.sim.PullRequests(repo)
		if len(pulls) != 1 {
			t.Fatalf("%d pull requests, want 1; status:\n%s", len(pulls), w.statusOf(tk))
		}
		for _, want := range []string{
			"Setup needed, and reached:\n\n- `" + fc.registry.Host() + "` (the pypi registry)\n",
			"The proxy refused no connection.",
		} {
			if !strings.Contains(pulls[0].Body, want) {
				t.Errorf("the pull request's body lacks %q:\n%s", want, pulls[0].Body)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		fc := pythonFirstContact(t)
		fc.files["requirements.txt"] = "far @ http://far.example/far-1.0-py3-none-any.whl\n"
		w := newEnvWorldOf(t, llmtest.Script{}, fc.files, fc.image)
		w.onlyRegistries(t, fc.registries)
		tk := w.setupOn(t, "setup-refused")
		if n := len(w.sim.PullRequests(repo)); n != 0 {
			t.Fatalf("%d pull requests for a setup that fails", n)
		}
		status := w.statusOf(tk)
		for _, want := range []string{
			"The inferred setup fails",
			"- `far.example` — not in setup.allow_hosts\n",
			"```yaml\nsetup:\n  allow_hosts:\n    - \"far.example\"\n```",
		} {
			if !strings.Contains(status, want) {
				t.Errorf("the status comment lacks %q:\n%s", want, status)
			}
		}
		if n := strings.Count(status, "**Setup's network"); n != 1 {
			t.Errorf("the status comment says setup's network %d times, want once:\n%s", n, status)
		}
	})
}

// setupOn runs "/agent setup" by ada on a new issue to its end.
func (w *envWorld) setupOn(t *testing.T, id string) app.Task {
	t.Helper()
	issue, err := w.sim.AddIssue(repo, "ada", "Set agentbot up", "")
	if err != nil {
		t.Fatal(err)
	}
	tk := w.commandIn(t, w.inst, repo, "ada", id, issue, app.VerbSetup)
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

// statusOf is the body of task tk's status comment.
func (w *envWorld) statusOf(tk app.Task) string {
	for _, c := range w.sim.Comments(repo, tk.Number) {
		if strings.Contains(c.Body, "agentbot:task="+tk.ID) {
			return c.Body
		}
	}
	return ""
}
