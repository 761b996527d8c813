package runner_test

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
)

// registry is an HTTP server on every host address, standing for a package
// registry, that counts its requests and answers as a dumb git server.
func registry(t *testing.T) (port string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	requests = &atomic.Int64{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if strings.HasSuffix(r.URL.Path, "/info/refs") {
			fmt.Fprintf(w, "%s\trefs/heads/main\n", strings.Repeat("ab", 20))
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port), requests
}

// bridgeGateway is the host's address on Docker's default bridge, where
// the egress proxy reaches the host.
func bridgeGateway(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("docker", "network", "inspect", "bridge", "-f", `{{index .Options "com.docker.network.bridge.name"}}`).Output()
	if err != nil {
		t.Fatalf("docker network inspect bridge: %v", err)
	}
	bridge, err := net.InterfaceByName(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the bridge network's interface %q: %v", out, err)
	}
	addrs, err := bridge.Addrs()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("the bridge %s has no address (%v)", bridge.Name, err)
	}
	return addrs[0].(*net.IPNet).IP.String()
}

func allowHost(t *testing.T, c *runner.Config, entry string) {
	t.Helper()
	a, err := app.ParseAllowHost(entry)
	if err != nil {
		t.Fatal(err)
	}
	c.Server.SetupAllowHosts = append(c.Server.SetupAllowHosts, a)
}

func TestSetupReachesOnlyAllowedHostsAndReportsTheRest(t *testing.T) {
	gw := bridgeGateway(t)
	allowedPort, allowed := registry(t)
	otherPort, other := registry(t)
	traces := &memTraces{}
	policy := quickPolicy + fmt.Sprintf(`setup:
  network: true
  run:
    - git ls-remote http://%[1]s:%[2]s/deps.git
    - git ls-remote http://%[1]s:%[3]s/deps.git || echo refused as expected
    - git ls-remote http://evil.example/x.git || echo refused as expected
`, gw, allowedPort, otherPort)
	w := newWorldWith(t, policy, demoScript(t), func(c *runner.Config) {
		c.Server.SetupNetwork = true
		c.Traces = traces
		allowHost(t, c, gw+":"+allowedPort)
	})
	tk := w.task(t, "E1")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	status := w.status("E1")
	if rec := w.store.record("E1"); rec.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s):\n%s", rec.State, rec.Step, status)
	}
	if allowed.Load() == 0 {
		t.Error("setup's request to the allowed host never arrived")
	}
	if other.Load() != 0 {
		t.Errorf("the host not allowed answered %d requests", other.Load())
	}
	want := []string{
		fmt.Sprintf("setup tried to reach %s:%s — not in setup.allow_hosts", gw, otherPort),
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
	for _, s := range want {
		if !strings.Contains(status, s) {
			t.Errorf("status comment lacks %q:\n%s", s, status)
		}
	}
}

// A setup command that ignores the proxy variables reaches nothing, even
// an allowed host: the task fails on its setup and says so.
func TestSetupThatBypassesTheProxyFails(t *testing.T) {
	gw := bridgeGateway(t)
	port, requests := registry(t)
	policy := quickPolicy + fmt.Sprintf(`setup:
  network: true
  run: ["env -u http_proxy -u HTTP_PROXY timeout 20 git ls-remote http://%s:%s/deps.git"]
`, gw, port)
	w := newWorldWith(t, policy, demoScript(t), func(c *runner.Config) {
		c.Server.SetupNetwork = true
		allowHost(t, c, gw+":"+port)
	})
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "E2")); err != nil {
		t.Fatal(err)
	}
	status := w.status("E2")
	if rec := w.store.record("E2"); rec.State != app.StateFailed || !strings.Contains(status, "the agent did not start") {
		t.Fatalf("task ended %s (%s); want failed on its setup:\n%s", rec.State, rec.Step, status)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the allowed host answered %d requests that bypassed the proxy", n)
	}
}

// A setup command that needs a host the server does not allow fails the
// task, and the status comment says which host was refused besides the
// command's output.
func TestSetupRefusedAHostFailsSayingWhich(t *testing.T) {
	traces := &memTraces{}
	policy := quickPolicy + "setup:\n  network: true\n  run: [\"timeout 20 git ls-remote https://evil.example/x.git\"]\n"
	w := newWorldWith(t, policy, demoScript(t), func(c *runner.Config) {
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
