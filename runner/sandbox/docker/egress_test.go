package docker_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// gitServer is a dumb-protocol git server on every host address that
// counts the requests it answers.
type gitServer struct {
	port     string
	requests atomic.Int64
}

func startGitServer(t *testing.T) *gitServer {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gitServer{port: fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/info/refs"):
			fmt.Fprintf(w, "%s\trefs/heads/main\n", strings.Repeat("ab", 20))
		case strings.HasSuffix(r.URL.Path, "/HEAD"):
			fmt.Fprintln(w, "ref: refs/heads/main")
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return g
}

func startEgress(t *testing.T, d *docker.Driver, allow ...string) *docker.Egress {
	t.Helper()
	e, err := d.StartEgress(context.Background(), docker.EgressSpec{TaskID: "egress-" + sandboxtest.RandomID(), Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := e.Close(context.Background()); err != nil {
			t.Errorf("close egress: %v", err)
		}
	})
	return e
}

func TestEgressOnlyThroughTheProxy(t *testing.T) {
	d := sandboxtest.NewDriver(t)
	gateway, hostIP := hostAddrs(t)
	allowed, other := startGitServer(t), startGitServer(t)
	e := startEgress(t, d, gateway+":"+allowed.port)
	c := sandboxtest.Start(t, d, docker.Spec{Egress: e})

	lsRemote := func(host, port string) string {
		return fmt.Sprintf("timeout 20 git ls-remote http://%s:%s/repo.git", host, port)
	}
	// An allowed host, through the proxy the variables name.
	if res := shell(t, c, lsRemote(gateway, allowed.port)); res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "refs/heads/main") {
		t.Fatalf("allowed host through the proxy: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if allowed.requests.Load() == 0 {
		t.Fatal("the allowed server answered nothing")
	}
	served := allowed.requests.Load()

	probes := []struct{ name, line string }{
		{"a host not allowed, through the proxy", lsRemote(gateway, other.port)},
		{"the metadata address, through the proxy", "timeout 20 git ls-remote http://169.254.169.254/latest.git"},
		{"the allowed host, ignoring the proxy", "env -u http_proxy -u HTTP_PROXY " + lsRemote(gateway, allowed.port)},
		{"the allowed port, directly", fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%s'", gateway, allowed.port)},
		{"the host's address, directly", fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%s'", hostIP, allowed.port)},
		{"the metadata address, directly", "timeout 5 bash -c 'exec 3<>/dev/tcp/169.254.169.254/80'"},
		{"DNS", "timeout 5 getent hosts deb.debian.org"},
	}
	for _, p := range probes {
		if res := shell(t, c, p.line); res.ExitCode == 0 {
			t.Errorf("%s: %q succeeded", p.name, p.line)
		}
	}
	if n := other.requests.Load(); n != 0 {
		t.Errorf("the server not allowed answered %d requests", n)
	}
	if n := allowed.requests.Load(); n != served {
		t.Errorf("the allowed server answered %d requests that bypassed the proxy", n-served)
	}

	// The container goes first, as the runner closes it, then the egress.
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	refused, err := e.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refused {
		got = append(got, r.String())
	}
	want := []string{
		fmt.Sprintf("setup tried to reach %s:%s — %s", gateway, other.port, egress.ReasonNotAllowed),
		"setup tried to reach 169.254.169.254:80 — " + egress.ReasonMetadata,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refused:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out, err := exec.Command("docker", "network", "inspect", e.Network).CombinedOutput(); err == nil {
		t.Errorf("network %s still exists after Close: %s", e.Network, out)
	}
}

func TestEgressRefusesABadAllowEntry(t *testing.T) {
	d := sandboxtest.NewDriver(t)
	_, err := d.StartEgress(context.Background(), docker.EgressSpec{TaskID: "egress-bad", Allow: []string{"169.254.169.254"}})
	if err == nil || !strings.Contains(err.Error(), "link-local") {
		t.Errorf("StartEgress with the metadata address allowed = %v, want the proxy's refusal to start", err)
	}
}

func TestCABundleIsTheContainersTrustStore(t *testing.T) {
	d := sandboxtest.NewDriver(t)
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	const pemText = "-----BEGIN CERTIFICATE-----\nb3BlcmF0b3I=\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(bundle, []byte(pemText), 0o644); err != nil {
		t.Fatal(err)
	}
	c := sandboxtest.Start(t, d, docker.Spec{CABundle: bundle})
	res := shell(t, c, `exec bash -c 'for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS PIP_CERT REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO; do cmp "${!v}" /etc/ssl/agentbot/ca-bundle.pem || echo "$v=${!v}"; done; cat "$SSL_CERT_FILE"; echo x >> "$SSL_CERT_FILE"'`)
	if string(res.Stdout) != pemText {
		t.Errorf("stdout %q, stderr %q; want every variable naming the bundle, then the bundle", res.Stdout, res.Stderr)
	}
	if res.ExitCode == 0 {
		t.Error("the sandbox user could append to the trust store")
	}
}
