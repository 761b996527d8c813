package runner_test

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// serveTLS serves p's modules over HTTPS on the Docker bridge's address,
// with a certificate ca signed, answering 401 to requests without auth
// (when auth is set); it returns the proxy's URL and counts requests.
func (p *goProxy) serveTLS(t *testing.T, ca *egress.Authority, auth string) (string, *atomic.Int64) {
	t.Helper()
	gw := sandboxtest.BridgeGateway(t)
	cert, err := ca.Issue(gw)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	files := http.FileServer(http.Dir(p.dir))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if auth != "" && r.Header.Get("Authorization") != auth {
			http.Error(w, "credentials required", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{*cert}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String(), &requests
}

// registrySetup is a setup with network of a Go module needing
// example.com/mathx from proxy, under a server config whose only setup
// settings are yaml's, running commands after "go mod download".
func registrySetup(t *testing.T, proxy *goProxy, yaml string, commands ...string) change.Setup {
	t.Helper()
	files := map[string]string{"main.go": "package main\n\nimport \"example.com/mathx\"\n\nfunc main() { println(mathx.Add(1, 2)) }\n",
		"go.mod": "module example.com/app\n\ngo 1.21\n"}
	files["go.mod"], files["go.sum"] = proxy.tidy(t, files)
	return setupUnder(t, yaml, sandboxtest.Image(t), files, append([]string{"go mod download && go build -o /dev/null ."}, commands...)...)
}

// setupUnder is a setup with network running commands over a tree of
// files on image, under a server config whose only setup settings are
// yaml's, which lists no host in allow_hosts.
func setupUnder(t *testing.T, yaml, image string, files map[string]string, commands ...string) change.Setup {
	t.Helper()
	server, err := policy.ParseServerConfig(filepath.Join(t.TempDir(), "server.yaml"), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if len(server.SetupAllowHosts) != 0 {
		t.Fatalf("allow_hosts %v: the registry must be reached as a registry only", server.SetupAllowHosts)
	}
	tree := sandboxtest.WorkTree(t)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tree, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policy := policy.Policy{Setup: policy.Setup{Network: true, Run: commands}}
	s := change.NewSetup(sandboxtest.NewDriver(t), policy, "reg-"+strings.ToLower(t.Name()), tree, image)
	s.AllowHosts = server.SetupAllowHosts
	s.Registries = server.SetupRegistries
	return s
}

func newMathProxy(t *testing.T) *goProxy {
	t.Helper()
	sandboxtest.RequireDocker(t)
	proxy := newGoProxy(t)
	proxy.add(t, "example.com/mathx", "v1.0.0", map[string]string{"mathx.go": "package mathx\n\nfunc Add(a, b int) int { return a + b }\n"})
	return proxy
}

// setup.registries.go is the module proxy setup uses: no GOPROXY in the
// policy's commands, and its host in no allow_hosts.
func TestSetupUsesTheServersGoRegistry(t *testing.T) {
	t.Parallel()
	proxy := newMathProxy(t)
	s := registrySetup(t, proxy, fmt.Sprintf("setup:\n  allow_network: true\n  registries:\n    go: {url: %q, sumdb: \"off\"}\n", proxy.URL),
		`test "$GOPROXY" = "`+proxy.URL+`" && test "$GOSUMDB" = off`)
	if err := s.Run(t.Context()); err != nil {
		t.Fatalf("setup: %v", describe(err))
	}
	if proxy.Requests.Load() == 0 {
		t.Error("setup never asked the operator's module proxy")
	}
}

func describe(err error) string {
	if sf, ok := errors.AsType[*change.SetupFailure](err); ok {
		return sf.Error() + ":\n" + sf.Output
	}
	return err.Error()
}

// A module proxy behind TLS from the operator's own CA: setup fails
// without the CA and succeeds with it (the bundle setup.ca_file makes).
func TestSetupTrustsTheRegistrysCA(t *testing.T) {
	t.Parallel()
	proxy := newMathProxy(t)
	ca := operatorCA(t)
	url, requests := proxy.serveTLS(t, ca, "")
	yaml := fmt.Sprintf("setup:\n  allow_network: true\n  registries:\n    go: {url: %q, sumdb: \"off\"}\n", url)
	s := registrySetup(t, proxy, yaml)
	err := s.Run(t.Context())
	if err == nil || !strings.Contains(describe(err), "certificate") {
		t.Errorf("without the CA: %v; want a certificate error", err)
	}
	s.CABundle = caBundle(t, ca)
	if err := s.Run(t.Context()); err != nil {
		t.Fatalf("with the CA: %v", describe(err))
	}
	if requests.Load() == 0 {
		t.Error("the module proxy answered nothing")
	}
}

// operatorCA is the CA of the operator's network, which signed the
// registry's certificate.
func operatorCA(t *testing.T) *egress.Authority {
	t.Helper()
	ca, err := egress.NewAuthority("operator CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// caBundle is the bundle of ca and the host's roots, as setup.ca_file's.
func caBundle(t *testing.T, ca *egress.Authority) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(path, append(ca.CertPEM(), docker.SystemRoots()...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A private module proxy: its credentials are in a file of the worker's
// (or, named by variable, in the secrets the caller hands the setup), and
// the egress proxy adds them; nothing in the setup container (its
// environment, its processes' arguments and environments, $HOME, the
// tree) nor what setup reports holds them. Without them, setup fails
// with the registry's 401.
func TestPrivateRegistryCredentialsStayOutOfTheSandbox(t *testing.T) {
	t.Parallel()
	proxy := newMathProxy(t)
	ca := operatorCA(t)
	const user, password = "ci-reader", "pw-7f3a9c1e"
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	url, requests := proxy.serveTLS(t, ca, auth)
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "goproxy"), []byte(user+":"+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	registry := fmt.Sprintf("setup:\n  allow_network: true\n  registries:\n    go:\n      url: %q\n      sumdb: \"off\"\n", url)
	// What the container holds, dumped into the tree for the test to read.
	dump := `{ env; for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; tr '\0' '\n' < $p/environ; done; find "$HOME" /workspace -type f ! -name dump.txt -exec cat {} +; } > /workspace/dump.txt 2>/dev/null; true`

	var progress []string
	s := registrySetup(t, proxy, registry+fmt.Sprintf("      credentials: {file: %s}\n", filepath.Join(secrets, "goproxy")), dump)
	s.CABundle = caBundle(t, ca)
	s.Progress = func(line string) { progress = append(progress, line) }
	if err := s.Run(t.Context()); err != nil {
		t.Fatalf("setup with the worker's credentials: %v", describe(err))
	}
	if requests.Load() == 0 {
		t.Fatal("the private module proxy answered nothing")
	}
	held := []string{password, base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
	contents, err := os.ReadFile(filepath.Join(s.Spec.WorkTree, "dump.txt"))
	if err != nil || !strings.Contains(string(contents), "GOPROXY="+url) {
		t.Fatalf("the container's dump (%v) lacks its own environment:\n%.2000s", err, contents)
	}
	filepath.WalkDir(s.Spec.WorkTree, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				contents = append(contents, b...)
			}
		}
		return nil
	})
	contents = append(contents, strings.Join(progress, "\n")...)
	for _, secret := range held {
		if strings.Contains(string(contents), secret) {
			t.Errorf("the setup container or its report holds the credential %q", secret)
		}
	}

	// Credentials named by variable come from the secrets the caller
	// hands the setup, as a worker hands down its environment.
	byEnv := registrySetup(t, proxy, registry+"      credentials: {env: GOPROXY_AUTH}\n")
	byEnv.CABundle = s.CABundle
	byEnv.Secrets = func(name string) string { return map[string]string{"GOPROXY_AUTH": user + ":" + password}[name] }
	if err := byEnv.Run(t.Context()); err != nil {
		t.Errorf("setup with the credentials in the secrets it was handed: %v", describe(err))
	}

	without := registrySetup(t, proxy, registry)
	without.CABundle = s.CABundle
	err = without.Run(t.Context())
	if err == nil || !strings.Contains(describe(err), "401") {
		t.Errorf("setup without the credentials: %v; want the registry's 401", err)
	}
}
