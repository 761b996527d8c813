package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

func allowHost(t *testing.T, c *runner.Config, entry string) {
	t.Helper()
	a, err := app.ParseAllowHost(entry)
	if err != nil {
		t.Fatal(err)
	}
	c.Server.SetupAllowHosts = append(c.Server.SetupAllowHosts, a)
}

func TestSetupReachesOnlyAllowedHostsAndReportsTheRest(t *testing.T) {
	t.Parallel()
	gw := sandboxtest.BridgeGateway(t)
	allowed, other := sandboxtest.StartGitServer(t), sandboxtest.StartGitServer(t)
	traces := &memTraces{}
	policy := quickPolicy + fmt.Sprintf(`setup:
  network: true
  run:
    - git ls-remote http://%[1]s:%[2]s/deps.git
    - git ls-remote http://%[1]s:%[3]s/deps.git || echo refused as expected
    - git ls-remote http://evil.example/x.git || echo refused as expected
`, gw, allowed.Port, other.Port)
	w := newDockerWorldWith(t, policy, demoScript(t), func(c *runner.Config) {
		c.Server.SetupNetwork = true
		c.Traces = traces
		allowHost(t, c, gw+":"+allowed.Port)
	})
	tk := w.task(t, "E1")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	status := w.status("E1")
	if rec := w.store.record("E1"); rec.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", rec.State, rec.Step, status)
	}
	if allowed.Requests.Load() == 0 {
		t.Error("setup's request to the allowed host never arrived")
	}
	if other.Requests.Load() != 0 {
		t.Errorf("the host not allowed answered %d requests", other.Requests.Load())
	}
	want := []string{
		fmt.Sprintf("setup tried to reach %s:%s — not in setup.allow_hosts", gw, other.Port),
		"setup tried to reach evil.example:80 — not in setup.allow_hosts",
	}
	var traced []string
	for _, e := range traces.events["E1"] {
		if e.Kind == app.TraceRefusal && e.Name == "egress" {
			traced = append(traced, e.Detail)
		}
	}
	if strings.Join(traced, "\n") != strings.Join(want, "\n") {
		t.Errorf("trace's egress refusals:\n%s\nwant:\n%s", strings.Join(traced, "\n"), strings.Join(want, "\n"))
	}
	var reached []string
	for _, e := range traces.events["E1"] {
		if e.Kind == app.TraceEgress {
			reached = append(reached, e.Outcome+" "+e.Detail)
		}
	}
	if want := "reached " + gw + ":" + allowed.Port; len(reached) != 1 || reached[0] != want {
		t.Errorf("trace's reached hosts %q; want once %q", reached, want)
	}
	for _, s := range want {
		if !strings.Contains(status, s) {
			t.Errorf("status comment lacks %q:\n%s", s, status)
		}
	}
}

// A setup command that ignores the proxy variables reaches nothing, even
// an allowed host: the task fails on its setup and says so.
func TestSetupThatBypassesTheProxyFails(t *testing.T) {
	t.Parallel()
	gw := sandboxtest.BridgeGateway(t)
	reg := sandboxtest.StartGitServer(t)
	policy := quickPolicy + fmt.Sprintf(`setup:
  network: true
  run: ["env -u http_proxy -u HTTP_PROXY timeout 20 git ls-remote http://%s:%s/deps.git"]
`, gw, reg.Port)
	w := newDockerWorldWith(t, policy, demoScript(t), func(c *runner.Config) {
		c.Server.SetupNetwork = true
		allowHost(t, c, gw+":"+reg.Port)
	})
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "E2")); err != nil {
		t.Fatal(err)
	}
	status := w.status("E2")
	if rec := w.store.record("E2"); rec.State != app.StateFailed || !strings.Contains(status, "the agent did not start") {
		t.Fatalf("task ended %s (%s); want failed on its setup:\n%s", rec.State, rec.Step, status)
	}
	if n := reg.Requests.Load(); n != 0 {
		t.Errorf("the allowed host answered %d requests that bypassed the proxy", n)
	}
}

// A setup command that needs a host the server does not allow fails the
// task, and the status comment says which host was refused besides the
// command's output.
func TestSetupRefusedAHostFailsSayingWhich(t *testing.T) {
	t.Parallel()
	traces := &memTraces{}
	policy := quickPolicy + "setup:\n  network: true\n  run: [\"timeout 20 git ls-remote https://evil.example/x.git\"]\n"
	w := newDockerWorldWith(t, policy, demoScript(t), func(c *runner.Config) {
		c.Server.SetupNetwork = true
		c.Traces = traces
		allowHost(t, c, "proxy.golang.org")
	})
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "E3")); err != nil {
		t.Fatal(err)
	}
	status := w.status("E3")
	if rec := w.store.record("E3"); rec.State != app.StateFailed {
		t.Fatalf("task ended %s (%s); want failed:\n%s", rec.State, rec.Step, status)
	}
	const refusal = "setup tried to reach evil.example:443 — not in setup.allow_hosts"
	for _, want := range []string{"the agent did not start", refusal} {
		if !strings.Contains(status, want) {
			t.Errorf("status comment lacks %q:\n%s", want, status)
		}
	}
	var traced []string
	for _, e := range traces.events["E3"] {
		if e.Kind == app.TraceRefusal {
			traced = append(traced, e.Detail)
		}
	}
	if len(traced) != 1 || traced[0] != refusal {
		t.Errorf("trace's refusals %q; want %q", traced, refusal)
	}
}
