package docker_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

func startEgress(t *testing.T, d *docker.Driver, allow ...string) *docker.Egress {
	t.Helper()
	e, err := d.StartEgress(context.Background(), sandbox.EgressSpec{TaskID: "egress-" + rand.Text(), Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := e.Close(context.Background()); err != nil {
			t.Errorf("close egress: %v", err)
		}
	})
	return e.(*docker.Egress)
}

func TestEgressOnlyThroughTheProxy(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	gateway, hostIP := hostAddrs(t)
	allowed, other := sandboxtest.StartGitServer(t), sandboxtest.StartGitServer(t)
	e := startEgress(t, d, gateway+":"+allowed.Port)
	c := sandboxtest.Start(t, d, sandbox.Spec{Egress: e})

	lsRemote := func(host, port string) string {
		return fmt.Sprintf("timeout 20 git ls-remote http://%s:%s/repo.git", host, port)
	}
	// An allowed host, through the proxy the variables name.
	if res := shell(t, c, lsRemote(gateway, allowed.Port)); res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "refs/heads/main") {
		t.Fatalf("allowed host through the proxy: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if allowed.Requests.Load() == 0 {
		t.Fatal("the allowed server answered nothing")
	}
	served := allowed.Requests.Load()

	probes := []struct{ name, line string }{
		{"a host not allowed, through the proxy", lsRemote(gateway, other.Port)},
		{"the metadata address, through the proxy", "timeout 20 git ls-remote http://169.254.169.254/latest.git"},
		{"the allowed host, ignoring the proxy", "env -u http_proxy -u HTTP_PROXY " + lsRemote(gateway, allowed.Port)},
		{"the allowed port, directly", fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%s'", gateway, allowed.Port)},
		{"the host's address, directly", fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%s'", hostIP, allowed.Port)},
		{"the metadata address, directly", "timeout 5 bash -c 'exec 3<>/dev/tcp/169.254.169.254/80'"},
		{"DNS", "timeout 5 getent hosts deb.debian.org"},
	}
	for _, p := range probes {
		if res := shell(t, c, p.line); res.ExitCode == 0 {
			t.Errorf("%s: %q succeeded", p.name, p.line)
		}
	}
	if n := other.Requests.Load(); n != 0 {
		t.Errorf("the server not allowed answered %d requests", n)
	}
	if n := allowed.Requests.Load(); n != served {
		t.Errorf("the allowed server answered %d requests that bypassed the proxy", n-served)
	}

	// The container goes first, as the runner closes it, then the egress.
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum, err := e.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Reached) != 1 || sum.Reached[0].String() != gateway+":"+allowed.Port {
		t.Errorf("reached %v; want only %s:%s", sum.Reached, gateway, allowed.Port)
	}
	var got []string
	for _, r := range sum.Refused {
		got = append(got, r.String())
	}
	want := []string{
		fmt.Sprintf("setup tried to reach %s:%s — %s", gateway, other.Port, egress.ReasonNotAllowed),
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
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	_, err := d.StartEgress(context.Background(), sandbox.EgressSpec{TaskID: "egress-bad", Allow: []string{"169.254.169.254"}})
	if err == nil || !strings.Contains(err.Error(), "link-local") {
		t.Errorf("StartEgress with the metadata address allowed = %v, want the proxy's refusal to start", err)
	}
}

func TestCABundleIsTheContainersTrustStore(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	const pemText = "-----BEGIN CERTIFICATE-----\nb3BlcmF0b3I=\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(bundle, []byte(pemText), 0o644); err != nil {
		t.Fatal(err)
	}
	c := sandboxtest.Start(t, d, sandbox.Spec{CABundle: bundle})
	res := shell(t, c, `exec bash -c 'for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS PIP_CERT REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO; do cmp "${!v}" /etc/ssl/agentbot/ca-bundle.pem || echo "$v=${!v}"; done; cat "$SSL_CERT_FILE"; echo x >> "$SSL_CERT_FILE"'`)
	if string(res.Stdout) != pemText {
		t.Errorf("stdout %q, stderr %q; want every variable naming the bundle, then the bundle", res.Stdout, res.Stderr)
	}
	if res.ExitCode == 0 {
		t.Error("the sandbox user could append to the trust store")
	}
}

// HTTPS goes through the proxy's CONNECT tunnel, and the operator's CA in
// the bundle is what lets the setup container trust a re-signed server.
func TestEgressHTTPSWithTheOperatorsCA(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	gateway, _ := hostAddrs(t)
	caPEM, cert := sandboxtest.PKI(t, gateway)
	reg := sandboxtest.StartGitServer(t, cert)
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(bundle, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	e := startEgress(t, d, gateway+":"+reg.Port)
	lsRemote := fmt.Sprintf("timeout 20 git ls-remote https://%s:%s/deps.git", gateway, reg.Port)

	trusting := sandboxtest.Start(t, d, sandbox.Spec{Egress: e, CABundle: bundle})
	if res := shell(t, trusting, lsRemote); res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "refs/heads/main") {
		t.Fatalf("HTTPS through the tunnel with the operator's CA: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The control: without the bundle the same server is not trusted.
	plain := sandboxtest.Start(t, d, sandbox.Spec{Egress: e})
	if res := shell(t, plain, lsRemote); res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "certificate") {
		t.Errorf("without the operator's CA: exit %d, stderr %q; want a certificate error", res.ExitCode, res.Stderr)
	}
	if reg.Requests.Load() == 0 {
		t.Error("the HTTPS server answered nothing")
	}
}

// A registry's credentials reach the proxy on its stdin alone: the
// engine's view of the proxy container holds none, and the setup
// container's trust store is the proxy's authority and the operator's CA.
func TestEgressHandsCredentialsOnStdin(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	operator := filepath.Join(t.TempDir(), "operator.pem")
	ca, err := egress.NewAuthority("operator CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(operator, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "Bearer tok-5d8e"
	task := "egress-" + rand.Text()
	e, err := d.StartEgress(t.Context(), sandbox.EgressSpec{TaskID: task, Allow: []string{"registry.example:443"}, CABundle: operator,
		Upstream: egress.Upstream{Credentials: []egress.Credential{{Scheme: "https", Host: "registry.example", Port: 443, Authorization: secret}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	ids, err := exec.Command("docker", "ps", "-q", "--filter", "label=agentbot.task="+task).Output()
	if err != nil || len(strings.Fields(string(ids))) != 1 {
		t.Fatalf("the proxy container: %q, %v", ids, err)
	}
	out, err := exec.Command("docker", "inspect", strings.TrimSpace(string(ids))).CombinedOutput()
	if err != nil || strings.Contains(string(out), "tok-5d8e") {
		t.Errorf("docker inspect of the proxy (%v) shows the credential:\n%s", err, out)
	}
	bundlePath := e.(*docker.Egress).CABundle
	bundle, err := os.ReadFile(bundlePath)
	if err != nil {
		t.Fatalf("the setup's CA bundle %q: %v", bundlePath, err)
	}
	if n := strings.Count(string(bundle), "BEGIN CERTIFICATE"); n != 2 || !strings.HasSuffix(string(bundle), string(ca.CertPEM())) {
		t.Errorf("bundle holds %d certificates, want the proxy's authority then the operator's CA:\n%s", n, bundle)
	}
	c := sandboxtest.Start(t, d, sandbox.Spec{Egress: e})
	if res := shell(t, c, `cmp "$SSL_CERT_FILE" /etc/ssl/agentbot/ca-bundle.pem && grep -c 'BEGIN CERT' "$SSL_CERT_FILE"`); strings.TrimSpace(string(res.Stdout)) != "2" {
		t.Errorf("the setup container trusts %q (%q), want the bundle", res.Stdout, res.Stderr)
	}
}
