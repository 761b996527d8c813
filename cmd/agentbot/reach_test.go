package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// bridgeGateway is the host's address on Docker's default bridge, where
// a container on it reaches the host's services.
func bridgeGateway(t *testing.T) string {
	t.Helper()
	sandboxtest.RequireDocker(t)
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		t.Fatalf("the host has no docker0: %v", err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("docker0 has no IPv4 address")
	return ""
}

// listen listens on host's free port until the test ends, handing each
// connection to serve.
func listen(t *testing.T, host string, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().String()
}

// forward passes a connection on to addr.
func forward(addr string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		up, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer up.Close()
		go io.Copy(up, c)
		io.Copy(c, up)
	}
}

// startProbedWorker runs "agentbot worker" with real sandboxes and flags,
// in process, until ctx ends.
func startProbedWorker(ctx context.Context, t *testing.T, redisURL string, flags ...string) (<-chan error, func() string) {
	t.Helper()
	env, _, logs := testEnv(map[string]string{"AGENTBOT_REDIS_URL": redisURL})
	args := slices.Concat([]string{"worker", "--app-id", "1", "--private-key-file", writeTestKey(t),
		"--github-url", "http://127.0.0.1:1/api/v3", "--data-dir", t.TempDir(), "--metrics-addr", "off",
		"--sandbox-executor", sandboxtest.Executor(t), "--sandbox-image", sandboxtest.Image(t)}, flags)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, env) }()
	return done, logs.String
}

// A Redis the worker reaches through the bridge's gateway is reachable
// from the egress proxy's side too, so a setup allowed its address would
// reach it: the worker refuses to start, naming it and the operator's
// extra target.
func TestWorkerRefusesToStartWhenItsContainersReachRedis(t *testing.T) {
	t.Parallel()
	gw := bridgeGateway(t)
	rs := redistest.Start(t)
	redisAddr := listen(t, gw, forward(rs.Addr))
	extra := listen(t, gw, func(c net.Conn) { c.Close() })
	done, logs := startProbedWorker(t.Context(), t, "redis://"+redisAddr+"/0", "--reach-target", extra)
	var err error
	for ended, deadline := false, time.Now().Add(5*time.Minute); !ended; {
		select {
		case err = <-done:
			ended = true
		case <-time.After(100 * time.Millisecond):
		}
		if err == nil && (ended || strings.Contains(logs(), "worker started") || time.Now().After(deadline)) {
			t.Fatalf("the worker did not refuse to start with Redis in its containers' reach:\n%s", logs())
		}
	}
	msg := err.Error()
	for _, want := range []string{"refusing to start", "setup reaches Redis " + redisAddr + " through the egress proxy",
		"setup reaches --reach-target " + extra + " through the egress proxy", "--skip-reach-probe"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	// Directly, neither the sandbox nor the setup container reaches
	// anything: only the proxy's side of the node is open.
	if strings.Contains(msg, "sandbox reaches") || regexp.MustCompile(`setup reaches [^;]*[0-9](;|$)`).MatchString(msg) {
		t.Errorf("the refusal names a direct reach: %v", err)
	}
}

// A worker whose containers reach none of the targets starts and says so.
func TestWorkerStartsWhenItsContainersReachNothing(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	rs := redistest.Start(t) // on loopback: no container reaches it
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done, logs := startProbedWorker(ctx, t, rs.URL)
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(logs(), "worker started"); {
		select {
		case err := <-done:
			t.Fatalf("the worker stopped: %v\n%s", err, logs())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never started:\n%s", logs())
		}
	}
	if !strings.Contains(logs(), "reach probe: no target answered") {
		t.Errorf("the worker started without its reach probe:\n%s", logs())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("worker stopped with %v", err)
	}
}

func TestReachTargets(t *testing.T) {
	t.Parallel()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("search svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var f reachFlags
	f.resolvConf = resolv
	if err := f.targets.Set("192.0.2.7:8443, 198.51.100.1:22"); err != nil {
		t.Fatal(err)
	}
	k8s, _, _ := testEnv(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
	got, err := f.reachTargets(t.Context(), k8s, "172.17.0.1:6390", []string{"172.17.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []reachTarget{
		{What: "metadata", Addr: "169.254.169.254:80"},
		{What: "Redis", Addr: "172.17.0.1:6390"},
		{What: "node address", Addr: "172.17.0.1:22"},
		{What: "node address", Addr: "172.17.0.1:10250"},
		{What: "cluster DNS", Addr: "10.96.0.10:53", DNS: true},
		{What: "--reach-target", Addr: "192.0.2.7:8443"},
		{What: "--reach-target", Addr: "198.51.100.1:22"},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("targets lack %+v: %+v", want, got)
		}
	}
	// The Redis on a node address is named as the Redis, once.
	if slices.Contains(got, reachTarget{What: "node address", Addr: "172.17.0.1:6390"}) {
		t.Errorf("the Redis is a target twice: %+v", got)
	}
	// Outside Kubernetes the host's resolver is no cluster DNS; one is
	// named by --reach-dns.
	plain, _, _ := testEnv(nil)
	if got, err = f.reachTargets(t.Context(), plain, "", nil); err != nil {
		t.Fatal(err)
	}
	for _, tg := range got {
		if tg.DNS {
			t.Errorf("a cluster DNS outside Kubernetes: %+v", tg)
		}
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.1:http", ":53", "10.0.0.1:0"} {
		var h hostPorts
		if err := h.Set(bad); err == nil {
			t.Errorf("--reach-target %q accepted", bad)
		}
	}
}

// The operator's way around the probe is explicit and says what it gives
// up.
func TestSkipReachProbeSaysSo(t *testing.T) {
	t.Parallel()
	env, _, logs := testEnv(nil)
	f := reachFlags{skip: true}
	if err := f.proveUnreachable(t.Context(), env, failingProber{}, "", "", newLogger(env.Stderr)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "--skip-reach-probe") {
		t.Errorf("skipped without a word:\n%s", logs)
	}
}

// failingProber fails any probe: a skipped probe must not start one.
type failingProber struct{}

func (failingProber) ReachProbe(context.Context, string, []string, []string, time.Duration) (map[docker.Vantage][]byte, error) {
	return nil, errors.New("probed")
}

func (failingProber) BridgeGateways(context.Context) ([]string, error) {
	return nil, errors.New("probed")
}
